/// Where frames come from: the screen, a test pattern, a Y4M or raw stream.
///
/// Sources are not `Sendable`: each lives on the capture thread, which calls
/// `nextFrame()` in a loop.
public protocol FrameSource: AnyObject {
    /// The nominal rate the source produces frames at.
    var frameRate: FrameRate { get }
    /// Frame width in pixels (of the next frame; a live source may change it).
    var width: Int { get }
    /// Frame height in pixels.
    var height: Int { get }
    /// Pixel layout of the frames it delivers.
    var pixelFormat: PixelFormat { get }
    /// True when frames happen in real time (screen, paced test pattern): the pacer then
    /// goes by capture time, else by media time.
    var isLive: Bool { get }
    /// The next frame; nil at the end of the input. Blocks until it is available.
    func nextFrame() throws -> Frame?
    /// True when the source itself keeps to the frame rate and sends frames only when the
    /// picture changed (variable frame rate, with repeats): no pacer behind it.
    var isChangeDriven: Bool { get }
    /// What interrupts the source's wait, for a source that can wait long (nil otherwise).
    var wakeUp: CaptureWakeUp? { get }
    /// True when the frame `nextFrame()` last returned is known to be the input's last (a
    /// regular file read to its end), so that its access unit can end the stream.
    var isAtEnd: Bool { get }
}

extension FrameSource {
    public var isChangeDriven: Bool { false }
    public var wakeUp: CaptureWakeUp? { nil }
    public var isAtEnd: Bool { false }
}
