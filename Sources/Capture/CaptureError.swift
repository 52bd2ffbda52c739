#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Everything that can go wrong between an input and a frame.
public enum CaptureError: Error, Hashable, CustomStringConvertible {
    /// The stream does not start with `YUV4MPEG2 `.
    case y4mBadSignature(String)
    /// A header field that cannot be read, e.g. `F30:0`.
    case y4mBadField(Y4MField, String)
    /// A required header field (W or H) is absent.
    case y4mMissingField(Y4MField)
    /// A valid colourspace that nalcast does not take (high bit depth, alpha).
    case y4mUnsupportedColourspace(String)
    /// The header line does not end within a sane length.
    case y4mHeaderTooLong
    /// The input ended inside the header line (no `\n`): `YUV4MPEG2 W320 H24` may have been
    /// `H240`, so nothing of it can be trusted.
    case y4mTruncatedHeader(String)
    /// The input ended after the header, before the first frame.
    case y4mNoFrames
    /// A frame does not start with a `FRAME` line.
    case y4mBadFrameHeader(frame: UInt64, line: String)
    /// The input ended inside a frame: `got` of `expected` bytes. The frames before it
    /// were delivered.
    case truncatedFrame(source: String, frame: UInt64, got: Int, expected: Int)
    /// A regular raw file whose size is not a whole number of frames.
    case rawSizeNotWholeFrames(path: String, fileSize: Int, frameSize: Int)
    /// A width or height that is not positive or too large.
    case badSize(width: Int, height: Int)
    /// 4:2:0 output needs even dimensions.
    case oddSize(width: Int, height: Int)
    /// A system call failed.
    case system(function: String, path: String, errno: Int32)
    /// A libyuv conversion returned an error.
    case conversion(function: String, code: Int32)

    public var description: String {
        switch self {
        case .y4mBadSignature(let s): "y4m: not a YUV4MPEG2 stream (starts with '\(s)')"
        case .y4mBadField(let field, let token): "y4m: bad \(field.rawValue) '\(token)'"
        case .y4mMissingField(let field): "y4m: header has no \(field.rawValue)"
        case .y4mUnsupportedColourspace(let c): "y4m: unsupported colourspace '\(c)' (8-bit 420*, 422, 444, mono only)"
        case .y4mHeaderTooLong: "y4m: header line too long"
        case .y4mTruncatedHeader(let s): "y4m: the input ended inside the header line '\(s)' (no newline after it): truncated"
        case .y4mNoFrames: "y4m: the input ended after the header, before the first frame"
        case .y4mBadFrameHeader(let frame, let line): "y4m: frame \(frame): expected 'FRAME', got '\(line)'"
        case .truncatedFrame(let source, let frame, let got, let expected):
            "\(source): truncated frame \(frame): input ended after \(got) of \(expected) bytes"
        case .rawSizeNotWholeFrames(let path, let fileSize, let frameSize):
            "raw: \(path): file size \(fileSize) is not a multiple of the frame size \(frameSize) (\(fileSize / frameSize) frames and \(fileSize % frameSize) bytes)"
        case .badSize(let w, let h): "bad frame size \(w)x\(h)"
        case .oddSize(let w, let h): "frame size \(w)x\(h) is odd: 4:2:0 needs even width and height"
        case .system(let function, let path, let errno): "\(function)(\(path)): \(String(cString: strerror(errno)))"
        case .conversion(let function, let code): "libyuv \(function) failed (\(code))"
        }
    }
}

/// Bytes of an input shown in a message: printable ASCII as is, every other byte as `\xNN`,
/// so a binary file never puts control characters on a terminal.
public func printableBytes(_ bytes: some Sequence<UInt8>) -> String {
    var out = ""
    for b in bytes {
        if b >= 0x20 && b < 0x7f {
            out.unicodeScalars.append(Unicode.Scalar(b))
        } else {
            let hex = String(b, radix: 16)
            out += "\\x" + (hex.count == 1 ? "0" : "") + hex
        }
    }
    return out
}
