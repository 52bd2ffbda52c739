import Testing
import Serving

/// The server's frame writer and the parser of client frames, rule by rule.
@Suite struct WebSocketFrameTests {
    static let mask: [UInt8] = [0x37, 0xfa, 0x21, 0x3d]

    /// A client frame: masked unless `masked` is false; `rawLength` overrides the length
    /// field (for non-minimal encodings).
    static func clientFrame(
        _ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, masked: Bool = true, rsv: UInt8 = 0, rawLength: [UInt8]? = nil
    ) -> [UInt8] {
        var bytes: [UInt8] = [(fin ? 0x80 : 0) | rsv << 4 | opcode]
        let maskBit: UInt8 = masked ? 0x80 : 0
        if let rawLength {
            bytes.append(maskBit | rawLength[0])
            bytes += rawLength.dropFirst()
        } else if payload.count <= 125 {
            bytes.append(maskBit | UInt8(payload.count))
        } else if payload.count <= 0xFFFF {
            bytes += [maskBit | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xff)]
        } else {
            bytes.append(maskBit | 127)
            bytes += stride(from: 56, through: 0, by: -8).map { UInt8(truncatingIfNeeded: payload.count >> $0) }
        }
        if !masked { return bytes + payload }
        return bytes + mask + payload.enumerated().map { $0.element ^ mask[$0.offset & 3] }
    }

    /// The events for `bytes`, fed whole, one byte at a time and in pieces of 3; asserts that
    /// every chunking gives the same events.
    static func events(_ bytes: [UInt8], _ reader: WebSocketReader = WebSocketReader(maxMessageSize: 1 << 20, dataMessages: .deliver))
        -> [WebSocketEvent]
    {
        var whole = reader
        let expected = whole.push(bytes)
        for chunk in [1, 3] {
            var pieces = reader
            var events: [WebSocketEvent] = []
            var i = 0
            while i < bytes.count {
                events += pieces.push(Array(bytes[i..<min(bytes.count, i + chunk)]))
                i += chunk
            }
            #expect(events == expected, "chunk \(chunk)")
        }
        return expected
    }

    static func failure(_ events: [WebSocketEvent]) -> WebSocketReader.Failure? {
        guard case .close(_, _, let failure)? = events.last else { return nil }
        return failure
    }

    /// The close code inside a close frame the server wrote.
    static func closeCode(_ events: [WebSocketEvent]) -> UInt16? {
        guard case .close(_, let reply, _)? = events.last, reply.count >= 4, reply[0] == 0x88 else { return nil }
        return UInt16(reply[2]) << 8 | UInt16(reply[3])
    }

    // MARK: the writer

    @Test func headerLengthsUseTheFewestBytes() {
        #expect(WebSocketFrame.header(.binary, payloadLength: 0) == [0x82, 0])
        #expect(WebSocketFrame.header(.binary, payloadLength: 125) == [0x82, 125])
        #expect(WebSocketFrame.header(.binary, payloadLength: 126) == [0x82, 126, 0, 126])
        #expect(WebSocketFrame.header(.binary, payloadLength: 0xFFFF) == [0x82, 126, 0xff, 0xff])
        #expect(WebSocketFrame.header(.binary, payloadLength: 0x10000) == [0x82, 127, 0, 0, 0, 0, 0, 1, 0, 0])
        #expect(WebSocketFrame.header(.binary, payloadLength: 0x1_2345_6789) == [0x82, 127, 0, 0, 0, 1, 0x23, 0x45, 0x67, 0x89])
        #expect(WebSocketFrame.header(.text, payloadLength: 5, fin: false) == [0x01, 5])
        #expect(WebSocketFrame.header(.continuation, payloadLength: 5) == [0x80, 5])
        #expect(WebSocketFrame.header(.ping, payloadLength: 0) == [0x89, 0])
        // Never masked: the mask bit is clear in every length form.
        for length in [0, 125, 126, 70000] { #expect(WebSocketFrame.header(.binary, payloadLength: length)[1] & 0x80 == 0) }
    }

    @Test func closeFrames() {
        #expect(WebSocketFrame.close(.goingAway) == [0x88, 2, 0x03, 0xe9])
        #expect(WebSocketFrame.close(.normal, reason: "bye") == [0x88, 5, 0x03, 0xe8] + Array("bye".utf8))
        // A long reason is cut to fit 125 bytes, at a character boundary.
        let long = WebSocketFrame.close(.normal, reason: String(repeating: "é", count: 100))
        #expect(long.count == 2 + 2 + 122)
        #expect(String(validating: long[4...], as: UTF8.self) != nil)
    }

    /// The writer's frames read back through the parser (once masked as a client would).
    @Test func writerAndReaderAgree() {
        for length in [0, 1, 125, 126, 127, 65535, 65536, 100_000] {
            let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let header = WebSocketFrame.header(.binary, payloadLength: length)
            var masked = header
            masked[1] |= 0x80
            masked += Self.mask + payload.enumerated().map { $0.element ^ Self.mask[$0.offset & 3] }
            var reader = WebSocketReader(maxMessageSize: 1 << 20, dataMessages: .deliver)
            #expect(reader.push(masked) == [.message(.binary, payload)], "length \(length)")
        }
    }

    // MARK: the reader: control frames

    @Test func pingGetsPongWithItsPayload() {
        let events = Self.events(Self.clientFrame(0x9, Array("hello".utf8)))
        #expect(events == [.send([0x8A, 5] + Array("hello".utf8))])
        #expect(Self.events(Self.clientFrame(0x9, [])) == [.send([0x8A, 0])])
        let full = [UInt8](repeating: 7, count: 125)
        #expect(Self.events(Self.clientFrame(0x9, full)) == [.send([0x8A, 125] + full)])
    }

    @Test func pongIsIgnored() {
        #expect(Self.events(Self.clientFrame(0xA, [1, 2, 3])).isEmpty)
    }

    @Test func closeIsEchoedWithItsCode() {
        var reader = WebSocketReader()
        let events = reader.push(Self.clientFrame(0x8, [0x03, 0xe9] + Array("tab closed".utf8)))
        #expect(events == [.close(code: 1001, reply: [0x88, 2, 0x03, 0xe9], failure: nil)])
        #expect(reader.isClosed)
        // Nothing after the close is read.
        #expect(reader.push(Self.clientFrame(0x9, [])).isEmpty)
        #expect(reader.bytesAfterClose == 6)
        #expect(Self.events(Self.clientFrame(0x8, [])) == [.close(code: nil, reply: [0x88, 0], failure: nil)])
        #expect(Self.events(Self.clientFrame(0x8, [0x0f, 0xa0])) == [.close(code: 4000, reply: [0x88, 2, 0x0f, 0xa0], failure: nil)])
    }

    @Test(arguments: [[0x03] as [UInt8], [0x03, 0xed], [0x03, 0xee], [0x03, 0xf7], [0x05, 0xdc], [0x00, 0x00], [0x03, 0xe7], [0x0b, 0xb7], [0x13, 0x88]])
    func malformedCloseIs1002(_ body: [UInt8]) {
        // 1-byte body; 1005, 1006, 1015 (reporting only); 1500, 0, 999, 2999, 5000 (unassigned).
        let events = Self.events(Self.clientFrame(0x8, body))
        #expect(Self.failure(events) == .badCloseFrame)
        #expect(Self.closeCode(events) == 1002)
    }

    @Test func closeReasonMustBeUTF8() {
        let events = Self.events(Self.clientFrame(0x8, [0x03, 0xe8, 0xc3, 0x28]))
        #expect(Self.failure(events) == .invalidUTF8)
        #expect(Self.closeCode(events) == 1007)
    }

    @Test func controlFramesAreShortAndWhole() {
        for opcode: UInt8 in [0x8, 0x9, 0xA] {
            let long = Self.events(Self.clientFrame(opcode, [UInt8](repeating: 0, count: 126)))
            #expect(Self.failure(long) == .controlFrameTooLong(126))
            #expect(Self.closeCode(long) == 1002)
            let fragmented = Self.events(Self.clientFrame(opcode, [], fin: false))
            #expect(Self.failure(fragmented) == .fragmentedControlFrame)
            #expect(Self.closeCode(fragmented) == 1002)
        }
    }

    // MARK: the reader: framing rules

    @Test func unmaskedClientFrameIs1002() {
        for opcode: UInt8 in [0x1, 0x2, 0x8, 0x9] {
            let events = Self.events(Self.clientFrame(opcode, [1, 2], masked: false))
            #expect(Self.failure(events) == .unmasked)
            #expect(Self.closeCode(events) == 1002)
        }
    }

    @Test func reservedBitsAndOpcodesAre1002() {
        for rsv: UInt8 in [1, 2, 4, 7] {
            let events = Self.events(Self.clientFrame(0x2, [1], rsv: rsv))
            #expect(Self.failure(events) == .reservedBits)
            #expect(Self.closeCode(events) == 1002)
        }
        for opcode: UInt8 in [3, 4, 5, 6, 7, 0xB, 0xC, 0xD, 0xE, 0xF] {
            let events = Self.events(Self.clientFrame(opcode, []))
            #expect(Self.failure(events) == .reservedOpcode(opcode))
            #expect(Self.closeCode(events) == 1002)
        }
    }

    @Test func lengthsMustBeMinimalAndInRange() {
        let sixteen = Self.events(Self.clientFrame(0x2, [1, 2, 3], rawLength: [126, 0, 3]))
        #expect(Self.failure(sixteen) == .nonMinimalLength)
        let sixtyFour = Self.events(Self.clientFrame(0x2, [1, 2, 3], rawLength: [127, 0, 0, 0, 0, 0, 0, 0xff, 0xff]))
        #expect(Self.failure(sixtyFour) == .nonMinimalLength)
        let top = Self.events(Self.clientFrame(0x2, [], rawLength: [127, 0x80, 0, 0, 0, 0, 0, 0, 0]))
        #expect(Self.failure(top) == .lengthTopBitSet)
        #expect(Self.closeCode(top) == 1002)
        // The largest 64-bit length is refused as too big, before any payload.
        let huge = Self.events(Self.clientFrame(0x2, [], rawLength: [127, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]))
        #expect(Self.closeCode(huge) == 1009)
    }

    @Test func fragmentedMessagesAreJoined() {
        let bytes = Self.clientFrame(0x1, Array("hel".utf8), fin: false) + Self.clientFrame(0x9, [42])
            + Self.clientFrame(0x0, Array("lo ".utf8), fin: false) + Self.clientFrame(0x0, Array("wörld".utf8))
        #expect(Self.events(bytes) == [.send([0x8A, 1, 42]), .message(.text, Array("hello wörld".utf8))])
        // A fragment may be empty.
        let empty = Self.clientFrame(0x2, [], fin: false) + Self.clientFrame(0x0, [])
        #expect(Self.events(empty) == [.message(.binary, [])])
    }

    @Test func continuationWithoutMessageAndInterleavedMessagesAre1002() {
        let orphan = Self.events(Self.clientFrame(0x0, [1]))
        #expect(Self.failure(orphan) == .unexpectedContinuation)
        #expect(Self.closeCode(orphan) == 1002)
        let interleaved = Self.events(Self.clientFrame(0x2, [1], fin: false) + Self.clientFrame(0x2, [2]))
        #expect(Self.failure(interleaved) == .expectedContinuation)
        #expect(Self.closeCode(interleaved) == 1002)
    }

    @Test func textMustBeUTF8() {
        let events = Self.events(Self.clientFrame(0x1, [0x68, 0xff, 0x69]))
        #expect(Self.failure(events) == .invalidUTF8)
        #expect(Self.closeCode(events) == 1007)
        // A character split across fragments is fine.
        let split = Self.clientFrame(0x1, [0xc3], fin: false) + Self.clientFrame(0x0, [0xa9])
        #expect(Self.events(split) == [.message(.text, [0xc3, 0xa9])])
    }

    /// The limit counts all fragments of a message and is checked at each frame's header,
    /// before its payload is read.
    @Test func messagesOverTheLimitAre1009() {
        let reader = WebSocketReader(maxMessageSize: 100, dataMessages: .deliver)
        #expect(Self.events(Self.clientFrame(0x2, [UInt8](repeating: 1, count: 100)), reader) == [.message(.binary, [UInt8](repeating: 1, count: 100))])
        let single = Self.events(Self.clientFrame(0x2, [UInt8](repeating: 1, count: 101)), reader)
        #expect(Self.failure(single) == .messageTooBig(101))
        #expect(Self.closeCode(single) == 1009)
        let fragments = Self.clientFrame(0x2, [UInt8](repeating: 1, count: 60), fin: false) + Self.clientFrame(0x0, [UInt8](repeating: 1, count: 41))
        #expect(Self.failure(Self.events(fragments, reader)) == .messageTooBig(101))
        // Refused at the header: the events are the same when the payload never comes.
        let headerOnly = Array(Self.clientFrame(0x2, [UInt8](repeating: 1, count: 101)).prefix(8))
        #expect(Self.closeCode(Self.events(headerOnly, reader)) == 1009)
    }

    /// The viewer's reader: a data message is refused with 1003 at its first header bytes.
    @Test func viewerRefusesDataWith1003() {
        let reader = WebSocketReader()
        for opcode: UInt8 in [0x1, 0x2] {
            let events = Self.events(Self.clientFrame(opcode, Array("hi".utf8)), reader)
            #expect(Self.failure(events) == .dataNotAccepted)
            #expect(Self.closeCode(events) == 1003)
            #expect(Self.events([0x80 | opcode], reader).count == 1)
        }
        // Pings and closes still work.
        #expect(Self.events(Self.clientFrame(0x9, [1]), reader) == [.send([0x8A, 1, 1])])
    }

    /// Everything after a failure is ignored, in the same push or later.
    @Test func nothingFollowsAFailure() {
        var reader = WebSocketReader()
        let events = reader.push(Self.clientFrame(0x9, [], masked: false) + Self.clientFrame(0x9, [1]))
        #expect(events.count == 1)
        #expect(Self.failure(events) == .unmasked)
        #expect(reader.isClosed)
        #expect(reader.push(Self.clientFrame(0x9, [])).isEmpty)
    }

    // MARK: random input

    /// Random bytes, in random pieces, never trap: they end in at most one close (the last
    /// event), every reply is a well-formed server frame, and the chunking does not change
    /// the events. Half the inputs start as a valid masked frame header so the fuzz gets past
    /// the first checks.
    @Test func randomBytesOnlyEverClose() {
        var random = SplitMix64(seed: 0x6e61_6c63_6173_74)
        for round in 0..<3000 {
            var bytes = (0..<Int(random.next() % 200)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            if round & 1 == 0, bytes.count > 1 {
                bytes[0] = bytes[0] & 0x8F
                bytes[1] |= 0x80
            }
            let mode: WebSocketReader.DataMessages = round & 2 == 0 ? .deliver : .reject
            var whole = WebSocketReader(maxMessageSize: 64, dataMessages: mode)
            let expected = whole.push(bytes)
            var pieces = WebSocketReader(maxMessageSize: 64, dataMessages: mode)
            var events: [WebSocketEvent] = []
            var i = 0
            while i < bytes.count {
                let n = 1 + Int(random.next() % 16)
                events += pieces.push(Array(bytes[i..<min(bytes.count, i + n)]))
                i += n
            }
            #expect(events == expected, "round \(round)")
            for (k, event) in expected.enumerated() {
                switch event {
                case .close(_, let reply, _):
                    #expect(k == expected.count - 1, "round \(round): a close is last")
                    #expect(reply.first == 0x88 && reply.count >= 2 && reply.count == 2 + Int(reply[1]))
                case .send(let reply):
                    #expect(reply.first == 0x8A && reply.count == 2 + Int(reply[1]))
                case .message(_, let payload):
                    #expect(mode == .deliver && payload.count <= 64)
                }
            }
        }
    }
}

/// A small deterministic generator, so a failing round fails on every run.
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
