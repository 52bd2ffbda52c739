import Foundation
import Testing

/// How a reconnecting consumer judges the end of its input: by the last connection only.
@Suite struct StreamEndReconnectTests {
    /// The first connection ends its stream with an end-of-stream NAL unit; the consumer
    /// reconnects, the second connection closes without sending a byte, and nothing comes
    /// back: that is a lost upstream (69), not the finished stream the first one was.
    @Test func emptyConnectionAfterAnEndedStreamIsALoss() throws {
        let stream = try Streams.ffmpeg(frames: 30, keyint: 10) + [0, 0, 0, 1, 0x0b]
        let server = try SequenceServer(payloads: [stream, []])
        let r = try Run.nalcast(["consume", "--from", server.endpoint, "--reconnect-timeout", "1s", "-o", "/dev/null"], timeout: 60)
        #expect(server.accepted == 2, "the consumer reconnected once: \(r.stderr)")
        #expect(r.status == 69, "exit \(r.status): \(r.stderr)")
        #expect(r.stderr.contains("not back within --reconnect-timeout"), "\(r.stderr)")
    }

    /// With `--reconnect-timeout 0` a connection's end is the run's end: the consumer does
    /// not say it is reconnecting (nor emit `reconnecting`) before saying it is not.
    @Test func noReconnectingWhenTheTimeoutIsZero() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let events = dir.appendingPathComponent("events.jsonl")
        let server = try TestStreamServer(data: try Streams.ffmpeg(frames: 30, keyint: 10) + [0, 0, 0, 1, 0x0b])
        let r = try Run.nalcast(["consume", "--from", server.endpoint, "--reconnect-timeout", "0", "-o", "/dev/null", "--events", events.path], timeout: 60)
        #expect(r.status == 0, "exit \(r.status): \(r.stderr)")
        #expect(r.stderr.contains("disconnected from \(server.endpoint) (closed by peer)\n"), "\(r.stderr)")
        #expect(!r.stderr.contains("reconnecting;") && !r.stderr.contains("; reconnecting"), "\(r.stderr)")
        let names = eventLines(events).compactMap { $0["event"] as? String }
        #expect(names.contains("disconnected") && !names.contains("reconnecting"), "\(names)")
    }
}

extension StreamEndReconnectTests {
    /// A peer that keeps its connection open and sends nothing more is a stalled input: after
    /// `--stall-timeout` it is said (a line, a `stalled` event, the metric's count in the
    /// event log), dropped and connected again; what came before it is kept.
    @Test func aPeerThatGoesQuietIsAStalledInputAndIsConnectedAgain() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let events = dir.appendingPathComponent("events.jsonl")
        let out = dir.appendingPathComponent("out.h264")
        let stream = try Streams.ffmpeg(frames: 30, keyint: 10)
        let server = try SequenceServer(payloads: [stream, stream], keepsOpen: true)
        let r = try Run.nalcast(["consume", "--from", server.endpoint, "--stall-timeout", "1s", "--reconnect-timeout", "1s",
                                 "-o", out.path, "--events", events.path], timeout: 60)
        #expect(server.accepted == 2, "connected again after the first stall: \(r.stderr)")
        #expect(r.status == 69, "exit \(r.status): \(r.stderr)")
        #expect(r.stderr.contains("\(server.endpoint) stalled: no data for 1."), "\(r.stderr)")
        #expect(r.stderr.contains("disconnected from \(server.endpoint) (stalled"), "\(r.stderr)")
        let names = eventLines(events).compactMap { $0["event"] as? String }
        #expect(names.filter { $0 == "stalled" }.count == 2, "\(names)")
        // Each connection's last access unit was still open when it stalled: 29 of 30 each.
        let decoded = try ffmpegDecode(try Data(contentsOf: out))
        #expect(decoded.errors.isEmpty, "\(decoded.errors)")
        #expect(decoded.frames >= 58, "\(decoded.frames) frames")
    }
}

/// A TCP server on 127.0.0.1 that answers its n-th connection with `payloads[n]`, then closes
/// it cleanly (or, `keepsOpen`, holds it open and sends nothing more, as a peer that hangs);
/// past the last payload it stops listening.
final class SequenceServer: @unchecked Sendable {
    // `fd` and `port` are set before the thread starts and never change; `count` is guarded
    // by `lock`.
    let fd: Int32
    let port: UInt16
    private let lock = NSLock()
    private var count = 0
    private var held: [Int32] = []
    var endpoint: String { "tcp://127.0.0.1:\(port)" }
    /// Connections accepted so far.
    var accepted: Int { lock.withLock { count } }

    init(payloads: [[UInt8]], keepsOpen: Bool = false) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard r == 0, listen(fd, 4) == 0 else { throw POSIXError(.EADDRINUSE) }
        var bound = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        port = UInt16(bigEndian: bound.sin_port)
        Thread { [self] in
            for payload in payloads {
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                lock.withLock { count += 1 }
                var offset = 0
                while offset < payload.count {
                    let sent = payload[offset...].withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    if sent <= 0 { break }
                    offset += sent
                }
                if keepsOpen { lock.withLock { held.append(client) } } else { close(client) }
            }
            // No more connections: further attempts are refused.
            shutdown(fd, Int32(SHUT_RDWR))
        }.start()
    }

    deinit {
        close(fd)
        for client in held { close(client) }
    }
}
