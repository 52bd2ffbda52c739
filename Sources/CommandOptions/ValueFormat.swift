/// Parsers for the value formats of docs/architecture.md, "The command line".
public enum ValueFormat {
    /// What a frame rate option expects, for its usage error.
    public static let frameRateHint = "expected a frame rate such as 30, 29.97 or 30000/1001"

    public enum Duration: Equatable, Sendable {
        /// A number with its unit, in seconds (`0` alone counts as one).
        case seconds(Double)
        /// A number without a unit: frames for x264's keyint, else an error.
        case bare(Double)
        case invalid
    }

    /// `500ms`, `250us`, `5s`, `2m`, `1h`, `1.5s`; `0` needs no unit.
    public static func duration(_ text: String) -> Duration {
        let t = text.trimmed.lowercased()
        func number(_ s: Substring) -> Double? {
            guard !s.isEmpty, s.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }), let v = Double(s), v.isFinite else { return nil }
            return v
        }
        let units: [(String, Double)] = [("ms", 0.001), ("us", 0.000_001), ("s", 1), ("m", 60), ("h", 3600)]
        for (suffix, scale) in units where t.hasSuffix(suffix) {
            guard let v = number(t.dropLast(suffix.count)) else { return .invalid }
            return .seconds(v * scale)
        }
        guard let v = number(Substring(t)) else { return .invalid }
        return v == 0 ? .seconds(0) : .bare(v)
    }

    /// `6M`, `6000k`, `1.5G`, or a plain number: bits per second or bytes. Decimal multiples.
    public static func quantity(_ text: String) -> Int? {
        let t = text.trimmed
        guard let last = t.last else { return nil }
        let scale: Double
        var number = Substring(t)
        switch last {
        case "k", "K": scale = 1e3; number = number.dropLast()
        case "m", "M": scale = 1e6; number = number.dropLast()
        case "g", "G": scale = 1e9; number = number.dropLast()
        default: scale = 1
        }
        guard let v = Double(number), v.isFinite, v > 0, v * scale < 1e15 else { return nil }
        return Int((v * scale).rounded())
    }

    /// Binary multiples for sizes in bytes: `64k` = 65536, `8M` = 8 MiB.
    public static func byteSize(_ text: String) -> Int? {
        let t = text.trimmed
        guard let last = t.last else { return nil }
        var number = Substring(t)
        var scale: Double = 1
        switch last {
        case "k", "K": scale = 1024; number = number.dropLast()
        case "m", "M": scale = 1024 * 1024; number = number.dropLast()
        case "g", "G": scale = 1024 * 1024 * 1024; number = number.dropLast()
        default: break
        }
        guard let v = Double(number), v.isFinite, v > 0, v * scale < 1e15 else { return nil }
        return Int((v * scale).rounded())
    }

    /// `1280x720`.
    public static func frameSize(_ text: String) -> (width: Int, height: Int)? {
        let parts = text.lowercased().split(separator: "x")
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), w > 0, h > 0, w <= 16384, h <= 16384 else { return nil }
        return (w, h)
    }

    public static func positiveInt(_ text: String) -> Int? {
        guard let v = Int(text), v > 0 else { return nil }
        return v
    }

    public static func nonNegativeInt(_ text: String) -> Int? {
        guard let v = Int(text), v >= 0 else { return nil }
        return v
    }
}
