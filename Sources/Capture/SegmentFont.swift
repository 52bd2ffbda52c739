#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Seven-segment digits drawn as filled rectangles straight into a luma plane: a few
/// `memset`s per character, no glyph tables.
///
///      aaa
///     f   b
///      ggg
///     e   c
///      ddd
struct SegmentFont {
    /// Character cell width and height in pixels, and segment thickness.
    let width: Int
    let height: Int
    let thickness: Int

    init(height: Int) {
        self.height = Swift.max(height, 10)
        self.width = Swift.max(self.height / 2, 5)
        self.thickness = Swift.max(self.height / 9, 1)
    }

    /// Horizontal advance from one character to the next.
    var advance: Int { width + thickness * 2 }

    // Bits: a b c d e f g = 0...6.
    private static let digits: [UInt8] = [0x3f, 0x06, 0x5b, 0x4f, 0x66, 0x6d, 0x7d, 0x07, 0x7f, 0x6f]

    /// Draws `text` (digits, `:` and `.`) with its top left corner at (x, y) in value `luma`,
    /// clipped to a plane of `size` pixels.
    func draw(_ text: String, x: Int, y: Int, luma: UInt8, into plane: UnsafeMutablePointer<UInt8>, stride: Int,
              size: (width: Int, height: Int)) {
        let target = Target(plane: plane, stride: stride, width: size.width, height: size.height)
        var cx = x
        for ch in text.utf8 {
            switch ch {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                drawDigit(Int(ch - UInt8(ascii: "0")), x: cx, y: y, luma: luma, target: target)
                cx += advance
            case UInt8(ascii: ":"):
                fill(cx, y + height / 3 - thickness / 2, thickness, thickness, luma, target)
                fill(cx, y + 2 * height / 3 - thickness / 2, thickness, thickness, luma, target)
                cx += thickness * 3
            case UInt8(ascii: "."):
                fill(cx, y + height - thickness, thickness, thickness, luma, target)
                cx += thickness * 3
            default:
                cx += advance
            }
        }
    }

    /// Width in pixels that `draw` covers for `text`.
    func measure(_ text: String) -> Int {
        text.utf8.reduce(0) { $0 + ($1 == UInt8(ascii: ":") || $1 == UInt8(ascii: ".") ? thickness * 3 : advance) }
    }

    private func drawDigit(_ d: Int, x: Int, y: Int, luma: UInt8, target: Target) {
        let m = SegmentFont.digits[d]
        let t = thickness
        let half = height / 2
        if m & 0x01 != 0 { fill(x, y, width, t, luma, target) }                          // a
        if m & 0x02 != 0 { fill(x + width - t, y, t, half, luma, target) }               // b
        if m & 0x04 != 0 { fill(x + width - t, y + half, t, height - half, luma, target) } // c
        if m & 0x08 != 0 { fill(x, y + height - t, width, t, luma, target) }             // d
        if m & 0x10 != 0 { fill(x, y + half, t, height - half, luma, target) }           // e
        if m & 0x20 != 0 { fill(x, y, t, half, luma, target) }                           // f
        if m & 0x40 != 0 { fill(x, y + half - t / 2, width, t, luma, target) }           // g
    }

    private struct Target {
        let plane: UnsafeMutablePointer<UInt8>
        let stride: Int
        let width: Int
        let height: Int
    }

    private func fill(_ x: Int, _ y: Int, _ w: Int, _ h: Int, _ v: UInt8, _ target: Target) {
        let x0 = Swift.max(x, 0), x1 = Swift.min(x + w, target.width)
        let y0 = Swift.max(y, 0), y1 = Swift.min(y + h, target.height)
        guard x0 < x1, y0 < y1 else { return }
        for row in y0..<y1 { memset(target.plane + row * target.stride + x0, Int32(v), x1 - x0) }
    }
}
