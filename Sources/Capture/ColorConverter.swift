import CLibYUV

/// Turns any source frame into I420, the encoder's input, and optionally scales it down
/// so that its larger side is at most `maxSize` (libyuv `I420Scale`, box filter).
///
/// An I420 frame that needs no scaling passes through untouched (no copy). Output
/// buffers are reused once the previous output frame has been released, or, `inPlace`,
/// at once: then a frame whose damage (`FrameDamage`) is relative to the picture converted
/// last has only its damaged rectangles converted into that picture, the rest kept.
///
/// libyuv names packed RGB formats by the order of a little-endian 32-bit word, so its
/// "ARGB" is B,G,R,A in memory (our `bgra`) and its "ABGR" is R,G,B,A (our `rgba`).
///
/// Not `Sendable`: lives on the capture thread.
public final class ColorConverter {
    /// Larger side of the output at most this many pixels; nil keeps the input size.
    public let maxSize: Int?
    /// Every picture is written into the same buffers, also while the last one is still held:
    /// for a holder that only ever uses the latest picture (the capture pipeline's kept picture
    /// for a change-driven source's repeats), which is what lets damage be converted alone.
    public let inPlace: Bool
    /// Pictures converted by damage alone, and in whole.
    public private(set) var partialConversions: UInt64 = 0
    public private(set) var fullConversions: UInt64 = 0

    private var converted = ReusableBuffer()
    private var scaled = ReusableBuffer()
    /// What the `converted` buffer holds (inPlace): the source's picture number, its size and format.
    private var held: (picture: UInt64, width: Int, height: Int, format: PixelFormat, buffer: FrameBuffer)?

    public init(maxSize: Int? = nil, inPlace: Bool = false) {
        self.maxSize = maxSize
        self.inPlace = inPlace
    }

    /// The output size for an input size: the input itself, or scaled so the larger side
    /// is at most `maxSize`, aspect kept, both sides even (at least 2).
    public func outputSize(width: Int, height: Int) -> (width: Int, height: Int) {
        guard let maxSize, Swift.max(width, height) > maxSize else { return (width, height) }
        let larger = Double(Swift.max(width, height))
        func even(_ side: Int) -> Int {
            let scaledSide = Double(side) * Double(maxSize) / larger
            return Swift.max(2, Int((scaledSide / 2).rounded()) * 2)
        }
        return (Swift.min(even(width), maxSize & ~1), Swift.min(even(height), maxSize & ~1))
    }

    /// The frame as I420 (scaled if asked), with the input's sequence and times.
    /// Throws `CaptureError.oddSize` for odd dimensions: 4:2:0 cannot carry them.
    public func convert(_ frame: Frame) throws -> Frame {
        guard frame.width > 0, frame.height > 0 else { throw CaptureError.badSize(width: frame.width, height: frame.height) }
        guard frame.width % 2 == 0, frame.height % 2 == 0 else { throw CaptureError.oddSize(width: frame.width, height: frame.height) }
        let i420: Frame
        if frame.format == .i420 {
            i420 = frame
            held = nil
        } else {
            i420 = try toI420(frame)
        }
        let (outW, outH) = outputSize(width: frame.width, height: frame.height)
        guard outW != frame.width || outH != frame.height else { return i420 }
        return try scale(i420, width: outW, height: outH)
    }

    private func makeI420(like frame: Frame, width: Int, height: Int, into reusable: inout ReusableBuffer) -> Frame {
        let planes = PixelFormat.i420.packedLayout(width: width, height: height)
        let capacity = PixelFormat.i420.frameByteCount(width: width, height: height)
        let buffer = inPlace ? reusable.obtainShared(capacity: capacity) : reusable.obtain(capacity: capacity)
        return Frame(width: width, height: height, format: .i420, buffer: buffer, planes: planes,
                     sequence: frame.sequence, captureTimeNs: frame.captureTimeNs, pts90k: frame.pts90k)
    }

    /// The rectangles to convert: the frame's damage when it follows the picture held (and
    /// covers less than the whole), else the whole frame.
    private func regions(of src: Frame, into buffer: FrameBuffer) -> [FrameDamage.Rect] {
        let whole = [FrameDamage.Rect(x: 0, y: 0, width: src.width, height: src.height)]
        guard inPlace, let damage = src.damage, let held, held.picture &+ 1 == damage.picture,
              held.width == src.width, held.height == src.height, held.format == src.format,
              buffer === held.buffer else { return whole }
        let rects = damage.evenRects(width: src.width, height: src.height)
        guard rects.reduce(0, { $0 + $1.width * $1.height }) < src.width * src.height else { return whole }
        return rects
    }

    private func toI420(_ src: Frame) throws -> Frame {
        let dst = makeI420(like: src, width: src.width, height: src.height, into: &converted)
        let rects = regions(of: src, into: dst.buffer)
        if rects.count == 1, rects[0].width == src.width, rects[0].height == src.height { fullConversions += 1 } else { partialConversions += 1 }
        held = nil
        for rect in rects { try convert(src, rect, into: dst) }
        if inPlace, let damage = src.damage {
            held = (damage.picture, src.width, src.height, src.format, dst.buffer)
        }
        return dst
    }

    /// Converts one rectangle (even edges) of `src` into the same place of `dst`.
    private func convert(_ src: Frame, _ rect: FrameDamage.Rect, into dst: Frame) throws {
        let (x, y) = (rect.x, rect.y)
        let w = Int32(rect.width)
        let h = Int32(rect.height)
        let dy = dst.pointer(plane: 0) + y * dst.stride(plane: 0) + x
        let du = dst.pointer(plane: 1) + y / 2 * dst.stride(plane: 1) + x / 2
        let dv = dst.pointer(plane: 2) + y / 2 * dst.stride(plane: 2) + x / 2
        let sy = Int32(dst.stride(plane: 0)), su = Int32(dst.stride(plane: 1)), sv = Int32(dst.stride(plane: 2))
        func s(_ i: Int) -> Int32 { Int32(src.stride(plane: i)) }
        /// Plane `i` of the source at the rectangle: `bytes` per pixel across, rows divided by `rowDivisor`.
        func p(_ i: Int, _ bytes: Int, columnDivisor: Int = 1, rowDivisor: Int = 1) -> UnsafeMutablePointer<UInt8> {
            src.pointer(plane: i) + y / rowDivisor * src.stride(plane: i) + x / columnDivisor * bytes
        }
        let function: String
        let rc: Int32
        switch src.format {
        case .i420:
            function = "I420Copy"
            rc = I420Copy(p(0, 1), s(0), p(1, 1, columnDivisor: 2, rowDivisor: 2), s(1), p(2, 1, columnDivisor: 2, rowDivisor: 2), s(2),
                          dy, sy, du, su, dv, sv, w, h)
        case .i422:
            function = "I422ToI420"
            rc = I422ToI420(p(0, 1), s(0), p(1, 1, columnDivisor: 2), s(1), p(2, 1, columnDivisor: 2), s(2), dy, sy, du, su, dv, sv, w, h)
        case .i444:
            function = "I444ToI420"
            rc = I444ToI420(p(0, 1), s(0), p(1, 1), s(1), p(2, 1), s(2), dy, sy, du, su, dv, sv, w, h)
        case .nv12:
            function = "NV12ToI420"
            rc = NV12ToI420(p(0, 1), s(0), p(1, 1, rowDivisor: 2), s(1), dy, sy, du, su, dv, sv, w, h)
        case .gray:
            function = "I400ToI420"
            rc = I400ToI420(p(0, 1), s(0), dy, sy, du, su, dv, sv, w, h)
        case .bgra:
            function = "ARGBToI420"
            rc = ARGBToI420(p(0, 4), s(0), dy, sy, du, su, dv, sv, w, h)
        case .rgba:
            function = "ABGRToI420"
            rc = ABGRToI420(p(0, 4), s(0), dy, sy, du, su, dv, sv, w, h)
        case .argb:
            function = "BGRAToI420"
            rc = BGRAToI420(p(0, 4), s(0), dy, sy, du, su, dv, sv, w, h)
        case .yuyv:
            function = "YUY2ToI420"
            rc = YUY2ToI420(p(0, 2), s(0), dy, sy, du, su, dv, sv, w, h)
        case .rgb24:
            function = "RAWToI420"
            rc = RAWToI420(p(0, 3), s(0), dy, sy, du, su, dv, sv, w, h)
        case .bgr24:
            function = "RGB24ToI420"
            rc = RGB24ToI420(p(0, 3), s(0), dy, sy, du, su, dv, sv, w, h)
        }
        guard rc == 0 else { throw CaptureError.conversion(function: function, code: rc) }
    }

    private func scale(_ src: Frame, width: Int, height: Int) throws -> Frame {
        let dst = makeI420(like: src, width: width, height: height, into: &scaled)
        let rc = I420Scale(src.pointer(plane: 0), Int32(src.stride(plane: 0)),
                           src.pointer(plane: 1), Int32(src.stride(plane: 1)),
                           src.pointer(plane: 2), Int32(src.stride(plane: 2)),
                           Int32(src.width), Int32(src.height),
                           dst.pointer(plane: 0), Int32(dst.stride(plane: 0)),
                           dst.pointer(plane: 1), Int32(dst.stride(plane: 1)),
                           dst.pointer(plane: 2), Int32(dst.stride(plane: 2)),
                           Int32(width), Int32(height), FilterMode(rawValue: UInt32(CLibYUV_filter_box())))
        guard rc == 0 else { throw CaptureError.conversion(function: "I420Scale", code: rc) }
        return dst
    }
}
