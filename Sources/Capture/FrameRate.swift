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

    /// The one parser for a frame rate a person types (`--fps`, `--input-fps`, consume's
    /// `--frame-rate`): `30`, `30000/1001`, `30:1`, `12.5` (25/2), FFmpeg's `ntsc`, `pal`,
    /// `film` and `ntsc-film`. The NTSC decimals (23.976 or 23.98, 29.97, 47.952, 59.94,
    /// 119.88, and 14.985) stand for their exact N×1000/1001 rates, as every tool means them;
    /// any other decimal is taken exactly. Fractions are reduced.
    public init?(parsing input: String) {
        let text = input.filter { $0 != " " && $0 != "\t" }.lowercased()
        if let named = FrameRate.names[text] {
            self = named
            return
        }
        for separator in ["/", ":"] where text.contains(separator) {
            let parts = text.split(separator: Character(separator), omittingEmptySubsequences: false)
            guard parts.count == 2, let n = FrameRate.digits(parts[0]), let d = FrameRate.digits(parts[1]) else { return nil }
            self.init(reducing: n, d)
            return
        }
        let pieces = text.split(separator: ".", omittingEmptySubsequences: false)
        guard pieces.count <= 2, let whole = FrameRate.digits(pieces[0]) else { return nil }
        guard pieces.count == 2 else {
            self.init(reducing: whole, 1)
            return
        }
        let fraction = pieces[1]
        guard fraction.count <= 6, let fractionValue = fraction.isEmpty ? 0 : FrameRate.digits(fraction) else { return nil }
        var scale = 1
        for _ in 0..<fraction.count { scale *= 10 }
        let value = Double(whole) + Double(fractionValue) / Double(scale)
        for base in FrameRate.ntscBases where fractionValue != 0 && abs(value - Double(base) * 1000 / 1001) < 0.006 {
            self.init(numerator: base * 1000, denominator: 1001)
            return
        }
        self.init(reducing: whole * scale + fractionValue, scale)
    }

    /// The rates whose N×1000/1001 NTSC variants people write as decimals (29.97 for 30).
    private static let ntscBases = [15, 24, 30, 48, 60, 120, 240]
    /// FFmpeg's frame rate names (`-r ntsc`).
    private static let names: [String: FrameRate] = [
        "ntsc": FrameRate(numerator: 30000, denominator: 1001)!, "pal": FrameRate(25), "film": FrameRate(24),
        "ntsc-film": FrameRate(numerator: 24000, denominator: 1001)!, "qntsc": FrameRate(numerator: 30000, denominator: 1001)!,
        "qpal": FrameRate(25), "sntsc": FrameRate(numerator: 30000, denominator: 1001)!, "spal": FrameRate(25),
    ]

    /// Decimal digits only (no sign, no exponent), at most 9 of them.
    private static func digits(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.count <= 9, text.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int(text)
    }

    private init?(reducing numerator: Int, _ denominator: Int) {
        var a = numerator, b = denominator
        while b != 0 { (a, b) = (b, a % b) }
        guard a > 0 else { return nil }
        self.init(numerator: numerator / a, denominator: denominator / a)
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
