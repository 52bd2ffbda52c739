/// WebSocket framing (RFC 6455 section 5) for a server that sends and a viewer that mostly
/// listens: `WebSocketFrame` writes the server's frames, `WebSocketReader` parses the
/// client's. Pure: bytes in, bytes and events out; the connection that owns them lives on the
/// loop. No extension is ever negotiated, so the reserved bits are always zero.

/// A frame's opcode (section 5.2). The others (3–7, 0xB–0xF) are reserved.
public enum WebSocketOpcode: UInt8, Sendable {
    case continuation = 0x0
    case text = 0x1
    case binary = 0x2
    case close = 0x8
    case ping = 0x9
    case pong = 0xA

    /// Close, ping and pong: at most 125 bytes, never fragmented.
    public var isControl: Bool { rawValue & 0x8 != 0 }
}

/// The status codes of a close frame that nalcast sends (section 7.4.1).
public enum WebSocketCloseCode: UInt16, Sendable {
    case normal = 1000
    /// The server is stopping (the stream ended).
    case goingAway = 1001
    case protocolError = 1002
    /// A data message the viewer must not send.
    case unsupportedData = 1003
    /// A text message or close reason that is not UTF-8.
    case invalidPayload = 1007
    case policyViolation = 1008
    case messageTooBig = 1009
    case internalError = 1011

    /// Whether a peer may send `code` in a close frame (sections 7.4.1 and 7.4.2, with the
    /// IANA registry's 1012–1014): 1000–1003, 1007–1014 and the 3000–4999 application range.
    /// 1005, 1006 and 1015 are for reporting only, never on the wire.
    public static func isValidOnTheWire(_ code: UInt16) -> Bool {
        switch code {
        case 1000...1003, 1007...1014, 3000...4999: true
        default: false
        }
    }
}

/// The server's frames: never masked (section 5.1), always whole (FIN set unless asked).
public enum WebSocketFrame {
    /// The header of a frame carrying `payloadLength` bytes: FIN and opcode, then the length
    /// in the fewest bytes (7 bits up to 125, 16 bits up to 65535, else 64 bits), no mask.
    /// The payload follows it as is, so an access unit's bytes can go out with a gathered
    /// write and no copy.
    public static func header(_ opcode: WebSocketOpcode, payloadLength: Int, fin: Bool = true) -> [UInt8] {
        precondition(payloadLength >= 0, "negative payload length")
        precondition(!opcode.isControl || (fin && payloadLength <= 125), "a control frame is whole and at most 125 bytes")
        let first = (fin ? 0x80 : 0) | opcode.rawValue
        switch payloadLength {
        case 0...125:
            return [first, UInt8(payloadLength)]
        case 126...0xFFFF:
            return [first, 126, UInt8(payloadLength >> 8), UInt8(payloadLength & 0xFF)]
        default:
            let length = UInt64(payloadLength)
            return [first, 127] + stride(from: 56, through: 0, by: -8).map { UInt8(truncatingIfNeeded: length >> UInt64($0)) }
        }
    }

    /// A whole frame: header and payload.
    public static func frame(_ opcode: WebSocketOpcode, _ payload: [UInt8]) -> [UInt8] {
        header(opcode, payloadLength: payload.count) + payload
    }

    /// A close frame with `code` and a reason (cut to fit 125 bytes, at a character boundary).
    public static func close(_ code: UInt16, reason: String = "") -> [UInt8] {
        var text: [UInt8] = []
        for character in reason {
            let bytes = Array(String(character).utf8)
            if text.count + bytes.count > 123 { break }
            text += bytes
        }
        return frame(.close, [UInt8(code >> 8), UInt8(code & 0xFF)] + text)
    }

    /// A close frame with one of nalcast's codes.
    public static func close(_ code: WebSocketCloseCode, reason: String = "") -> [UInt8] {
        close(code.rawValue, reason: reason)
    }
}

/// What the client's bytes come to, in order.
public enum WebSocketEvent: Sendable, Equatable {
    /// A whole data message (fragments joined), when the reader delivers them.
    case message(WebSocketOpcode, [UInt8])
    /// Bytes to send back now: the pong to a ping.
    case send([UInt8])
    /// The end of the conversation: send `reply` (a close frame), then close the connection
    /// once it is written. `code` is the one the peer sent (nil: none, or the peer broke the
    /// protocol, see `failure`); `failure` is what the reader found wrong, nil for a clean
    /// close by the peer. Nothing follows it: later bytes are ignored.
    case close(code: UInt16?, reply: [UInt8], failure: WebSocketReader.Failure?)
}

/// An incremental parser of a client's frames (section 5), in any chunking: `push` the bytes
/// as they arrive, act on the events. Every rule of the section is checked and each violation
/// ends the conversation with a close frame and its code:
///
/// - a client frame must be masked (section 5.1): 1002;
/// - reserved bits (no extension is negotiated) and reserved opcodes: 1002;
/// - control frames (close, ping, pong) at most 125 bytes and never fragmented: 1002;
/// - a continuation without a message begun, or a new message inside a fragmented one: 1002;
/// - a length not in its fewest bytes, or a 64-bit length with the top bit set: 1002;
/// - a message (all its fragments) longer than `maxMessageSize`: 1009, before its payload
///   is read;
/// - with `DataMessages.reject`, any text or binary frame: 1003, before its payload is read;
/// - a text message or close reason that is not UTF-8: 1007;
/// - a close frame with a 1-byte body or a code not allowed on the wire: 1002.
///
/// A ping gets a pong with its payload; a pong is ignored (section 5.5.3 allows unsolicited
/// ones); a close gets a close with the same code back (section 5.5.1), or an empty one if it
/// had none.
public struct WebSocketReader: Sendable {
    /// What to do with text and binary messages from the client.
    public enum DataMessages: Sendable {
        /// Deliver them as `.message` events (up to `maxMessageSize`).
        case deliver
        /// Close with 1003 at the first data frame. The viewer of a live stream has nothing to
        /// say: a client that talks is not nalcast's page, and closing it at once frees its
        /// reader slot instead of buffering what it sends.
        case reject
    }

    public enum Failure: Sendable, Equatable {
        case unmasked
        case reservedBits
        case reservedOpcode(UInt8)
        case controlFrameTooLong(Int)
        case fragmentedControlFrame
        case unexpectedContinuation
        case expectedContinuation
        case nonMinimalLength
        case lengthTopBitSet
        case messageTooBig(Int)
        case dataNotAccepted
        case invalidUTF8
        case badCloseFrame

        /// The close code this failure is answered with.
        public var code: WebSocketCloseCode {
            switch self {
            case .messageTooBig: .messageTooBig
            case .dataNotAccepted: .unsupportedData
            case .invalidUTF8: .invalidPayload
            default: .protocolError
            }
        }

        /// The close frame's reason: short, and nothing the client sent.
        public var reason: String {
            switch self {
            case .unmasked: "client frames must be masked"
            case .reservedBits: "reserved bits set"
            case .reservedOpcode: "reserved opcode"
            case .controlFrameTooLong: "control frame over 125 bytes"
            case .fragmentedControlFrame: "fragmented control frame"
            case .unexpectedContinuation: "continuation without a message"
            case .expectedContinuation: "new message inside a fragmented one"
            case .nonMinimalLength: "length not in its fewest bytes"
            case .lengthTopBitSet: "64-bit length with its top bit set"
            case .messageTooBig: "message too big"
            case .dataNotAccepted: "this stream takes no messages"
            case .invalidUTF8: "text is not UTF-8"
            case .badCloseFrame: "malformed close frame"
            }
        }
    }

    public let maxMessageSize: Int
    public let dataMessages: DataMessages
    /// Whether the conversation is over (a close event was given): later bytes are ignored.
    public private(set) var isClosed = false
    /// Bytes pushed after the close, ignored.
    public private(set) var bytesAfterClose = 0

    /// The header being read (at most 14 bytes: 2, an extended length of 2 or 8, a mask of 4).
    private var head: [UInt8] = []
    /// The frame whose payload is being read.
    private var frame: (opcode: WebSocketOpcode, fin: Bool, mask: (UInt8, UInt8, UInt8, UInt8), remaining: Int)?
    /// Payload read so far of the current frame when it is a control frame (its own buffer, as
    /// control frames may come between the fragments of a message).
    private var control: [UInt8] = []
    /// The data message being assembled: its opcode and the payload of its fragments so far.
    private var message: (opcode: WebSocketOpcode, payload: [UInt8])?
    /// How many payload bytes of the current frame have been unmasked (the mask's phase).
    private var offset = 0

    public init(maxMessageSize: Int = 4096, dataMessages: DataMessages = .reject) {
        self.maxMessageSize = maxMessageSize
        self.dataMessages = dataMessages
    }

    public mutating func push(_ bytes: [UInt8]) -> [WebSocketEvent] {
        bytes.withUnsafeBytes { push($0) }
    }

    public mutating func push(_ bytes: UnsafeRawBufferPointer) -> [WebSocketEvent] {
        var events: [WebSocketEvent] = []
        var i = 0
        while i < bytes.count {
            if isClosed {
                bytesAfterClose += bytes.count - i
                break
            }
            if frame == nil {
                // Header: take only what it still needs, then see whether it is complete.
                head.append(bytes[i])
                i += 1
                switch parseHead() {
                case .incomplete: continue
                case .failed(let failure): events.append(fail(failure))
                case .frame:
                    if let event = frameReady() { events.append(event) }
                }
                continue
            }
            // Payload: unmask what is here of it.
            let take = min(frame!.remaining, bytes.count - i)
            let mask = frame!.mask
            let isControl = frame!.opcode.isControl
            for j in 0..<take {
                let key: UInt8
                switch (offset + j) & 3 {
                case 0: key = mask.0
                case 1: key = mask.1
                case 2: key = mask.2
                default: key = mask.3
                }
                let byte = bytes[i + j] ^ key
                if isControl { control.append(byte) } else { message!.payload.append(byte) }
            }
            i += take
            offset += take
            frame!.remaining -= take
            if frame!.remaining == 0, let event = frameEnded() { events.append(event) }
        }
        return events
    }

    private enum HeadState { case incomplete, failed(Failure), frame }

    /// Checks the header bytes so far; on `.frame`, `frame` is set and `head` emptied. Every
    /// rule that the first two bytes decide is checked as soon as they are here.
    private mutating func parseHead() -> HeadState {
        if head.count == 1 {
            let first = head[0]
            if first & 0x70 != 0 { return .failed(.reservedBits) }
            guard let opcode = WebSocketOpcode(rawValue: first & 0x0F) else { return .failed(.reservedOpcode(first & 0x0F)) }
            let fin = first & 0x80 != 0
            if opcode.isControl && !fin { return .failed(.fragmentedControlFrame) }
            switch opcode {
            case .continuation where message == nil: return .failed(.unexpectedContinuation)
            case .text, .binary:
                if message != nil { return .failed(.expectedContinuation) }
                if dataMessages == .reject { return .failed(.dataNotAccepted) }
            default: break
            }
            return .incomplete
        }
        if head.count == 2 {
            if head[1] & 0x80 == 0 { return .failed(.unmasked) }
            let opcode = WebSocketOpcode(rawValue: head[0] & 0x0F)!
            let short = Int(head[1] & 0x7F)
            if opcode.isControl && short > 125 { return .failed(.controlFrameTooLong(short)) }
        }
        let short = Int(head[1] & 0x7F)
        let extra = short == 126 ? 2 : short == 127 ? 8 : 0
        guard head.count == 2 + extra + 4 else { return .incomplete }
        var length = short
        if extra == 2 {
            length = Int(head[2]) << 8 | Int(head[3])
            if length < 126 { return .failed(.nonMinimalLength) }
        } else if extra == 8 {
            if head[2] & 0x80 != 0 { return .failed(.lengthTopBitSet) }
            var value: UInt64 = 0
            for k in 2..<10 { value = value << 8 | UInt64(head[k]) }
            if value <= 0xFFFF { return .failed(.nonMinimalLength) }
            // Anything past the message limit is refused below; keep the arithmetic in range.
            length = value > UInt64(Int32.max) ? Int(Int32.max) : Int(value)
        }
        let opcode = WebSocketOpcode(rawValue: head[0] & 0x0F)!
        if !opcode.isControl {
            let sofar = message?.payload.count ?? 0
            if length > maxMessageSize - sofar { return .failed(.messageTooBig(sofar + length)) }
        }
        let m = head.count - 4
        frame = (opcode, head[0] & 0x80 != 0, (head[m], head[m + 1], head[m + 2], head[m + 3]), length)
        head.removeAll(keepingCapacity: true)
        offset = 0
        control.removeAll(keepingCapacity: true)
        if opcode == .text || opcode == .binary { message = (opcode, []) }
        return .frame
    }

    /// A header was complete: an empty payload ends the frame at once.
    private mutating func frameReady() -> WebSocketEvent? {
        frame!.remaining == 0 ? frameEnded() : nil
    }

    /// The current frame's payload is complete.
    private mutating func frameEnded() -> WebSocketEvent? {
        let (opcode, fin, _, _) = frame!
        frame = nil
        switch opcode {
        case .ping:
            return .send(WebSocketFrame.frame(.pong, control))
        case .pong:
            return nil
        case .close:
            return closeReceived(control)
        case .continuation, .text, .binary:
            guard fin, let whole = message else { return nil }
            message = nil
            if whole.opcode == .text, String(validating: whole.payload, as: UTF8.self) == nil { return fail(.invalidUTF8) }
            return .message(whole.opcode, whole.payload)
        }
    }

    /// The peer's close frame: echo its code (section 5.5.1), or fail on a malformed one.
    private mutating func closeReceived(_ body: [UInt8]) -> WebSocketEvent {
        if body.isEmpty {
            isClosed = true
            return .close(code: nil, reply: WebSocketFrame.frame(.close, []), failure: nil)
        }
        guard body.count >= 2 else { return fail(.badCloseFrame) }
        let code = UInt16(body[0]) << 8 | UInt16(body[1])
        guard WebSocketCloseCode.isValidOnTheWire(code) else { return fail(.badCloseFrame) }
        guard String(validating: body[2...], as: UTF8.self) != nil else { return fail(.invalidUTF8) }
        isClosed = true
        return .close(code: code, reply: WebSocketFrame.close(code), failure: nil)
    }

    private mutating func fail(_ failure: Failure) -> WebSocketEvent {
        isClosed = true
        frame = nil
        message = nil
        head = []
        control = []
        return .close(code: nil, reply: WebSocketFrame.close(failure.code, reason: failure.reason), failure: failure)
    }
}
