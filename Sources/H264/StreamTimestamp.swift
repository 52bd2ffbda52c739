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
    public init?(sei nal: NALUnit) {
        guard nal.type == .sei else { return nil }
        guard let found = SEI.messages(rbsp: nal.rbsp()).lazy
            .filter({ $0.type == StreamTimestamp.payloadType })
            .compactMap({ StreamTimestamp(payload: $0.payload) }).first else { return nil }
        self = found
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

    /// Splits an SEI RBSP into its messages. Stops quietly at a truncated message.
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
