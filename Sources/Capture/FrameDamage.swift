/// What changed in a source's picture since the picture it gave before it, as the compositor
/// told the source (wlroots' `copy_with_damage`): rectangles in pixels, each a superset of
/// what changed there. `ColorConverter(inPlace: true)` converts only these into the picture it
/// kept when that picture is the one before (`picture - 1`), and the whole frame otherwise.
public struct FrameDamage: Sendable, Hashable {
    public struct Rect: Sendable, Hashable {
        public var x, y, width, height: Int
        public init(x: Int, y: Int, width: Int, height: Int) {
            (self.x, self.y, self.width, self.height) = (x, y, width, height)
        }
    }

    /// The picture's number in its source's series, which counts every picture with pixels
    /// it gave, one after the other: the damage is relative to picture `picture - 1`.
    public var picture: UInt64
    public var rects: [Rect]

    public init(picture: UInt64, rects: [Rect]) {
        self.picture = picture
        self.rects = rects
    }

    /// The rectangles clipped to a `width` x `height` picture and widened to even edges (4:2:0
    /// takes a 2x2 block of pixels to one chroma sample), empty ones left out.
    public func evenRects(width: Int, height: Int) -> [Rect] {
        rects.compactMap { r in
            let x0 = Swift.max(0, r.x) & ~1, y0 = Swift.max(0, r.y) & ~1
            let x1 = Swift.min(width, (r.x + r.width + 1) & ~1), y1 = Swift.min(height, (r.y + r.height + 1) & ~1)
            guard x1 > x0, y1 > y0 else { return nil }
            return Rect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
        }
    }
}
