/// A point in media time, or a span of it, in ticks of the 90 kHz clock: the clock of the
/// timestamp SEI's `pts_90k`, and the time base of MPEG-TS (and a natural one for MP4 and
/// Matroska), so a time read from the stream reaches a segment's duration or a container's
/// timestamps without a trip through floating point.
///
/// Integer on purpose: frame steps such as 3003 ticks (29.97 fps) add up exactly, and cuts
/// (`--segment-duration`) compare exactly. Seconds appear only at the edges: parsing an
/// option (`seconds(_:)`) and printing (`secondsText`, `seconds`).
public struct MediaTime: Sendable, Hashable, Comparable, CustomStringConvertible {
    public static let ticksPerSecond: Int64 = 90_000
    public static let zero = MediaTime(ticks: 0)

    public var ticks: Int64

    /// The farthest from 0 a time taken from outside (a container's packet time, a timestamp
    /// SEI's `pts_90k`) may be: 2^53 ticks, 3 170 years. Times past it are taken as no time,
    /// so that the sums and differences made of them cannot overflow.
    public static let outsideLimit: Int64 = 1 << 53

    /// Whether `ticks` is within `outsideLimit` of 0.
    public static func isWithinLimit(_ ticks: Int64) -> Bool { ticks.magnitude <= UInt64(outsideLimit) }

    public init(ticks: Int64) {
        self.ticks = ticks
    }

    /// The timestamp SEI's `pts_90k` (values past `Int64.max` saturate).
    public init(pts90k: UInt64) {
        ticks = Int64(clamping: pts90k)
    }

    /// Seconds, rounded to the nearest tick (a NaN is zero; the infinities saturate).
    public static func seconds(_ seconds: Double) -> MediaTime {
        guard !seconds.isNaN else { return .zero }
        let scaled = (seconds * Double(ticksPerSecond)).rounded()
        if scaled >= 9.2e18 { return MediaTime(ticks: .max) }
        if scaled <= -9.2e18 { return MediaTime(ticks: .min) }
        return MediaTime(ticks: Int64(scaled))
    }

    /// A span of nanoseconds (of any clock), rounded down to whole ticks.
    public static func nanoseconds(_ ns: UInt64) -> MediaTime {
        // Split so that the product cannot overflow: 1 tick = 100 000 / 9 ns.
        let whole = ns / 100_000
        let rest = ns % 100_000
        return MediaTime(ticks: Int64(clamping: whole * 9 + rest * 9 / 100_000))
    }

    /// The time in seconds (for JSON fields and arithmetic at the edges).
    public var seconds: Double { Double(ticks) / Double(MediaTime.ticksPerSecond) }

    /// `5.000`: seconds with millisecond precision, rounded half up; negative times print
    /// as `0.000` (a duration never is).
    public var secondsText: String {
        let ms = ticks <= 0 ? 0 : (ticks / 90) + (ticks % 90 >= 45 ? 1 : 0)
        let frac = String(ms % 1000)
        return "\(ms / 1000)." + String(repeating: "0", count: 3 - frac.count) + frac
    }

    public var description: String { secondsText }

    public static func < (a: MediaTime, b: MediaTime) -> Bool { a.ticks < b.ticks }
    public static func + (a: MediaTime, b: MediaTime) -> MediaTime { MediaTime(ticks: a.ticks &+ b.ticks) }
    public static func - (a: MediaTime, b: MediaTime) -> MediaTime { MediaTime(ticks: a.ticks &- b.ticks) }
}

extension StreamTimestamp {
    /// `pts90k` as a `MediaTime`.
    public var mediaTime: MediaTime { MediaTime(pts90k: pts90k) }
}
