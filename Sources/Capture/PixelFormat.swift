/// The pixel layouts a `FrameSource` can deliver. The encoder takes `i420` only;
/// `ColorConverter` turns every other one into it.
///
///     i420  Y plane, then U and V at half width and half height (4:2:0 planar)
///     i422  Y, U, V; chroma at half width, full height (4:2:2 planar)
///     i444  Y, U, V; all at full size (4:4:4 planar)
///     nv12  Y plane, then one plane of interleaved U,V pairs at half height
///     gray  Y plane only (Y4M `mono`); chroma is neutral grey
///     bgra  one plane, bytes B,G,R,A per pixel (libyuv calls this "ARGB")
///     rgba  one plane, bytes R,G,B,A per pixel (libyuv calls this "ABGR")
///     argb  one plane, bytes A,R,G,B per pixel (PipeWire's xRGB; libyuv calls this "BGRA")
///     yuyv  one plane, bytes Y0,U,Y1,V per pixel pair (libyuv "YUY2")
///     rgb24 one plane, bytes R,G,B per pixel (libyuv calls this "RAW")
///     bgr24 one plane, bytes B,G,R per pixel (libyuv calls this "RGB24")
public enum PixelFormat: String, Sendable, CaseIterable, CustomStringConvertible {
    case i420, i422, i444, nv12, gray, bgra, rgba, argb, yuyv, rgb24, bgr24

    public var description: String { rawValue }

    /// FFmpeg's name for the same layout (`-pix_fmt`).
    public var ffmpegName: String {
        switch self {
        case .i420: "yuv420p"
        case .i422: "yuv422p"
        case .i444: "yuv444p"
        case .yuyv: "yuyv422"
        case .nv12, .gray, .bgra, .rgba, .argb, .rgb24, .bgr24: rawValue
        }
    }

    /// Our name or FFmpeg's (`yuv420p`, `yuyv422`, ...; `yuvj420p` too: the same planes).
    public init?(name: String) {
        let text = name.lowercased()
        if let format = PixelFormat(rawValue: text) ?? PixelFormat.allCases.first(where: { $0.ffmpegName == text }) {
            self = format
        } else if text == "yuvj420p" {
            self = .i420
        } else {
            return nil
        }
    }

    /// Every accepted name, for error messages: `i420 (yuv420p), ..., nv12, ...`.
    public static var acceptedNames: String {
        allCases.map { $0.ffmpegName == $0.rawValue ? $0.rawValue : "\($0.rawValue) (\($0.ffmpegName))" }.joined(separator: ", ")
    }

    /// The plane layout of a tightly packed frame of this format (stride = row bytes),
    /// as a file or pipe carries it.
    public func packedLayout(width: Int, height: Int) -> [Plane] {
        let cw = (width + 1) / 2
        let ch = (height + 1) / 2
        var planes: [Plane] = []
        var offset = 0
        func add(_ stride: Int, _ rows: Int) {
            planes.append(Plane(offset: offset, stride: stride, rows: rows))
            offset += stride * rows
        }
        switch self {
        case .i420:
            add(width, height); add(cw, ch); add(cw, ch)
        case .i422:
            add(width, height); add(cw, height); add(cw, height)
        case .i444:
            add(width, height); add(width, height); add(width, height)
        case .nv12:
            add(width, height); add(cw * 2, ch)
        case .gray:
            add(width, height)
        case .bgra, .rgba, .argb:
            add(width * 4, height)
        case .yuyv:
            add(cw * 4, height)
        case .rgb24, .bgr24:
            add(width * 3, height)
        }
        return planes
    }

    /// Bytes of one tightly packed frame.
    public func frameByteCount(width: Int, height: Int) -> Int {
        packedLayout(width: width, height: height).reduce(0) { $0 + $1.stride * $1.rows }
    }
}
