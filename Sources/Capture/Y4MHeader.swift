/// The stream header of a YUV4MPEG2 file: one text line, then `FRAME` lines each
/// followed by the raw planes.
///
///     YUV4MPEG2 W640 H360 F30000:1001 Ip A1:1 C420jpeg XYSCSS=420JPEG\n
///     FRAME\n  <Y plane><U plane><V plane>
///     FRAME Ixyz\n  <...>            (FRAME may carry parameters; nalcast ignores them)
///
///     W, H   width and height in pixels (required)
///     F      frame rate num:den (ffmpeg assumes 25:1 when absent)
///     I      interlacing: p progressive, t top first, b bottom first, m mixed, ? unknown
///     A      pixel aspect num:den (0:0 unknown)
///     C      colourspace: 420jpeg, 420paldv, 420mpeg2, 420 (chroma siting variants of
///            4:2:0), 422, 444, mono; high bit depths and alpha are refused
///     X      comment, ignored
public struct Y4MHeader: Sendable, Hashable {
    public enum Interlacing: Character, Sendable {
        case progressive = "p", topFirst = "t", bottomFirst = "b", mixed = "m", unknown = "?"
    }

    public var width: Int
    public var height: Int
    public var frameRate: FrameRate
    public var interlacing: Interlacing
    /// Pixel aspect ratio; (0, 0) when unknown.
    public var aspect: (numerator: Int, denominator: Int)
    /// The C token as written (`420jpeg` when absent).
    public var colourspace: String
    /// How the planes are laid out.
    public var pixelFormat: PixelFormat
    /// The X comments, in order.
    public var comments: [String]

    public static let signature = "YUV4MPEG2"

    /// Parses the header line (without its `\n`).
    public init(line: String) throws {
        let tokens = line.split(separator: " ", omittingEmptySubsequences: true)
        guard let first = tokens.first, first == Y4MHeader.signature else {
            throw CaptureError.y4mBadSignature(String(line.prefix(16)))
        }
        var width: Int?
        var height: Int?
        var rate = FrameRate(numerator: 25, denominator: 1)!
        var interlacing = Interlacing.progressive
        var aspect = (0, 0)
        var colourspace = "420jpeg"
        var comments: [String] = []

        func ratio(_ value: Substring, zeroAllowed: Bool) -> (Int, Int)? {
            let parts = value.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2, let n = Int(parts[0]), let d = Int(parts[1]), n >= 0, d >= 0 else { return nil }
            if n == 0 && d == 0 && zeroAllowed { return (0, 0) }
            guard n > 0, d > 0 else { return nil }
            return (n, d)
        }

        for token in tokens.dropFirst() {
            let tag = token.first!
            let value = token.dropFirst()
            switch tag {
            case "W":
                guard let w = Int(value), w > 0, w <= 16384 else { throw CaptureError.y4mBadField(.width, String(token)) }
                width = w
            case "H":
                guard let h = Int(value), h > 0, h <= 16384 else { throw CaptureError.y4mBadField(.height, String(token)) }
                height = h
            case "F":
                guard let (n, d) = ratio(value, zeroAllowed: false), let r = FrameRate(numerator: n, denominator: d) else {
                    throw CaptureError.y4mBadField(.frameRate, String(token))
                }
                rate = r
            case "I":
                guard value.count == 1, let i = Interlacing(rawValue: value.first!) else {
                    throw CaptureError.y4mBadField(.interlacing, String(token))
                }
                interlacing = i
            case "A":
                guard let a = ratio(value, zeroAllowed: true) else { throw CaptureError.y4mBadField(.aspect, String(token)) }
                aspect = a
            case "C":
                colourspace = String(value)
            case "X":
                comments.append(String(value))
            default:
                // Unknown tags are reserved for future use; readers must skip them.
                continue
            }
        }
        guard let width else { throw CaptureError.y4mMissingField(.width) }
        guard let height else { throw CaptureError.y4mMissingField(.height) }
        switch colourspace {
        case "420jpeg", "420paldv", "420mpeg2", "420": pixelFormat = .i420
        case "422": pixelFormat = .i422
        case "444": pixelFormat = .i444
        case "mono": pixelFormat = .gray
        case let c where c.hasPrefix("420") || c.hasPrefix("422") || c.hasPrefix("444") || c.hasPrefix("mono") || c.hasPrefix("411"):
            throw CaptureError.y4mUnsupportedColourspace(c)
        default:
            throw CaptureError.y4mBadField(.colourspace, "C" + colourspace)
        }
        self.width = width
        self.height = height
        self.frameRate = rate
        self.interlacing = interlacing
        self.aspect = aspect
        self.colourspace = colourspace
        self.comments = comments
    }

    public static func == (a: Y4MHeader, b: Y4MHeader) -> Bool {
        a.width == b.width && a.height == b.height && a.frameRate == b.frameRate && a.interlacing == b.interlacing
            && a.aspect == b.aspect && a.colourspace == b.colourspace && a.comments == b.comments
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(width)
        hasher.combine(height)
        hasher.combine(frameRate)
        hasher.combine(colourspace)
    }

    /// Bytes of one frame's planes (after its `FRAME` line).
    public var frameByteCount: Int { pixelFormat.frameByteCount(width: width, height: height) }
}
