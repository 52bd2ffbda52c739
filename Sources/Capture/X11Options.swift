/// What `X11Source` captures and how.
public struct X11Options: Sendable, Hashable {
    /// The display, e.g. `:1` or `host:0.0`; nil takes `$DISPLAY`.
    public var display: String?
    /// A part of the screen; nil captures the whole root window (and follows its size).
    public var region: X11Region?
    /// Draw the pointer into the frames (XFixes cursor image), like FFmpeg's x11grab.
    public var drawCursor = true
    /// Read frames through MIT-SHM when the server offers it. False forces plain
    /// `GetImage` (what a remote display gets anyway): for tests and comparison.
    public var useSharedMemory = true
    /// Grab at most this many frames a second, on a timer.
    public var frameRate = FrameRate(30)

    public init(display: String? = nil, region: X11Region? = nil, drawCursor: Bool = true,
                useSharedMemory: Bool = true, frameRate: FrameRate = FrameRate(30)) {
        self.display = display
        self.region = region
        self.drawCursor = drawCursor
        self.useSharedMemory = useSharedMemory
        self.frameRate = frameRate
    }
}
