/// What changed in a picture since the picture handed to the encoder before it, as whoever
/// made the picture knows it (`ColorConverter.lastChanges`, the capture pipeline's repeats).
/// `H264Encoder.encode(_:changes:)` tells x264 which 16x16 macroblocks are the same as in the
/// picture before (`X264_MBINFO_CONSTANT`), so that it copies them instead of analysing them.
///
/// Never claims less than what changed: a macroblock marked the same that was not would keep
/// the old pixels on every screen. When in doubt, `unknown`.
public enum PictureChanges: Sendable, Hashable {
    /// Anything may have changed.
    case unknown
    /// Nothing changed: the very pixels of the picture before.
    case none
    /// Only pixels inside these rectangles may have changed; all else is the picture before.
    case rects([FrameDamage.Rect])

    /// One byte per 16x16 macroblock of a `width` x `height` picture, row by row, each 1 when
    /// the macroblock holds no pixel of a changed rectangle and 0 otherwise; nil for `unknown`.
    /// A rectangle touching a macroblock at all makes it changed, so the 8x8 chroma of a
    /// macroblock (4:2:0) is covered with the 16x16 luma.
    public func macroblockMap(width: Int, height: Int) -> [UInt8]? {
        let columns = (width + 15) / 16, rows = (height + 15) / 16
        switch self {
        case .unknown: return nil
        case .none: return [UInt8](repeating: 1, count: columns * rows)
        case .rects(let rects):
            var map = [UInt8](repeating: 1, count: columns * rows)
            for r in rects {
                let x0 = Swift.max(0, r.x), y0 = Swift.max(0, r.y)
                let x1 = Swift.min(width, r.x + r.width), y1 = Swift.min(height, r.y + r.height)
                guard x1 > x0, y1 > y0 else { continue }
                for row in (y0 / 16)...((y1 - 1) / 16) {
                    for column in (x0 / 16)...((x1 - 1) / 16) { map[row * columns + column] = 0 }
                }
            }
            return map
        }
    }
}
