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
///     yuyv  one plane, bytes Y0,U,Y1,V per pixel pair (libyuv "YUY2")
public enum PixelFormat: String, Sendable, CaseIterable, CustomStringConvertible {
    case i420, i422, i444, nv12, gray, bgra, rgba, yuyv

    public var description: String { rawValue }

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
        case .bgra, .rgba:
            add(width * 4, height)
        case .yuyv:
            add(cw * 4, height)
        }
        return planes
    }

    /// Bytes of one tightly packed frame.
    public func frameByteCount(width: Int, height: Int) -> Int {
        packedLayout(width: width, height: height).reduce(0) { $0 + $1.stride * $1.rows }
    }
}
