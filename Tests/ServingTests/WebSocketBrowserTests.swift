import IO
import Foundation
import TestSupport
import H264
import Media
import Serving
import Testing

/// The WebSocket pieces against a real browser: headless Chromium loads a page from an
/// `HTTPServer` whose `/ws` route (a `.takeOver`, as the page's server will have) runs
/// `WebSocketHandshake`, sends `AccessUnitMessage` frames and answers through
/// `WebSocketReader`. The page reports what it saw with `POST /report`. A second server on
/// another port serves the same page, whose socket to the first one is a foreign Origin.
@Suite(.serialized) struct WebSocketBrowserTests {
    static let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    /// What the loop thread records: the reports the page posted and what the `/ws`
    /// connections went through. The test thread reads it.
    final class Record: @unchecked Sendable {  // every field is read and written under `lock`
        private let lock = NSLock()
        private var _reports: [String] = []
        private var _events: [String] = []
        func report(_ text: String) { lock.withLock { _reports.append(text) } }
        func event(_ text: String) { lock.withLock { _events.append(text) } }
        var reports: [String] { lock.withLock { _reports } }
        var events: [String] { lock.withLock { _events } }
    }

    /// The access units sent on each socket: small, 300 bytes (16-bit length) and 70 000
    /// bytes (64-bit length).
    static let units: [(AccessUnit, AccessUnitMessage)] = [(0, 10), (1, 300), (2, 70_000)].map { index, size in
        let nal = NALUnit(escapedBody: [index == 0 ? 0x65 : 0x41] + [UInt8](repeating: 0x5a, count: size))
        let unit = AccessUnit(codec: H264Codec(), nalUnits: [NALUnit(escapedBody: [0x09, 0x10]), nal], isIDR: index == 0, resolution: nil, timestamp: nil)
        let message = AccessUnitMessage(isKeyframe: index == 0, captureTimeMicros: 1_700_000_000_000_000 + UInt64(index), pts90k: UInt64(index) * 3000)
        return (unit, message)
    }

    /// The page: two sockets to `wsHost`, each reading the three messages; the first then
    /// sends text (the viewer must not: 1003), the second closes with 4001 (echoed). Then it
    /// reports and, when `next` is set, goes there.
    static func page(wsHost: String?, next: String?) -> String {
        """
        <!doctype html><title>nalcast websocket test</title><script>
        const wsHost = \(wsHost.map { "'\($0)'" } ?? "location.host");
        function run(name, act) {
          return new Promise(resolve => {
            const got = [];
            let ws;
            try { ws = new WebSocket('ws://' + wsHost + '/ws?' + name); } catch (e) { resolve({name, error: String(e)}); return; }
            ws.binaryType = 'arraybuffer';
            ws.onmessage = e => {
              const v = new DataView(e.data);
              got.push([v.getUint8(0), v.getUint8(1), String(v.getBigUint64(2)), String(v.getBigUint64(10)), e.data.byteLength,
                        v.getUint8(18), v.getUint8(19), v.getUint8(20), v.getUint8(21), v.getUint8(22), v.getUint8(e.data.byteLength - 1)]);
              if (got.length === 3) act(ws);
            };
            ws.onclose = e => resolve({name, got, code: e.code, clean: e.wasClean});
          });
        }
        (async () => {
          const talk = await run('talk', ws => ws.send('hello'));
          const close = await run('close', ws => ws.close(4001, 'done'));
          await fetch('/report', {method: 'POST', body: JSON.stringify({origin: location.origin, talk, close})});
          \(next.map { "location.href = '\($0)';" } ?? "")
        })();
        </script>
        """
    }

    /// A server with `/` (the page), `/report` and `/ws`.
    static func server(loop: EventLoop, record: Record, page: @escaping () -> String) throws -> HTTPServer {
        var routes = HTTPRoutes()
        routes.add("GET", "/") { _ in HTTPResponse(status: 200, contentType: "text/html; charset=utf-8", body: page()) }
        routes.add("POST", "/report", maxBody: 1 << 16) { request in
            record.report(String(decoding: request.body, as: UTF8.self))
            return HTTPResponse(status: 200)
        }
        var sockets: [ObjectIdentifier: Connection] = [:]
        routes.add("GET", "/ws", handler: .takeOver { request, connection, rest in
            let id = ObjectIdentifier(connection)
            sockets[id] = connection
            connection.onClose = { _ in sockets[id] = nil }
            let handshake: WebSocketHandshake
            switch WebSocketHandshake.validate(request) {
            case .failure(let failure):
                record.event("\(request.query ?? "") refused \(failure.status) origin=\(request.header("origin") ?? "-")")
                connection.write(chunks: [failure.response.bytes[...]])
                connection.closeAfterFlush()
                return
            case .success(let accepted): handshake = accepted
            }
            record.event("\(request.query ?? "") accepted origin=\(request.header("origin") ?? "-")")
            connection.write(chunks: [handshake.response[...]])
            for (unit, message) in units { connection.write(chunks: message.frame(unit.nalUnits)) }
            var reader = WebSocketReader()
            func handle(_ events: [WebSocketEvent]) {
                for event in events {
                    switch event {
                    case .send(let bytes): connection.write(chunks: [bytes[...]])
                    case .message: record.event("message delivered")
                    case .close(let code, let reply, let failure):
                        record.event("\(request.query ?? "") close code=\(code.map(String.init) ?? "-") failure=\(failure.map { "\($0)" } ?? "-")")
                        connection.write(chunks: [reply[...]])
                        connection.closeAfterFlush()
                    }
                }
            }
            connection.onData = { bytes in handle(reader.push(bytes)) }
            handle(reader.push(rest))
            connection.start()
        })
        return try HTTPServer(loop: loop, endpoint: .tcp(host: "127.0.0.1", port: 0), routes: routes)
    }

    static func port(_ endpoint: Endpoint) -> Int {
        guard case .tcp(_, let port) = endpoint else { return 0 }
        return Int(port)
    }

    @Test(.enabled(if: chromium != nil, "needs Chromium (headless)"))
    func chromiumTalksToTheWebSocketPieces() throws {
        let loop = EventLoop()
        let record = Record()
        // Filled in once both ports are known; read on the loop thread when the page is asked for.
        let pages = Pages()
        let home = try Self.server(loop: loop, record: record) { pages.home }
        let foreign = try Self.server(loop: loop, record: record) { pages.foreign }
        let homeHost = "127.0.0.1:\(Self.port(home.boundEndpoint))"
        let foreignHost = "127.0.0.1:\(Self.port(foreign.boundEndpoint))"
        pages.set(home: Self.page(wsHost: nil, next: "http://\(foreignHost)/"), foreign: Self.page(wsHost: homeHost, next: nil))
        home.start()
        foreign.start()
        loop.start()
        defer {
            loop.stop()
            loop.join()
            home.close()
            foreign.close()
        }

        let profile = FileManager.default.temporaryDirectory.appendingPathComponent("nalcast-chromium-\(getpid())-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: profile) }
        let browser = Process()
        browser.executableURL = URL(fileURLWithPath: Self.chromium!)
        browser.arguments = [
            "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir=\(profile.path)", "http://\(homeHost)/",
        ]
        browser.standardOutput = FileHandle.nullDevice
        browser.standardError = FileHandle.nullDevice
        try browser.run()
        defer {
            browser.terminate()
            browser.waitUntilExit()
        }
        // Both pages report; a page that never does fails the test at the deadline.
        let deadline = Moment.now.addingTimeInterval(60)
        while record.reports.count < 2 && Moment.now < deadline && browser.isRunning { usleep(100_000) }
        let reports = record.reports
        try #require(reports.count == 2, "reports: \(reports), events: \(record.events)")

        // The page's own origin: three messages with their headers and bytes intact, then
        // 1003 for the text it sent, and its close 4001 echoed.
        let same = try #require(try JSONSerialization.jsonObject(with: Data(reports[0].utf8)) as? [String: Any])
        #expect(same["origin"] as? String == "http://\(homeHost)")
        let talk = try #require(same["talk"] as? [String: Any])
        let close = try #require(same["close"] as? [String: Any])
        for run in [talk, close] {
            let got = try #require(run["got"] as? [[Any]])
            #expect(got.count == 3)
            for (row, (unit, message)) in zip(got, Self.units) {
                let wire = unit.nalUnits.flatMap { Array($0.wire) }
                #expect(row[0] as? Int == 1)
                #expect(row[1] as? Int == (message.isKeyframe ? 3 : 2))
                #expect(row[2] as? String == String(message.captureTimeMicros!))
                #expect(row[3] as? String == String(message.pts90k))
                #expect(row[4] as? Int == 18 + wire.count)
                #expect(row[5...9].compactMap { $0 as? Int } == wire[0..<5].map(Int.init))
                #expect(row[10] as? Int == Int(wire.last!))
            }
        }
        #expect(talk["code"] as? Int == 1003)
        #expect(close["code"] as? Int == 4001)
        #expect(close["clean"] as? Bool == true)

        // Another origin: refused with 403 before any message; the browser sees 1006.
        let other = try #require(try JSONSerialization.jsonObject(with: Data(reports[1].utf8)) as? [String: Any])
        #expect(other["origin"] as? String == "http://\(foreignHost)")
        for name in ["talk", "close"] {
            let run = try #require(other[name] as? [String: Any])
            #expect((run["got"] as? [Any])?.isEmpty == true)
            #expect(run["code"] as? Int == 1006)
        }

        let events = record.events
        #expect(events.contains("talk accepted origin=http://\(homeHost)"))
        #expect(events.contains("talk close code=- failure=dataNotAccepted"))
        #expect(events.contains("close close code=4001 failure=-"))
        #expect(events.contains("talk refused 403 origin=http://\(foreignHost)"))
        #expect(!events.contains("message delivered"))
    }

    /// The two pages, set once the ports are known, read on the loop thread.
    final class Pages: @unchecked Sendable {  // every field is read and written under `lock`
        private let lock = NSLock()
        private var _home = ""
        private var _foreign = ""
        func set(home: String, foreign: String) { lock.withLock { (_home, _foreign) = (home, foreign) } }
        var home: String { lock.withLock { _home } }
        var foreign: String { lock.withLock { _foreign } }
    }
}
