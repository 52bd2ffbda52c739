/// The numbering and timing of a source that sends a frame when its picture changed and,
/// while nothing changes, a repeat: a frame with no pixels (`Frame.isRepeat`: the encoder
/// encodes the picture it kept) every `idleInterval`, or at once when woken (a reader
/// joined and wants an IDR). What X11's `--capture damage`, PipeWire's and wlroots'
/// sources share: each frame's sequence counts every frame sent, its pts is the time since
/// the first. Pure: the source gives it the time (CLOCK_MONOTONIC ns).
public struct ChangeDrivenFrames {
    /// How long a still picture goes without a repeat (`--idle-fps`); nil for never.
    public let idleInterval: Int64?
    /// Frames sent because the picture changed, and repeats sent while it did not.
    public private(set) var changed: UInt64 = 0
    public private(set) var repeats: UInt64 = 0
    /// When the first frame and the last one were sent.
    public private(set) var firstSent: Int64?
    public private(set) var lastSent: Int64 = 0
    private let noPixels = FrameBuffer(capacity: 0)

    /// `idleRate`: repeats a second while nothing changes (0: none).
    public init(idleRate: Double) {
        idleInterval = idleRate > 0 ? Int64(1e9 / idleRate) : nil
    }

    /// True once a frame went out: before it, the source waits for its first picture.
    public var started: Bool { firstSent != nil }

    /// True when the still picture is due again: the idle interval has passed since the
    /// last frame sent.
    public func idleRepeatDue(at now: Int64) -> Bool {
        guard started, let idleInterval else { return false }
        return now >= lastSent + idleInterval
    }

    /// When the next repeat falls due; nil while none will (not started, or no idle rate).
    public var nextRepeat: Int64? {
        guard started, let idleInterval else { return nil }
        return lastSent + idleInterval
    }

    /// A frame of the changed picture, numbered and timed.
    public mutating func changed(_ frame: Frame, at now: Int64) -> Frame {
        changed += 1
        return send(frame, at: now)
    }

    /// A repeat of the last picture (`width`x`height` in `format`, no pixels), numbered and
    /// timed; its capture time is now.
    public mutating func repeated(width: Int, height: Int, format: PixelFormat, captureTimeNs: UInt64, at now: Int64) -> Frame {
        repeats += 1
        var frame = Frame(width: width, height: height, format: format, buffer: noPixels, planes: [],
                          sequence: 0, captureTimeNs: captureTimeNs, pts90k: 0)
        frame.isRepeat = true
        return send(frame, at: now)
    }

    private mutating func send(_ frame: Frame, at now: Int64) -> Frame {
        var frame = frame
        let first = firstSent ?? now
        firstSent = first
        frame.sequence = changed + repeats - 1
        frame.pts90k = UInt64((now - first) / 1000 * 9 / 100)
        lastSent = now
        return frame
    }
}
