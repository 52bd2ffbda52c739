import Foundation
import Testing

/// What `nalcast consume` keeps when its input stream ends. A peer that closes cleanly ends
/// the stream as a file ends: every access unit is written, the last one too, also when
/// nothing (no AUD, no end-of-stream NAL unit) marks where it ends. A connection reset in
/// the middle of an access unit loses exactly that access unit.
///
/// "Byte-identical" is checked against what the consumer writes: every output starts at an
/// IDR (the entry gate drops what comes before), and where that IDR's access unit does not
/// carry its SPS and PPS the consumer puts the ones it saw earlier in front
/// (`AccessUnit.nalUnitsForEntry`), which would add bytes. In every input here the first
/// IDR access unit carries both, so nothing is added: each output is the input from its
/// first IDR access unit on (the whole input, but for the one that joins mid-GOP).
@Suite(.serialized) struct StreamEndTests {
    static let inputs = ConsumeCommandTests.fixtures + ["nalcast without AUD", "nalcast without AUD and SEI", "nalcast without AUD, joined mid-GOP"]

    /// The input named: a conformance fixture, or `nalcast produce` output (30 frames of the
    /// test pattern, an IDR every 15, two slices a picture) with NAL units taken out, so
    /// that slices or SEIs alone tell where access units begin; "joined mid-GOP" starts at
    /// its fifth access unit, so the output starts at the second IDR.
    static func stream(_ name: String) throws -> [UInt8] {
        if name.hasSuffix("joined mid-GOP") {
            let whole = try stream("nalcast without AUD")
            return Array(whole[try accessUnits(whole).units[4].offset...])
        }
        guard name.hasPrefix("nalcast") else { return [UInt8](try Data(contentsOf: Run.fixtures.appendingPathComponent(name))) }
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("produced.h264").path
        let r = try Run.nalcast(["produce", "--source", "testsrc", "--frames", "30", "--size", "320x240", "--no-realtime",
                                 "--keyint", "500ms", "--threads", "2", "-o", path, "-q"], timeout: 60)
        guard r.status == 0 else { throw POSIXError(.EIO) }
        let produced = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        return removingNALUnits(ofTypes: name.hasSuffix("SEI") ? [9, 6] : [9], from: produced)
    }

    /// `bytes` less every NAL unit of the given types (start code included).
    static func removingNALUnits(ofTypes types: Set<UInt8>, from bytes: [UInt8]) -> [UInt8] {
        // Start code positions (the first zero of `00 00 01`, or of `00 00 00 01`).
        var starts: [Int] = []
        var i = 0
        while i + 3 < bytes.count {
            if bytes[i] == 0 && bytes[i + 1] == 0 && bytes[i + 2] == 1 {
                starts.append(i > 0 && bytes[i - 1] == 0 ? i - 1 : i)
                i += 3
            } else {
                i += 1
            }
        }
        var out = Array(bytes[..<(starts.first ?? bytes.count)])
        for (n, start) in starts.enumerated() {
            let end = n + 1 < starts.count ? starts[n + 1] : bytes.count
            let header = bytes[start] == 0 && bytes[start + 2] == 0 ? start + 4 : start + 3
            if !types.contains(bytes[header] & 0x1f) { out += bytes[start..<end] }
        }
        return out
    }

    /// Each access unit's offset and size in `bytes`, from `nalcast inspect --json`, and
    /// the offset of the first IDR access unit that carries its SPS and PPS.
    static func accessUnits(_ bytes: [UInt8]) throws -> (units: [(offset: Int, size: Int)], entry: Int) {
        let json = try inspect(Data(bytes))
        let units = json["units"] as? [[String: Any]] ?? []
        var out: [(offset: Int, size: Int)] = []
        var offset = 0
        var entry: Int? = nil
        for unit in units {
            let size = unit["bytes"] as? Int ?? 0
            let types = unit["nalTypes"] as? [Int] ?? []
            if entry == nil && unit["idr"] as? Bool == true && types.contains(7) && types.contains(8) { entry = offset }
            out.append((offset, size))
            offset += size
        }
        #expect(offset == bytes.count, "inspect accounts for every byte")
        return (out, entry ?? bytes.count)
    }

    /// Consumes `server`'s stream into a file, segments and a forward target at once; returns
    /// the three outputs (segments concatenated) and consume's stderr. With `resetWhen`, once
    /// the file holds that many bytes (the consumer has read that far), `reset` is called.
    static func consume(_ server: String, expectedStatus: Int32, resetWhen written: Int? = nil, reset: () -> Void = {}) throws -> (file: [UInt8], segments: [UInt8], forwarded: [UInt8], stderr: String) {
        let target = try ForwardTarget()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out.h264")
        let segs = dir.appendingPathComponent("segs")
        let consumer = try Background(Run.nalcast, ["consume", "--from", server, "--reconnect-timeout", "0", "-o", out.path,
                                                    "--segments", segs.path, "--segment-max-bytes", "1", "--segment-name", "s-%n.h264",
                                                    "--forward", "tcp://127.0.0.1:\(target.port)"])
        if let written {
            let deadline = Date().addingTimeInterval(30)
            var size = 0
            while size < written && Date() < deadline {
                usleep(5_000)
                size = (try? FileManager.default.attributesOfItem(atPath: out.path)[.size] as? Int) ?? 0
            }
            #expect(size == written, "the consumer wrote \(size) bytes before the reset: \(consumer.stderr)")
            reset()
        }
        let status = consumer.wait(timeout: 60)
        let stderr = consumer.stderr
        #expect(status == expectedStatus, "\(stderr)")
        var segments: [UInt8] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: segs.path).sorted() {
            #expect(name.hasSuffix(".h264"), "\(name) left unfinished")
            segments += [UInt8](try Data(contentsOf: segs.appendingPathComponent(name)))
        }
        let forwarded = target.received()
        return ([UInt8](try Data(contentsOf: out)), segments, forwarded, stderr)
    }

    /// Served in odd chunk sizes and closed cleanly: the file, the segments and the forward
    /// target get the input byte for byte, its last access unit included.
    @Test(arguments: inputs)
    func cleanCloseKeepsEveryAccessUnitToTheLast(input: String) throws {
        let bytes = try Self.stream(input)
        let (units, entry) = try Self.accessUnits(bytes)
        #expect((entry == 0) == !input.hasSuffix("mid-GOP"), "\(input): first IDR with its parameter sets at \(entry)")
        let expected = Array(bytes[entry...])
        // The ending must not mark itself: no end-of-stream NAL unit to close the last one.
        let endsMarked = endsWithEndOfStream(bytes)
        let server = try TestStreamServer(data: bytes)
        let got = try Self.consume(server.endpoint, expectedStatus: exitAfterCleanClose(of: bytes))
        #expect(got.file == expected, "\(input): -o has \(got.file.count) of \(expected.count) bytes (\(units.count) access units, end marked: \(endsMarked))")
        #expect(got.segments == expected, "\(input): segments have \(got.segments.count) of \(expected.count) bytes")
        #expect(got.forwarded == expected, "\(input): forwarded \(got.forwarded.count) of \(expected.count) bytes")
        #expect(got.stderr.contains("closed by peer"), "\(got.stderr)")
        #expect(!got.stderr.contains("unfinished"), "\(got.stderr)")
    }

    /// Reset (SO_LINGER 0) halfway through an access unit, well past its first NAL unit's
    /// headers: every access unit before it is written, that one is not, and the consumer
    /// says how many bytes of it it dropped.
    @Test(arguments: ["FREXT01_JVC_D.264", "HCAFF1_HHI.264", "FRExt3_Panasonic.avc", "nalcast without AUD", "nalcast without AUD and SEI"])
    func resetMidAccessUnitLosesExactlyThatOne(input: String) throws {
        let bytes = try Self.stream(input)
        let (units, entry) = try Self.accessUnits(bytes)
        let victim = units[units.count - 3]
        let cut = victim.offset + victim.size / 2
        let server = try ResettingServer(data: Array(bytes[..<cut]))
        let expected = Array(bytes[entry..<victim.offset])
        // Reset once the consumer has written everything before the victim: it has read
        // that far, so the reset cannot overtake the connection's start.
        // A reset is a lost upstream: exit 69 once --reconnect-timeout (0) has passed.
        let got = try Self.consume(server.endpoint, expectedStatus: 69, resetWhen: expected.count) { server.reset() }
        #expect(got.file == expected, "\(input): -o has \(got.file.count) bytes, expected \(expected.count)")
        #expect(got.segments == expected, "\(input): segments have \(got.segments.count) bytes, expected \(expected.count)")
        #expect(got.forwarded == expected, "\(input): forwarded \(got.forwarded.count) bytes, expected \(expected.count)")
        #expect(got.stderr.contains("an unfinished access unit dropped (\(cut - victim.offset) bytes)"), "\(got.stderr)")
        #expect(server.sentAll, "the server sent every byte before the reset")
    }
}

/// A forward target on 127.0.0.1: accepts one connection and reads it to its end.
final class ForwardTarget: @unchecked Sendable {
    // `fd` and `port` are set before the thread starts and never change; `data` is written
    // by the thread before it signals `done` and read only after waiting for it.
    let fd: Int32
    let port: Int
    private var data: [UInt8] = []
    private let done = DispatchSemaphore(value: 0)

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard r == 0, listen(fd, 4) == 0 else { throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        port = Int(UInt16(bigEndian: addr.sin_port))
        Thread { [self] in
            defer { self.done.signal() }
            // Give up after a minute rather than hang the suite.
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 60_000) > 0 else { return }
            let client = accept(fd, nil, nil)
            guard client >= 0 else { return }
            defer { close(client) }
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                var cfd = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
                guard poll(&cfd, 1, 60_000) > 0 else { return }
                let n = read(client, &buffer, buffer.count)
                if n <= 0 { return }
                self.data += buffer[0..<n]
            }
        }.start()
    }

    /// Everything read, once the connection ended.
    func received() -> [UInt8] {
        done.wait()
        return data
    }

    deinit { close(fd) }
}

/// A one-shot TCP server that writes `data` in odd chunk sizes, waits until the reader has
/// acknowledged every byte and `reset()` was called, then resets the connection
/// (SO_LINGER 0: RST, no FIN).
final class ResettingServer: @unchecked Sendable {
    // `fd` and `port` are set before the thread starts and never change; `delivered` is
    // guarded by `lock`.
    let fd: Int32
    let port: UInt16
    var endpoint: String { "tcp://127.0.0.1:\(port)" }
    private let lock = NSLock()
    private var delivered = false
    private let go = DispatchSemaphore(value: 0)

    init(data: [UInt8], chunkSizes: [Int] = [1, 7, 13, 100, 1021, 4099]) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard r == 0, listen(fd, 4) == 0 else { throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        port = UInt16(bigEndian: addr.sin_port)
        Thread { [self] in
            let client = accept(fd, nil, nil)
            guard client >= 0 else { return }
            var offset = 0
            var k = 0
            while offset < data.count {
                let n = min(chunkSizes[k % chunkSizes.count], data.count - offset)
                k += 1
                let sent = data[offset..<(offset + n)].withUnsafeBytes { send(client, $0.baseAddress, n, Int32(MSG_NOSIGNAL)) }
                if sent <= 0 { break }
                offset += sent
            }
            // A reset throws away what is still unsent or unacknowledged: wait until the
            // send queue is empty (SIOCOUTQ, 0x5411), i.e. the reader's kernel has it all.
            var queued: Int32 = 1
            let deadline = Date().addingTimeInterval(30)
            while queued > 0 && Date() < deadline {
                _ = withUnsafeMutablePointer(to: &queued) { ioctl(client, 0x5411, $0) }
                if queued > 0 { usleep(1_000) }
            }
            self.lock.lock()
            self.delivered = offset == data.count && queued == 0
            self.lock.unlock()
            _ = self.go.wait(timeout: .now() + 60)
            var linger = linger(l_onoff: 1, l_linger: 0)
            setsockopt(client, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
            close(client)
        }.start()
    }

    /// Lets the connection be reset (after every byte was acknowledged).
    func reset() { go.signal() }

    /// True once every byte was sent and acknowledged before the reset.
    var sentAll: Bool { lock.lock(); defer { lock.unlock() }; return delivered }

    deinit { close(fd) }
}
