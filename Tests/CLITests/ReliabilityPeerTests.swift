import Foundation
import TestSupport
import Testing

/// Peers that misbehave: a forward target that stalls and drops, clients that send bytes to
/// the stream port or hold the metrics port open.
@Suite(.serialized) struct ReliabilityPeerTests {
    /// A forward target on 127.0.0.1 that, over and over, accepts a connection, reads for a
    /// while, stops reading (stalls) for a while, then drops it (RST).
    final class StallingTarget: @unchecked Sendable {
        // `fd` and `port` are set before the thread starts and never change; `stop` and
        // `accepted` are guarded by `lock`.
        let fd: Int32
        let port: Int
        private let lock = NSLock()
        private var stop = false
        private var accepted = 0
        private let done = DispatchSemaphore(value: 0)

        init(read: useconds_t = 300_000, stall: useconds_t = 700_000) throws {
            let (listener, port) = try loopbackListener()
            fd = listener
            self.port = Int(port)
            Thread { [self] in
                var buffer = [UInt8](repeating: 0, count: 65536)
                while !self.stopped {
                    var pfd = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
                    guard poll(&pfd, 1, 100) > 0 else { continue }
                    let client = accept(listener, nil, nil)
                    guard client >= 0 else { continue }
                    self.lock.lock(); self.accepted += 1; self.lock.unlock()
                    let until = Moment.now.addingTimeInterval(Double(read) / 1e6)
                    while Moment.now < until {
                        var cfd = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
                        if poll(&cfd, 1, 20) > 0 && Glibc.read(client, &buffer, buffer.count) <= 0 { break }
                    }
                    usleep(stall)
                    var linger = linger(l_onoff: 1, l_linger: 0)
                    setsockopt(client, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
                    close(client)
                }
                self.done.signal()
            }.start()
        }

        private var stopped: Bool { lock.lock(); defer { lock.unlock() }; return stop }
        var connections: Int { lock.lock(); defer { lock.unlock() }; return accepted }

        func finish() {
            lock.lock(); stop = true; lock.unlock()
            done.wait()
            close(fd)
        }
    }

    /// The consumer forwards to a target that stalls and drops every second; its file output
    /// and its segments get every access unit, in order, and decode.
    @Test func stallingForwardTargetLeavesTheOtherSinksWhole() throws {
        let target = try StallingTarget()
        let metricsPort = try freePort()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let producerEvents = dir.appendingPathComponent("producer.jsonl")
        let (producer, endpoint) = try ServeTests.producer(["--keyint", "500ms", "--events", producerEvents.path])
        let out = dir.appendingPathComponent("out.h264")
        let segs = dir.appendingPathComponent("segs").path
        let eventsURL = dir.appendingPathComponent("events.jsonl")
        let consumer = try Background(Run.nalcast, ["consume", "--from", endpoint, "-o", out.path, "--segments", segs, "--segment-duration", "2s",
                                                    "--forward", "tcp://127.0.0.1:\(target.port)", "--events", eventsURL.path,
                                                    "--metrics", "tcp://127.0.0.1:\(metricsPort)"])
        #expect(consumer.waitFor("connected to", timeout: 10), "\(consumer.stderr)")
        usleep(6_000_000)
        producer.signal(SIGTERM)
        #expect(producer.wait() == 0)
        #expect(consumer.waitFor("disconnected", timeout: 10))
        usleep(300_000)
        let received = try ReliabilityFaultTests.metric(metricsPort, "nalcast_consumer_access_units_total")
        consumer.signal(SIGTERM)
        #expect(consumer.wait() == 0, "\(consumer.stderr)")
        target.finish()
        #expect(target.connections >= 3, "the forward sink reconnected \(target.connections) times")
        let events = eventLines(eventsURL)
        #expect(events.filter { $0["event"] as? String == "forward-disconnected" }.count >= 2)
        #expect(!events.contains { $0["event"] as? String == "skipped" && $0["sink"] as? String != "forward" }, "a sink other than forward skipped")

        let stream = try Data(contentsOf: out)
        let s = try ServeTests.sequences(stream)
        // The file got every access unit the consumer received; and when the producer never had
        // to skip the consumer (a loaded machine can make it lag), it has no gap but the
        // producer's own capture drops.
        #expect(Double(try inspect(stream)["accessUnits"] as? Int ?? -1) == received, "file \(s.count), received \(received ?? -1)")
        #expect(s.count >= 150, "the file sink got \(s.count) access units")
        let producerSkipped = eventLines(producerEvents).contains { $0["event"] as? String == "reader-skipped" }
        let ownDrops = try ServeTests.framesDropped(producerEvents)
        #expect(producerSkipped || ServeTests.gaps(s) <= ownDrops, "the file has gaps the producer did not make")
        #expect(try ffmpegDecode(stream).errors.isEmpty)
        let names = try FileManager.default.contentsOfDirectory(atPath: segs).sorted()
        #expect(names.count >= 3 && !names.contains { $0.hasSuffix(".part") }, "\(names)")
        var inSegments = 0
        for name in names {
            try ConsumeProducerTests.checkSegment(segs + "/" + name)
            inSegments += try inspect(segs + "/" + name).accessUnits
        }
        #expect(inSegments == s.count, "segments hold \(inSegments), the file \(s.count)")
    }

    /// Connects to 127.0.0.1:`port`; returns the descriptor.
    static func connectTo(_ port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = UInt16(port).bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard r == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        return fd
    }

    /// Sends up to `bytes` without blocking for long (the peer may stop reading or close);
    /// reads whatever comes back until the peer closes or `timeout` passes. Returns what was
    /// sent, what was received, and whether the peer closed.
    static func converse(_ fd: Int32, send bytes: [UInt8], timeout: Double) -> (sent: Int, reply: [UInt8], closed: Bool) {
        var sent = 0
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = Moment.now.addingTimeInterval(timeout)
        while Moment.now < deadline {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN) | (sent < bytes.count ? Int16(POLLOUT) : 0), revents: 0)
            guard poll(&pfd, 1, 50) > 0 else { continue }
            if pfd.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                let n = read(fd, &buffer, buffer.count)
                if n <= 0 { return (sent, reply, true) }
                reply += buffer[0..<n]
            } else if pfd.revents & Int16(POLLOUT) != 0 {
                let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, min($0.count, 65536), Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
                if n < 0 && errno != EAGAIN { return (sent, reply, true) }
                if n > 0 { sent += n }
            }
        }
        return (sent, reply, false)
    }

    /// Bytes sent to the stream port close that connection (past a small allowance); a
    /// metrics client that sends nothing is closed after the header timeout; one that sends
    /// 1 MB of headers gets 431 and is closed; other methods get 405. Meanwhile a reader gets
    /// every frame and /healthz answers.
    @Test func hostileClientsAreClosedAndNobodyElseNotices() throws {
        let metricsPort = try freePort()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let eventsURL = dir.appendingPathComponent("events.jsonl")
        let (producer, endpoint) = try ServeTests.producer(["--metrics", "tcp://127.0.0.1:\(metricsPort)", "--events", eventsURL.path])
        let reader = try StreamReaderClient(endpoint)
        let streamPort = Int(endpoint.split(separator: ":").last!)!
        var rng = SystemRandomNumberGenerator()
        let garbage = (0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &rng) }

        // Bytes to the stream port.
        let talker = try Self.connectTo(streamPort)
        let talked = Self.converse(talker, send: garbage, timeout: 10)
        close(talker)
        #expect(talked.closed, "a stream client that sent \(talked.sent) bytes was not closed")

        // The metrics port: nothing at all (closed after the 5 s header timeout), then 1 MB of
        // headers, then a method other than GET.
        let silent = try Self.connectTo(metricsPort)
        let heads = try Self.connectTo(metricsPort)
        let flood = Self.converse(heads, send: Array("GET /metrics HTTP/1.1\r\n".utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: 1 << 20), timeout: 10)
        close(heads)
        #expect(flood.closed, "a metrics client sending 1 MB of headers was not closed")
        #expect(flood.reply.isEmpty || String(decoding: flood.reply, as: UTF8.self).hasPrefix("HTTP/1.1 431"),
                "\(String(decoding: flood.reply.prefix(40), as: UTF8.self))")
        let quiet = Self.converse(silent, send: [], timeout: 10)
        close(silent)
        #expect(quiet.closed && quiet.reply.isEmpty, "a silent metrics client was not closed")
        let post = try Run.program("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "http://127.0.0.1:\(metricsPort)/metrics"])
        #expect(post.text == "405")

        let health = try Run.program("curl", ["-s", "--max-time", "5", "http://127.0.0.1:\(metricsPort)/healthz"])
        #expect(health.text.hasPrefix("ok"))
        #expect(try ReliabilityFaultTests.metric(metricsPort, "nalcast_readers") == 1)
        let s = try ServeTests.sequences(reader.finish())
        producer.signal(SIGTERM)
        #expect(producer.wait() == 0)
        let ownDrops = try ServeTests.framesDropped(eventsURL)
        #expect(s.count > 100 && ServeTests.gaps(s) <= ownDrops, "the reader got \(s.count) access units, missed \(ServeTests.gaps(s)), the producer dropped \(ownDrops)")
    }
}
