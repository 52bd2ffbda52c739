/// A frame rate as a fraction, e.g. 30000/1001.
public struct FrameRate: Sendable, Hashable, CustomStringConvertible {
    public let numerator: Int
    public let denominator: Int

    /// The slowest and fastest rates nalcast takes: a frame every 1000 s, 10 000 frames a
    /// second. Outside them a header is nonsense (and frame times would overflow).
    public static let minimumFramesPerSecond = 0.001
    public static let maximumFramesPerSecond = 10_000.0

    /// Nil unless both parts are positive and the rate is within the bounds above.
    public init?(numerator: Int, denominator: Int) {
        guard numerator > 0, denominator > 0 else { return nil }
        let fps = Double(numerator) / Double(denominator)
        guard fps >= FrameRate.minimumFramesPerSecond, fps <= FrameRate.maximumFramesPerSecond else { return nil }
        self.numerator = numerator
        self.denominator = denominator
    }

    /// A whole number of frames per second (must be positive).
    public init(_ fps: Int) {
        precondition(fps > 0, "frame rate must be positive")
        self.numerator = fps
        self.denominator = 1
    }

    /// Parses `30`, `29.97` (as 30000/1001), `30000/1001` or `30:1`.
    public init?(parsing text: String) {
        for separator in ["/", ":"] where text.contains(separator) {
            let parts = text.split(separator: Character(separator), omittingEmptySubsequences: false)
            guard parts.count == 2, let n = Int(parts[0]), let d = Int(parts[1]) else { return nil }
            self.init(numerator: n, denominator: d)
            return
        }
        if let n = Int(text) {
            self.init(numerator: n, denominator: 1)
            return
        }
        guard let value = Double(text), value > 0, value < 1_000_000 else { return nil }
        if abs(value * 1001 / 1000 - (value * 1001 / 1000).rounded()) < 0.001 && value.rounded() != value {
            self.init(numerator: Int((value * 1001 / 1000).rounded()) * 1000, denominator: 1001)
        } else {
            self.init(numerator: Int((value * 1000).rounded()), denominator: 1000)
        }
    }

    public var framesPerSecond: Double { Double(numerator) / Double(denominator) }

    /// Start time of frame `index` in nanoseconds, exact to the nanosecond (rounded down).
    public func nanoseconds(ofFrame index: Int64) -> Int64 {
        Int64(clamping: Int128(index) * 1_000_000_000 * Int128(denominator) / Int128(numerator))
    }

    /// Start time of frame `index` in 90 kHz ticks (rounded down).
    public func ticks90k(ofFrame index: Int64) -> UInt64 {
        UInt64(clamping: Int128(index) * 90_000 * Int128(denominator) / Int128(numerator))
    }

    public var description: String { denominator == 1 ? "\(numerator)" : "\(numerator)/\(denominator)" }
}
