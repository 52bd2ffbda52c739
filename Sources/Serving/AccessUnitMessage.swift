import Media

/// One access unit as the browser page receives it: one binary WebSocket message made of an
/// 18-byte header and the access unit's Annex-B bytes (start codes included, as on the TCP
/// stream). Integers big-endian, like the timestamp SEI:
///
/// ```
///  version            u8   = 1
///  flags              u8   bit 0 = keyframe: an IDR with its SPS and PPS in front (a
///                          decoder can start here); bit 1 = capture time known; others 0
///  capture_time_us    u64  CLOCK_REALTIME µs when the frame was captured (the timestamp
///                          SEI's capture_time_ns / 1000); 0 when bit 1 is clear
///  pts_90k            u64  media time in 90 kHz ticks (the SEI's pts_90k, else the
///                          consumer's media clock)
///  access unit        ...  Annex-B bytes, to the end of the message
/// ```
///
/// The page hands the bytes to WebCodecs (`EncodedVideoChunk` with `type` from bit 0,
/// `timestamp` = pts_90k × 100 / 9 µs) and can show the glass-to-glass latency as its own
/// `Date.now()` × 1000 minus capture_time_us when both clocks are synchronised. A page
/// refuses a version it does not know.
public struct AccessUnitMessage: Sendable, Equatable {
    public static let currentVersion: UInt8 = 1
    public static let headerSize = 18

    public var version: UInt8
    public var isKeyframe: Bool
    /// Microseconds of the system clock (CLOCK_REALTIME) at capture; nil when unknown.
    public var captureTimeMicros: UInt64?
    public var pts90k: UInt64

    public init(isKeyframe: Bool, captureTimeMicros: UInt64?, pts90k: UInt64, version: UInt8 = AccessUnitMessage.currentVersion) {
        self.version = version
        self.isKeyframe = isKeyframe
        self.captureTimeMicros = captureTimeMicros
        self.pts90k = pts90k
    }

    /// The header for `unit`: keyframe when it is an IDR (send it with `nalUnitsForEntry`, so
    /// its SPS and PPS are in front), capture time and pts from its timestamp SEI; without
    /// one (a stream from another encoder), no capture time and `mediaTime` as the pts
    /// (negative times are sent as 0).
    public init(_ unit: AccessUnit, mediaTime: MediaTime) {
        let pts = unit.timestamp?.pts90k ?? UInt64(max(0, mediaTime.ticks))
        self.init(isKeyframe: unit.isIDR, captureTimeMicros: unit.timestamp.map { $0.captureTimeNs / 1000 }, pts90k: pts)
    }

    /// The 18 header bytes.
    public var header: [UInt8] {
        var bytes: [UInt8] = [version, (isKeyframe ? 0x01 : 0) | (captureTimeMicros != nil ? 0x02 : 0)]
        bytes.reserveCapacity(AccessUnitMessage.headerSize)
        for value in [captureTimeMicros ?? 0, pts90k] {
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
        }
        return bytes
    }

    /// Reads a header (what the page does); nil when too short, of another version, or with
    /// flag bits this version does not define.
    public init?(header bytes: some Collection<UInt8>) {
        let b = Array(bytes.prefix(AccessUnitMessage.headerSize))
        guard b.count == AccessUnitMessage.headerSize, b[0] == AccessUnitMessage.currentVersion, b[1] & 0xFC == 0 else { return nil }
        func u64(_ at: Int) -> UInt64 { b[at..<(at + 8)].reduce(0) { $0 << 8 | UInt64($1) } }
        self.init(isKeyframe: b[1] & 0x01 != 0, captureTimeMicros: b[1] & 0x02 != 0 ? u64(2) : nil, pts90k: u64(10), version: b[0])
    }

    /// The whole WebSocket message as the chunks of one gathered write: the frame header and
    /// this header in one chunk, then each NAL unit's wire bytes, shared, not copied.
    public func frame(_ nalUnits: [NALUnit]) -> [ArraySlice<UInt8>] {
        let length = AccessUnitMessage.headerSize + nalUnits.reduce(0) { $0 + $1.wire.count }
        return [(WebSocketFrame.header(.binary, payloadLength: length) + header)[...]] + nalUnits.map(\.wire)
    }
}
