import Output

/// RTMP's message types (RTMP specification 1.0, 5.4 and 7.1), the ones a publisher meets.
enum RTMPMessageType {
    static let setChunkSize: UInt8 = 1
    static let abort: UInt8 = 2
    static let acknowledgement: UInt8 = 3
    static let userControl: UInt8 = 4
    static let windowAcknowledgementSize: UInt8 = 5
    static let setPeerBandwidth: UInt8 = 6
    static let audio: UInt8 = 8
    static let video: UInt8 = 9
    static let dataAMF0: UInt8 = 18
    static let commandAMF0: UInt8 = 20
}

/// Messages cut into chunks, gathered for one write: the small bytes (chunk headers, FLV
/// tag headers, NAL length prefixes) are copied into one buffer, the large ones (NAL unit
/// bodies, AAC frames) stay where they are and are written from there (`slices()`, then
/// `GatheredWrite`). Every message gets a full (type 0) header, the chunks after its first a
/// one-byte (type 3) header: with a large chunk size a picture is one or a few chunks.
struct RTMPChunkWriter {
    /// The chunk size the server was told (Set Chunk Size); 128 until then.
    var chunkSize = 128
    fileprivate enum Piece {
        case own(Range<Int>)
        case shared(ArraySlice<UInt8>)
    }
    private var scratch: [UInt8] = []
    private var pieces: [Piece] = []
    /// The message being built (`add`), its pieces and length.
    private var payload: [Piece] = []
    private var payloadLength = 0

    var isEmpty: Bool { pieces.isEmpty }

    /// Small bytes of the message being built, copied.
    mutating func add(_ bytes: some Collection<UInt8>) {
        guard !bytes.isEmpty else { return }
        let start = scratch.count
        scratch.append(contentsOf: bytes)
        payload.append(.own(start..<scratch.count))
        payloadLength += bytes.count
    }

    /// A big part of the message being built, written from where it is.
    mutating func add(shared bytes: ArraySlice<UInt8>) {
        guard !bytes.isEmpty else { return }
        payload.append(.shared(bytes))
        payloadLength += bytes.count
    }

    /// Ends the message built by `add` and queues its chunks.
    mutating func finish(chunkStream: UInt8, type: UInt8, streamID: UInt32, timestamp: UInt32) {
        defer {
            payload.removeAll(keepingCapacity: true)
            payloadLength = 0
        }
        let extended = timestamp >= 0xFFFFFF
        var header: [UInt8] = [chunkStream & 0x3F]
        AMF0.append(UInt64(extended ? 0xFFFFFF : timestamp), bytes: 3, to: &header)
        AMF0.append(UInt64(payloadLength), bytes: 3, to: &header)
        header.append(type)
        for i in 0..<4 { header.append(UInt8(truncatingIfNeeded: streamID >> (8 * UInt32(i)))) }  // little-endian
        if extended { AMF0.append(UInt64(timestamp), bytes: 4, to: &header) }
        own(header)
        var left = chunkSize
        for piece in payload {
            var rest = piece
            while true {
                let count = rest.count
                if count <= left {
                    append(rest)
                    left -= count
                    break
                }
                let (head, tail) = rest.split(at: left)
                append(head)
                // The next chunk of the same message: a one-byte header (and the extended
                // timestamp again, as the specification and FFmpeg have it).
                var next: [UInt8] = [0xC0 | (chunkStream & 0x3F)]
                if extended { AMF0.append(UInt64(timestamp), bytes: 4, to: &next) }
                own(next)
                left = chunkSize
                rest = tail
            }
        }
    }

    /// Bytes that are no message (the handshake), written as they are.
    mutating func raw(_ bytes: ArraySlice<UInt8>) {
        append(.shared(bytes))
    }

    /// One whole message of small bytes.
    mutating func message(_ bytes: [UInt8], chunkStream: UInt8, type: UInt8, streamID: UInt32 = 0, timestamp: UInt32 = 0) {
        add(bytes)
        finish(chunkStream: chunkStream, type: type, streamID: streamID, timestamp: timestamp)
    }

    /// What is queued, as slices for a gathered write (valid until `clear`).
    func slices() -> [ArraySlice<UInt8>] {
        pieces.map { piece in
            switch piece {
            case .own(let range): scratch[range]
            case .shared(let bytes): bytes
            }
        }
    }

    /// Forgets what was queued (written, or the connection lost).
    mutating func clear() {
        pieces.removeAll(keepingCapacity: true)
        scratch.removeAll(keepingCapacity: true)
        payload.removeAll(keepingCapacity: true)
        payloadLength = 0
    }

    private mutating func own(_ bytes: [UInt8]) {
        let start = scratch.count
        scratch.append(contentsOf: bytes)
        append(.own(start..<scratch.count))
    }

    private mutating func append(_ piece: Piece) {
        pieces.append(piece)
    }
}

extension RTMPChunkWriter.Piece {
    var count: Int {
        switch self {
        case .own(let range): range.count
        case .shared(let bytes): bytes.count
        }
    }

    func split(at n: Int) -> (Self, Self) {
        switch self {
        case .own(let range): (.own(range.lowerBound..<range.lowerBound + n), .own(range.lowerBound + n..<range.upperBound))
        case .shared(let bytes): (.shared(bytes.prefix(n)), .shared(bytes.dropFirst(n)))
        }
    }
}

/// The server's chunk stream read back into messages: any header type, the server's chunk
/// size (Set Chunk Size), extended timestamps. Bounded: a message longer than `maxMessage`,
/// messages in progress holding more than that in all, or more than 64 chunk streams is a
/// protocol error, not memory.
struct RTMPChunkReader {
    struct Message {
        var type: UInt8
        var streamID: UInt32
        var timestamp: UInt32
        var payload: [UInt8]
    }

    private struct Stream {
        var timestamp: UInt32 = 0
        var delta: UInt32 = 0
        var length = 0
        var type: UInt8 = 0
        var streamID: UInt32 = 0
        var extended = false
        var partial: [UInt8] = []
    }

    static let maxMessage = 1 << 20
    var chunkSize = 128
    private var buffer: [UInt8] = []
    private var at = 0
    private var streams: [UInt32: Stream] = [:]
    /// Bytes of messages begun and not complete, over every chunk stream: at most
    /// `maxMessage` in all.
    private var held = 0

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if at > 0 && at == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            at = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole message, nil until its last chunk has come.
    mutating func next() throws(ForwardError) -> Message? {
        while true {
            guard let (consumed, message) = try chunk() else {
                if at > 65536 {
                    buffer.removeFirst(at)
                    at = 0
                }
                return nil
            }
            at += consumed
            if let message { return message }
        }
    }

    /// Parses one chunk at `at`: the bytes it takes and the message it completes, or nil
    /// when it has not all come.
    private mutating func chunk() throws(ForwardError) -> (Int, Message?)? {
        var p = at
        func byte() -> UInt32? {
            guard p < buffer.count else { return nil }
            defer { p += 1 }
            return UInt32(buffer[p])
        }
        func uint(_ n: Int) -> UInt32? {
            var v: UInt32 = 0
            for _ in 0..<n {
                guard let b = byte() else { return nil }
                v = v << 8 | b
            }
            return v
        }
        guard let first = byte() else { return nil }
        let format = first >> 6
        var csid = first & 0x3F
        if csid == 0 {
            guard let b = byte() else { return nil }
            csid = 64 + b
        } else if csid == 1 {
            guard let b0 = byte(), let b1 = byte() else { return nil }
            csid = 64 + b0 + b1 << 8
        }
        guard streams[csid] != nil || streams.count < 64 else { throw ForwardError("RTMP: the server used more than 64 chunk streams") }
        var s = streams[csid] ?? Stream()
        let starts = s.partial.isEmpty
        if format <= 2 {
            guard let ts = uint(3) else { return nil }
            if format <= 1 {
                guard let length = uint(3), let type = byte() else { return nil }
                s.length = Int(length)
                s.type = UInt8(type)
                if format == 0 {
                    guard let a = byte(), let b = byte(), let c = byte(), let d = byte() else { return nil }
                    s.streamID = a | b << 8 | c << 16 | d << 24
                }
            }
            s.extended = ts == 0xFFFFFF
            var value = ts
            if s.extended {
                guard let e = uint(4) else { return nil }
                value = e
            }
            if format == 0 { s.timestamp = value } else { s.delta = value }
        } else if s.extended {
            guard uint(4) != nil else { return nil }
        }
        guard s.length <= Self.maxMessage else { throw ForwardError("RTMP: the server sent a message of \(s.length) bytes") }
        let n = min(chunkSize, s.length - s.partial.count)
        guard buffer.count - p >= n else { return nil }
        if starts && format != 0 { s.timestamp &+= s.delta }
        held += n
        guard held <= Self.maxMessage else { throw ForwardError("RTMP: the server's messages in progress passed \(Self.maxMessage) bytes") }
        s.partial.append(contentsOf: buffer[p..<p + n])
        p += n
        var message: Message?
        if s.partial.count >= s.length {
            held -= s.partial.count
            message = Message(type: s.type, streamID: s.streamID, timestamp: s.timestamp, payload: s.partial)
            s.partial = []
        }
        streams[csid] = s
        return (p - at, message)
    }
}
