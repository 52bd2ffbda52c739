import Capture
/// A rectangle of the screen to capture, in root window pixels.
public struct X11Region: Sendable, Hashable, CustomStringConvertible {
    public let x: Int
    public let y: Int
    public let width: Int
    public let height: Int

    /// Any rectangle; `X11Source` checks it against the screen.
    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    /// Parses `X,Y,WxH` (e.g. `0,0,1280x720`). Width and height must be positive and even
    /// (4:2:0 video), the offset not negative.
    public init(parsing text: String) throws(X11Error) {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .badRegion(text) }
        let size = parts[2].split(separator: "x", omittingEmptySubsequences: false)
        guard size.count == 2,
              let x = Int(parts[0].trimmingSpaces), let y = Int(parts[1].trimmingSpaces),
              let w = Int(size[0].trimmingSpaces), let h = Int(size[1].trimmingSpaces),
              x >= 0, y >= 0, w > 0, h > 0, w % 2 == 0, h % 2 == 0,
              x + w <= 32767, y + h <= 32767
        else { throw .badRegion(text) }
        self.init(x: x, y: y, width: w, height: h)
    }

    /// True when the region lies entirely inside a `width`x`height` screen.
    public func fits(screenWidth: Int, screenHeight: Int) -> Bool {
        x >= 0 && y >= 0 && width > 0 && height > 0 && x + width <= screenWidth && y + height <= screenHeight
    }

    /// `WxH+X+Y`, as X geometry strings read.
    public var description: String { "\(width)x\(height)+\(x)+\(y)" }
}

private extension Substring {
    var trimmingSpaces: Substring {
        var s = self
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return s
    }
}
