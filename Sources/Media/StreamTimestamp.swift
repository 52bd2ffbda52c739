/// The nalcast timestamp: one SEI message (payload type 5, user data unregistered) in every
/// access unit, so readers get real capture times from a format that has none.
///
///     SEI payload (user_data_unregistered), all integers big-endian
///     +----------------------------------------------+
///     | uuid  0d64dd68-5973-44ac-9282-6e380b34dcd1   |  16 bytes
///     | version            u8   = 1                 |
///     | flags              u8   bit0 = keyframe     |
///     | sequence           u64  frame number        |  counts captured frames, gaps = drops
///     | capture_time_ns    u64  CLOCK_REALTIME ns   |  when the frame was captured
///     | pts_90k            u64  media time, 90 kHz  |  starts at 0 for the first frame
///     +----------------------------------------------+
///                                                      42 bytes in all
///
/// Decoders that do not know the UUID skip the message.
public struct StreamTimestamp: Sendable, Hashable {
    public static let uuid: [UInt8] = [
        0x0d, 0x64, 0xdd, 0x68, 0x59, 0x73, 0x44, 0xac,
        0x92, 0x82, 0x6e, 0x38, 0x0b, 0x34, 0xdc, 0xd1,
    ]
    public static let currentVersion: UInt8 = 1
    /// SEI payload type: user_data_unregistered.
    public static let payloadType = 5
    /// Size of the payload drawn above.
    public static let payloadSize = 42

    public var version: UInt8
    public var isKeyframe: Bool
    public var sequence: UInt64
    public var captureTimeNs: UInt64
    public var pts90k: UInt64

    public init(sequence: UInt64, captureTimeNs: UInt64, pts90k: UInt64, isKeyframe: Bool, version: UInt8 = StreamTimestamp.currentVersion) {
        self.version = version
        self.isKeyframe = isKeyframe
        self.sequence = sequence
        self.captureTimeNs = captureTimeNs
        self.pts90k = pts90k
    }

    /// Media time in seconds.
    public var seconds: Double { Double(pts90k) / 90_000 }

    /// The 42-byte user_data_unregistered payload (what x264's `extra_sei` takes).
    public var payload: [UInt8] {
        var out = StreamTimestamp.uuid
        out.reserveCapacity(StreamTimestamp.payloadSize)
        out.append(version)
        out.append(isKeyframe ? 1 : 0)
        for value in [sequence, captureTimeNs, pts90k] {
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
        }
        return out
    }

    /// Reads the payload of one user_data_unregistered message; nil when the UUID is not ours
    /// or the payload is too short.
    public init?(payload: some Collection<UInt8>) {
        var bytes = payload.makeIterator()
        self.init(reading: { bytes.next() })
    }

    /// Reads the fields drawn above in order, one byte a call of `next` (nil: no more): the
    /// one reader of the layout, for a payload (`init(payload:)`) and for the SEI read where
    /// it lies, emulation prevention bytes skipped (`init(sei:)`, in `H264`). Nil when the
    /// UUID is not ours or the bytes run out.
    @inlinable
    public init?(reading next: () -> UInt8?) {
        for expected in StreamTimestamp.uuid { guard next() == expected else { return nil } }
        func u64() -> UInt64? {
            var value: UInt64 = 0
            for _ in 0..<8 {
                guard let byte = next() else { return nil }
                value = (value << 8) | UInt64(byte)
            }
            return value
        }
        guard let version = next(), let flags = next(), let sequence = u64(), let capture = u64(), let pts = u64() else { return nil }
        self.init(sequence: sequence, captureTimeNs: capture, pts90k: pts, isKeyframe: flags & 1 != 0, version: version)
    }
}
