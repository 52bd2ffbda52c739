import Media

/// The timestamp carried as an H.264 SEI message.
extension StreamTimestamp {
    /// A complete SEI NAL unit (4-byte start code, header, escaped message, trailing bits).
    public var seiNALUnit: NALUnit {
        var rbsp: [UInt8] = []
        SEI.appendMessageHeader(type: StreamTimestamp.payloadType, size: StreamTimestamp.payloadSize, to: &rbsp)
        rbsp.append(contentsOf: payload)
        rbsp.append(0x80)  // rbsp_stop_one_bit + alignment
        return NALUnit(escapedBody: [NALHeader(refIdc: 0, type: .sei).byte] + RBSP.escape(rbsp))
    }

    /// Finds our timestamp among the messages of an SEI NAL unit.
    /// Read in every access unit a relay passes on, so it is read where it lies: the
    /// messages are walked in the escaped bytes, emulation prevention bytes skipped on the
    /// way (a timestamp always has some: its integers' high bytes are zeros), with no copy
    /// of the RBSP and nothing allocated. The same answer as `SEI.messages` on the RBSP: the
    /// first user_data_unregistered message that is ours, whole.
    public init?(sei nal: NALUnit) {
        guard nal.type == .sei else { return nil }
        let found = nal.escapedPayload.withUnsafeBufferPointer { escaped -> StreamTimestamp? in
            var reader = UnescapingReader(escaped)
            while !reader.atTrailingBits {
                guard let type = reader.codedValue(), let size = reader.codedValue() else { return nil }
                let payload = reader
                if type == StreamTimestamp.payloadType, size >= StreamTimestamp.payloadSize, let stamp = reader.timestamp() {
                    // Ours only when the message is whole, as `SEI.messages` has it.
                    return reader.skip(size - StreamTimestamp.payloadSize) ? stamp : nil
                }
                reader = payload
                guard reader.skip(size) else { return nil }
            }
            return nil
        }
        guard let found else { return nil }
        self = found
    }
}

/// Reads an RBSP out of its escaped bytes one byte at a time: `00 00 03` gives `00 00`.
private struct UnescapingReader {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    var zeros = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    mutating func next() -> UInt8? {
        guard index < bytes.count else { return nil }
        var byte = bytes[index]
        index += 1
        if zeros >= 2 && byte == 3 {
            zeros = 0
            guard index < bytes.count else { return nil }
            byte = bytes[index]
            index += 1
        }
        zeros = byte == 0 ? zeros + 1 : 0
        return byte
    }

    /// No more messages: nothing left, or the stop bit's `80` with only zeros after it.
    var atTrailingBits: Bool {
        var rest = self
        guard let first = rest.next() else { return true }
        guard first == 0x80 else { return false }
        while let byte = rest.next() { if byte != 0 { return false } }
        return true
    }

    /// A payload type or size: a run of `FF` bytes, each adding 255, and the last byte.
    mutating func codedValue() -> Int? {
        var value = 0
        while let byte = next() {
            value += Int(byte)
            if byte != 0xFF { return value }
            if value > 1 << 24 { return nil }
        }
        return nil
    }

    /// Passes over `count` bytes; false when fewer are left.
    mutating func skip(_ count: Int) -> Bool {
        for _ in 0..<count { if next() == nil { return false } }
        return true
    }

    /// The 42 bytes of a timestamp payload (`StreamTimestamp`), nil when the UUID is not ours
    /// or the bytes run out.
    mutating func timestamp() -> StreamTimestamp? {
        StreamTimestamp(reading: { next() })
    }
}

/// SEI message framing (H.264 7.3.2.3): type and size as runs of 0xFF plus a last byte.
public enum SEI {
    public struct Message: Sendable {
        public let type: Int
        public let payload: ArraySlice<UInt8>
    }

    static func appendMessageHeader(type: Int, size: Int, to out: inout [UInt8]) {
        for var value in [type, size] {
            while value >= 255 {
                out.append(0xff)
                value -= 255
            }
            out.append(UInt8(value))
        }
    }

    /// Splits an SEI RBSP into its messages. Stops quietly at a truncated message. nalcast's
    /// own timestamp reading does not go through it (`StreamTimestamp(sei:)` walks the escaped
    /// bytes in place): it is the reference that reader is held to (ParameterSetTests, the
    /// `sei` fuzz target).
    public static func messages(rbsp: [UInt8]) -> [Message] {
        var out: [Message] = []
        var i = 0
        func readValue() -> Int? {
            var value = 0
            while i < rbsp.count {
                let b = rbsp[i]
                i += 1
                value += Int(b)
                if b != 0xff { return value }
                if value > 1 << 24 { return nil }
            }
            return nil
        }
        // more_rbsp_data: stop at the trailing bits (a lone 0x80 with only zeros after it).
        while i < rbsp.count && !(rbsp[i] == 0x80 && rbsp[(i + 1)...].allSatisfy { $0 == 0 }) {
            guard let type = readValue(), let size = readValue(), size <= rbsp.count - i else { break }
            out.append(Message(type: type, payload: rbsp[i..<(i + size)]))
            i += size
        }
        return out
    }
}
