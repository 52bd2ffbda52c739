import Clocks
import IO
import Output

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One RTMP connection that publishes a stream (RTMP specification 1.0; the commands as
/// FFmpeg and OBS send them): the plain handshake (C0/C1/C2), Set Chunk Size, then
/// connect, releaseStream, FCPublish, createStream and publish in AMF0, until the server
/// says `NetStream.Publish.Start`. Its messages are queued in `writer` and go out in one
/// gathered write per `flush`.
///
/// The socket is IO's, non-blocking; every wait is a `poll` bounded by a deadline (the
/// connect timeout while opening, the send timeout for each flush), so a server that stops
/// answering or reading costs the calling thread (a forward's own) at most that, and nothing
/// piles up here: what is queued is one batch. The server's messages are read while waiting
/// and once a second otherwise: its chunk size, its window (acknowledged as asked), pings
/// (answered), and an `onStatus` error, which ends the connection. One thread.
final class RTMPSession {
    /// The chunk size nalcast sends with: a picture of 64 KiB or less is one chunk.
    static let chunkSize = 65536
    private let socket: Socket
    var writer = RTMPChunkWriter()
    private var reader = RTMPChunkReader()
    /// Control messages to send (acknowledgements, ping answers), queued while a flush runs.
    private var replies: [(type: UInt8, payload: [UInt8])] = []
    private var received: UInt64 = 0
    private var acknowledged: UInt64 = 0
    private var window: UInt64 = 0
    private var nextService: UInt64 = 0
    /// The message stream createStream gave: audio, video and data go on it.
    private(set) var streamID: UInt32 = 0
    private let playpath: String

    /// Connects to `address` and publishes its stream key, all within `timeout` seconds.
    init(_ address: RTMPAddress, timeout: Double) throws(ForwardError) {
        let deadline = MonotonicClock.seconds + timeout
        do {
            socket = try Connector.connect(to: .tcp(host: address.host, port: address.port), timeout: timeout)
            try? socket.setOption(level: Int32(IPPROTO_TCP), name: TCP_NODELAY, value: 1)
        } catch {
            throw ForwardError("\(error)")
        }
        playpath = address.playpath
        do {
            try handshake(deadline)
            try publish(address, deadline)
        } catch {
            socket.close()
            throw error
        }
    }

    deinit { socket.close() }

    // MARK: opening

    private func handshake(_ deadline: Double) throws(ForwardError) {
        var c0c1 = [UInt8](repeating: 0, count: 1537)
        c0c1[0] = 3
        // C1's random bytes (the server echoes them; nothing secret): one seed from the
        // system, a xorshift for the rest (SystemRandomNumberGenerator is a getrandom call
        // per value).
        var x = UInt64.random(in: 1...UInt64.max)
        for i in 9..<1537 {
            x ^= x << 13
            x ^= x >> 7
            x ^= x << 17
            c0c1[i] = UInt8(truncatingIfNeeded: x)
        }
        writer.raw(c0c1[...])
        try send(deadline, step: "handshake")
        var s0s1 = try readExactly(1537, deadline)
        guard s0s1[0] == 3 else { throw ForwardError("not an RTMP server (it answered the handshake with version \(s0s1[0]))") }
        s0s1.removeFirst()
        writer.raw(s0s1[...])  // C2: S1 echoed
        try send(deadline, step: "handshake")
        _ = try readExactly(1536, deadline)
    }

    private func publish(_ address: RTMPAddress, _ deadline: Double) throws(ForwardError) {
        var size: [UInt8] = []
        AMF0.append(UInt64(Self.chunkSize), bytes: 4, to: &size)
        writer.message(size, chunkStream: 2, type: RTMPMessageType.setChunkSize)
        writer.chunkSize = Self.chunkSize
        command(["connect", 1, .object([("app", .string(address.app)), ("type", "nonprivate"),
                                          ("flashVer", "FMLE/3.0 (compatible; nalcast)"), ("tcUrl", .string(address.tcUrl))])])
        try send(deadline, step: "connect")
        let connected = try answer(to: 1, deadline, step: "connect")
        guard connected.first?.text == "_result" else { throw refusal("connection", connected) }
        command(["releaseStream", 2, .null, .string(playpath)])
        command(["FCPublish", 3, .null, .string(playpath)])
        command(["createStream", 4, .null])
        try send(deadline, step: "createStream")
        let created = try answer(to: 4, deadline, step: "createStream")
        guard created.first?.text == "_result", let id = created.dropFirst(3).first?.number, id >= 0, id < 1e9 else {
            throw refusal("stream", created)
        }
        streamID = UInt32(id)
        command(["publish", 5, .null, .string(playpath), "live"], streamID: streamID)
        try send(deadline, step: "publish")
        while true {
            let status = try nextCommand(deadline, step: "publish")
            if status.first?.text == "_error" && status.dropFirst().first?.number == 5 { throw refusal("publish", status) }
            guard status.first?.text == "onStatus", let info = status.dropFirst(3).first else { continue }
            if info.field("code")?.text == "NetStream.Publish.Start" { return }
            if info.field("level")?.text == "error" { throw refusal("publish", status) }
        }
    }

    /// A command message (AMF0) on chunk stream 3 (8 for those on the publishing stream).
    func command(_ values: [AMF0], streamID: UInt32 = 0) {
        var payload: [UInt8] = []
        AMF0.encode(values, into: &payload)
        writer.message(payload, chunkStream: streamID == 0 ? 3 : 8, type: RTMPMessageType.commandAMF0, streamID: streamID)
    }

    /// The server's `_result` or `_error` for transaction `id`; other commands are passed over.
    private func answer(to id: Double, _ deadline: Double, step: String) throws(ForwardError) -> [AMF0] {
        while true {
            let values = try nextCommand(deadline, step: step)
            if let name = values.first?.text, name == "_result" || name == "_error", values.dropFirst().first?.number == id { return values }
        }
    }

    private func nextCommand(_ deadline: Double, step: String) throws(ForwardError) -> [AMF0] {
        while true {
            while let message = try reader.next() {
                if let values = try handle(message) { return values }
            }
            try flushReplies(deadline)
            guard try waitUntilReady(socket.fd, for: Int32(POLLIN), deadline: deadline) else { throw timedOut(step) }
            try receive()
        }
    }

    private func readExactly(_ count: Int, _ deadline: Double) throws(ForwardError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var have = 0
        while have < count {
            guard try waitUntilReady(socket.fd, for: Int32(POLLIN), deadline: deadline) else { throw timedOut("handshake") }
            let n: Int?
            do {
                n = try bytes.withUnsafeMutableBytes { buffer throws(Errno) in try socket.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[have...])) }
            } catch {
                throw ForwardError("RTMP handshake: \(error)")
            }
            guard let n else { continue }
            guard n > 0 else { throw ForwardError("RTMP handshake: the server closed the connection") }
            have += n
        }
        return bytes
    }

    private func refusal(_ what: String, _ values: [AMF0]) -> ForwardError {
        let info = values.dropFirst(3).first
        let code = info?.field("code")?.text ?? values.first?.text ?? "no answer"
        let description = info?.field("description")?.text.map { " (\($0))" } ?? ""
        return ForwardError("the server refused the \(what): \(code)\(description)")
    }

    private func timedOut(_ step: String) -> ForwardError {
        ForwardError("RTMP \(step): timed out (no answer from the server)")
    }

    // MARK: the server's messages

    /// Reads what the server sent (without waiting) and handles its control messages.
    /// Throws when it closed the connection or ended the publish.
    func service() throws(ForwardError) {
        try receive()
        while let message = try reader.next() {
            if let values = try handle(message), values.first?.text == "onStatus", let info = values.dropFirst(3).first,
               info.field("level")?.text == "error" {
                throw refusal("stream", values)
            }
        }
    }

    private func receive() throws(ForwardError) {
        try withUnsafeTemporaryAllocation(byteCount: 16384, alignment: 8) { buffer throws(ForwardError) in
            while true {
                let n: Int?
                do {
                    n = try socket.read(into: buffer)
                } catch {
                    throw ForwardError("\(error)")
                }
                guard let n else { return }
                guard n > 0 else { throw ForwardError("the server closed the connection") }
                reader.append(UnsafeRawBufferPointer(rebasing: buffer[..<n]))
                received += UInt64(n)
                if n < buffer.count { return }
            }
        }
        if window > 0 && received - acknowledged >= window {
            acknowledged = received
            var ack: [UInt8] = []
            AMF0.append(received & 0xFFFF_FFFF, bytes: 4, to: &ack)
            replies.append((RTMPMessageType.acknowledgement, ack))
        }
    }

    /// A control message is acted on (nil); a command's values are returned.
    private func handle(_ message: RTMPChunkReader.Message) throws(ForwardError) -> [AMF0]? {
        let p = message.payload
        func uint32() -> UInt32 { p.count >= 4 ? p.prefix(4).reduce(0) { $0 << 8 | UInt32($1) } : 0 }
        switch message.type {
        case RTMPMessageType.setChunkSize:
            let size = Int(uint32() & 0x7FFF_FFFF)
            guard size >= 1 else { throw ForwardError("RTMP: the server set a chunk size of 0") }
            reader.chunkSize = size
        case RTMPMessageType.windowAcknowledgementSize:
            window = UInt64(uint32())
        case RTMPMessageType.userControl where p.count >= 6 && p[0] == 0 && p[1] == 6:
            replies.append((RTMPMessageType.userControl, [0, 7] + p[2..<6]))  // ping request: answered
        case RTMPMessageType.commandAMF0:
            do {
                return try AMF0.decode(p[...])
            } catch {
                throw ForwardError("RTMP: the server sent a command nalcast cannot read")
            }
        default:
            break
        }
        return nil
    }

    // MARK: writing

    /// Writes what `writer` holds, waiting at most `timeout` seconds for the server to take
    /// it; reads the server's messages once a second (and whenever a write has to wait).
    func flush(timeout: Double) throws(ForwardError) {
        let now = MonotonicClock.nanoseconds
        if now >= nextService {
            nextService = now + 1_000_000_000
            try service()
        }
        try send(MonotonicClock.seconds + timeout, step: "write")
        try flushReplies(MonotonicClock.seconds + timeout)
    }

    private func flushReplies(_ deadline: Double) throws(ForwardError) {
        guard !replies.isEmpty else { return }
        precondition(writer.isEmpty, "replies are sent between flushes")
        for reply in replies { writer.message(reply.payload, chunkStream: 2, type: reply.type) }
        replies.removeAll()
        try send(deadline, step: "write")
    }

    private func send(_ deadline: Double, step: String) throws(ForwardError) {
        let slices = writer.slices()
        defer { writer.clear() }
        var cursor = SliceCursor()
        while cursor.index < slices.count {
            let result: IOResult<Int>
            do {
                result = try GatheredWrite.write(slices, from: cursor, to: .socket(socket.fd))
            } catch {
                throw ForwardError("\(error)")
            }
            switch result {
            case .done(let n): cursor.advance(by: n, in: slices)
            case .wouldBlock:
                guard try waitUntilReady(socket.fd, for: Int32(POLLOUT | POLLIN), deadline: deadline) else {
                    throw step == "write" ? ForwardError("the server stopped reading: timed out") : timedOut(step)
                }
                try receive()
            }
        }
    }

    private func waitUntilReady(_ fd: Int32, for events: Int32, deadline: Double) throws(ForwardError) -> Bool {
        do {
            return try IO.waitUntilReady(fd, for: events, timeout: deadline - MonotonicClock.seconds)
        } catch {
            throw ForwardError("\(error)")
        }
    }

    /// Says the stream ends (FCUnpublish, deleteStream), best effort within `timeout`.
    func unpublish(timeout: Double) {
        command(["FCUnpublish", 6, .null, .string(playpath)])
        command(["deleteStream", 7, .null, .number(Double(streamID))])
        try? send(MonotonicClock.seconds + timeout, step: "write")
    }
}

extension AMF0: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    init(stringLiteral value: String) { self = .string(value) }
    init(integerLiteral value: Int) { self = .number(Double(value)) }
}
