import Foundation
import Testing

/// How `produce --web` ends its connections, seen from a raw client (Tests/Browser/ws_ends.py):
/// an end of stream after the last byte, never a TCP reset, even for a client that sent
/// bytes the server did not read. A reset makes the client drop what it had not read yet
/// (Chromium then reports a WebSocket's end as 1006, a lost connection, instead of the
/// server's close frame). The stream's end and a producer's stop in Chromium itself:
/// `RelaySourceTests.containerFileIsRelayedToSixteenReaders`,
/// `WebViewerTests.thePageSurvivesARestartAtAnotherSize`.
@Suite(.serialized) struct WebSocketEndTests {
    /// A refused viewer (503) and a refused TCP reader past `--max-readers`, a viewer closed
    /// for a protocol error (1002), and the stream's end (1001) at SIGINT: each sent 4 kB
    /// the server never read, and each sees the end of stream, no reset.
    @Test func everyEndIsAnEndOfStreamNotAReset() throws {
        let tcpPort = try freePort()
        let (producer, url) = try WebViewerTests.producer(["--listen", "tcp://127.0.0.1:\(tcpPort)", "--max-readers", "2"], size: "160x120")
        defer {
            producer.signal(SIGINT)
            producer.wait()
        }
        let port = String(url.split(separator: ":").last!.dropLast())
        let r = try Run.program("/usr/bin/python3", [PlaybackTests.browserTools.appendingPathComponent("ws_ends.py").path,
                                                     port, String(tcpPort), String(producer.process.processIdentifier)], timeout: 60)
        #expect(r.status == 0, "\(r.text) \(r.stderr)")
        let seen = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: [String: Any]], "\(r.text) \(r.stderr)")
        for end in ["refusedViewer", "refusedReader", "protocolError", "streamEnd"] {
            let what = seen[end] ?? [:]
            #expect(what["eof"] as? Bool == true && what["reset"] as? Bool == false, "\(end): \(what)")
        }
        #expect(seen["refusedViewer"]?["status"] as? String == "HTTP/1.1 503 Service Unavailable", "\(seen)")
        #expect(seen["protocolError"]?["code"] as? Int == 1002, "\(seen)")
        #expect(seen["streamEnd"]?["code"] as? Int == 1001, "\(seen)")
        #expect(producer.wait() == 0, "\(producer.stderr)")
    }
}
