#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CLibYUV

/// Turns any source frame into I420, the encoder's input, and optionally scales it down
/// so that its larger side is at most `maxSize` (libyuv `I420Scale`, box filter).
///
/// An I420 frame that needs no scaling passes through untouched (no copy). Output
/// buffers are reused once the previous output frame has been released, or, `inPlace`,
/// at once: then a frame whose damage (`FrameDamage`) is relative to the picture converted
/// last has only its damaged rectangles converted into that picture, the rest kept; and what
/// is converted into the picture before is first compared with it, band by band, so that
/// `convertIfChanged` can tell a frame that changed nothing there (a compositor sending the
/// same picture again, damage and all) from one that did.
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
    /// Pictures whose conversion gave, wherever it wrote, the bytes the picture held already had (inPlace).
    public private(set) var unchangedPictures: UInt64 = 0
    /// What the last conversion changed in the picture converted before it: known only in place,
    /// when the buffer held that picture (same size and format, not scaled) and so what was not
    /// written is that picture's. `.rects` are the rectangles written: from the first band of a
    /// compared rectangle that differed to its end, and whole rectangles converted after one did.
    /// `.none` when nothing was written (`convertIfChanged` gave nil). `.unknown` otherwise.
    public private(set) var lastChanges: PictureChanges = .unknown

    /// Rows converted at a time into `band` and compared with the picture held before they
    /// are written into it: 16 rows of 1920 pixels are 46 KB of I420, in the core's cache.
    static let bandRows = 16

    private var converted = ReusableBuffer()
    private var scaled = ReusableBuffer()
    private var band = ReusableBuffer()
    /// What the `converted` buffer holds (inPlace): the last picture converted, its size and
    /// format, and its number in its source's series when the source numbers its damage.
    private var held: (picture: UInt64?, width: Int, height: Int, format: PixelFormat, buffer: FrameBuffer)?

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
        try convert(frame, skippingUnchanged: false)!
    }

    /// As `convert`, but nil when the frame changed nothing in the picture converted before it
    /// (`inPlace`, a picture of the same size and format held): every rectangle converted (its
    /// damage, or the whole frame) gave the bytes already there. The picture held is then
    /// still the frame's picture, and there is nothing new to encode.
    public func convertIfChanged(_ frame: Frame) throws -> Frame? {
        try convert(frame, skippingUnchanged: true)
    }

    private func convert(_ frame: Frame, skippingUnchanged: Bool) throws -> Frame? {
        guard frame.width > 0, frame.height > 0 else { throw CaptureError.badSize(width: frame.width, height: frame.height) }
        guard frame.width % 2 == 0, frame.height % 2 == 0 else { throw CaptureError.oddSize(width: frame.width, height: frame.height) }
        let i420: Frame
        lastChanges = .unknown
        if frame.format == .i420 {
            i420 = frame
            held = nil
        } else {
            let changed: Bool
            (i420, changed) = try toI420(frame)
            if skippingUnchanged && !changed { return nil }
        }
        let (outW, outH) = outputSize(width: frame.width, height: frame.height)
        guard outW != frame.width || outH != frame.height else { return i420 }
        // The scaled picture is made whole again, and a changed rectangle's filter reaches past
        // its scaled edges: not known which of its macroblocks stayed.
        lastChanges = .unknown
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
        guard inPlace, let damage = src.damage, let held, let picture = held.picture, picture &+ 1 == damage.picture,
              holdsPrevious(of: src, in: buffer) else { return whole }
        let rects = damage.evenRects(width: src.width, height: src.height)
        guard rects.reduce(0, { $0 + $1.width * $1.height }) < src.width * src.height else { return whole }
        return rects
    }

    /// True when `buffer` holds the picture converted last, of `src`'s size and format (inPlace).
    private func holdsPrevious(of src: Frame, in buffer: FrameBuffer) -> Bool {
        guard inPlace, let held else { return false }
        return held.width == src.width && held.height == src.height && held.format == src.format && buffer === held.buffer
    }

    /// The frame in I420, and whether that changed anything: false only when the buffer held
    /// the picture before and every rectangle converted gave the bytes already there.
    private func toI420(_ src: Frame) throws -> (Frame, changed: Bool) {
        let dst = makeI420(like: src, width: src.width, height: src.height, into: &converted)
        let rects = regions(of: src, into: dst.buffer)
        if rects.count == 1, rects[0].width == src.width, rects[0].height == src.height { fullConversions += 1 } else { partialConversions += 1 }
        let comparable = holdsPrevious(of: src, in: dst.buffer)
        var changed = !comparable
        var written: [FrameDamage.Rect] = []
        held = nil
        for rect in rects {
            if changed {
                try convert(src, rect, into: dst, x: rect.x, y: rect.y)
                written.append(rect)
            } else if let from = try convertComparing(src, rect, into: dst) {
                changed = true
                written.append(FrameDamage.Rect(x: rect.x, y: from, width: rect.width, height: rect.y + rect.height - from))
            }
        }
        if inPlace { held = (src.damage?.picture, src.width, src.height, src.format, dst.buffer) }
        if !changed { unchangedPictures += 1 }
        lastChanges = !comparable ? .unknown : written.isEmpty ? .none : .rects(written)
        return (dst, changed)
    }

    /// Converts `rect` of `src` into the same place of `dst`, which holds the picture before:
    /// `bandRows` rows at a time into `band`, each compared with those rows of `dst`; from the
    /// first that differs on, written into `dst` (the rest of the rectangle straight in). The
    /// first row of the band that differed, or nil when the rectangle's bytes were already there
    /// (nothing written).
    private func convertComparing(_ src: Frame, _ rect: FrameDamage.Rect, into dst: Frame) throws -> Int? {
        let rows = Self.bandRows
        let scratch = Frame(width: rect.width, height: rows, format: .i420,
                            buffer: band.obtain(capacity: PixelFormat.i420.frameByteCount(width: rect.width, height: rows)),
                            planes: PixelFormat.i420.packedLayout(width: rect.width, height: rows), sequence: 0, captureTimeNs: 0, pts90k: 0)
        let end = rect.y + rect.height
        var y = rect.y
        while y < end {
            let part = FrameDamage.Rect(x: rect.x, y: y, width: rect.width, height: Swift.min(rows, end - y))
            try convert(src, part, into: scratch, x: 0, y: 0)
            if !Self.copyIfDifferent(scratch, into: dst, at: part) {
                y += part.height
                continue
            }
            let rest = FrameDamage.Rect(x: rect.x, y: y + part.height, width: rect.width, height: end - y - part.height)
            if rest.height > 0 { try convert(src, rest, into: dst, x: rest.x, y: rest.y) }
            return y
        }
        return nil
    }

    /// Copies the top-left `rect.width` x `rect.height` of the I420 `band` into `rect` of the
    /// I420 `dst` (even edges) when some byte differs. True when it did (and was copied).
    private static func copyIfDifferent(_ band: Frame, into dst: Frame, at rect: FrameDamage.Rect) -> Bool {
        /// Plane `i`'s rows and bytes in the rectangle, and its first byte in `dst` and in `band`.
        func plane(_ i: Int) -> (rows: Int, bytes: Int, to: UnsafeMutablePointer<UInt8>, from: UnsafeMutablePointer<UInt8>) {
            let d = i == 0 ? 1 : 2
            return (rect.height / d, rect.width / d, dst.pointer(plane: i) + rect.y / d * dst.stride(plane: i) + rect.x / d, band.pointer(plane: i))
        }
        let same = (0..<3).allSatisfy { i in
            let p = plane(i)
            return (0..<p.rows).allSatisfy { r in
                memcmp(p.to + r * dst.stride(plane: i), p.from + r * band.stride(plane: i), p.bytes) == 0
            }
        }
        if same { return false }
        for i in 0..<3 {
            let p = plane(i)
            for r in 0..<p.rows { memcpy(p.to + r * dst.stride(plane: i), p.from + r * band.stride(plane: i), p.bytes) }
        }
        return true
    }

    /// Converts one rectangle (even edges) of `src` into the I420 `dst` with its top-left
    /// corner at `x`, `y` (even).
    private func convert(_ src: Frame, _ rect: FrameDamage.Rect, into dst: Frame, x toX: Int, y toY: Int) throws {
        let (x, y) = (rect.x, rect.y)
        let w = Int32(rect.width)
        let h = Int32(rect.height)
        let dy = dst.pointer(plane: 0) + toY * dst.stride(plane: 0) + toX
        let du = dst.pointer(plane: 1) + toY / 2 * dst.stride(plane: 1) + toX / 2
        let dv = dst.pointer(plane: 2) + toY / 2 * dst.stride(plane: 2) + toX / 2
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
