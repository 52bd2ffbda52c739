import Clocks
import Capture
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CWlr

/// What can go wrong with wlroots' screencopy: no compositor or library (69), one without
/// screencopy (69, saying to use the portal), no output of the name asked for (66, listing
/// those there are), a copy that cannot be made.
public enum WlrError: Error, Hashable, CustomStringConvertible {
    case unavailable(String)
    case noSuchOutput(String)
    case failed(String)

    public var description: String {
        switch self {
        case .unavailable(let why), .noSuchOutput(let why), .failed(let why): why
        }
    }
}

/// One output of a wlroots compositor (sway, Hyprland, river, Wayfire), by its name (as
/// `swaymsg -t get_outputs` lists them: wl_output's name, or xdg-output's), or its first, through
/// `zwlr_screencopy_manager_v1`, as grim and wf-recorder read it, without a portal: each copy
/// is asked with `copy_with_damage`, which the compositor answers once the output changed, so
/// frames come on change, at most `frameRate` a second, with X11's keep-alive. The copy lands
/// in one of two buffers of a memfd shared with the compositor, and the frame points into it
/// (no copy of ours, as X11's shared segment): the next capture is asked at once and its copy,
/// into the other buffer, as soon as the compositor has described the buffer (the connection's
/// own thread answers it, during the encode), and a frame's buffer goes back to the compositor when the frame is released. A new output size comes as the next copy's buffer size
/// (the encoder reopens: a new SPS). The compositor exiting ends the frames (nil).
///
/// Not `Sendable`: it lives on the capture thread, which takes the frames; the connection's
/// own thread (`nalcast-wlr`, in the `CWlr` shim) reads and answers the compositor.
public final class WlrSource: FrameSource {
    public let frameRate: FrameRate
    public let idleRate: Double
    public var pixelFormat: PixelFormat { .bgra }
    public var isLive: Bool { true }
    public var isChangeDriven: Bool { true }
    public let wakeUp: CaptureWakeUp? = CaptureWakeUp()
    public private(set) var width = 0
    public private(set) var height = 0
    public var changedFrames: UInt64 { frames.changed }
    public var repeatFrames: UInt64 { frames.repeats }
    public private(set) var endReason: String?
    public let version: UInt32
    /// The output's name as asked for, nil for the first output.
    public let outputName: String?

    private let connection: SharedHandle
    private var client: OpaquePointer { connection.pointer }
    private let log: (@Sendable (String) -> Void)?
    private var frames: ChangeDrivenFrames
    private var lastGrab: Int64 = 0

    public init(display: String? = nil, output: String? = nil, drawCursor: Bool = true, frameRate: FrameRate = FrameRate(30),
                idleRate: Double = 1, log: (@Sendable (String) -> Void)? = nil) throws(WlrError) {
        self.frameRate = frameRate
        outputName = output
        self.idleRate = idleRate
        frames = ChangeDrivenFrames(idleRate: idleRate)
        self.log = log
        var error = [CChar](repeating: 0, count: 512)
        var code: Int32 = 0
        guard let client = nc_wlr_open(display, output, drawCursor ? 1 : 0, &error, error.count, &code) else {
            let text = error.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            throw code == 3 ? .noSuchOutput(text) : .unavailable(text)
        }
        connection = SharedHandle(client, close: nc_wlr_close)
        var info = nc_wlr_info()
        nc_wlr_peek(client, &info)
        version = info.version
        // The first copy gives the size (a new output is all damage: it comes at once).
        let deadline = Int64(MonotonicClock.nanoseconds) + 10_000_000_000
        while info.state == Int32(NC_WLR_WAITING) {
            let now = Int64(MonotonicClock.nanoseconds)
            guard now < deadline else { throw .failed("wlr: the compositor sent no copy of its output within 10 s") }
            wait(timeoutMs: Int32((deadline - now) / 1_000_000), watchWakeUp: false)
            nc_wlr_peek(client, &info)
        }
        if info.state >= Int32(NC_WLR_FAILED) { throw .failed(message(info)) }
        (width, height) = (Int(info.width) & ~1, Int(info.height) & ~1)
    }

    public var captureDescription: String {
        (outputName.map { "output \($0)" } ?? "first output") + ", \(width)x\(height), screencopy v\(version)" + (version >= 2 ? ", on change" : ", every copy")
            + ", keep-alive " + (idleRate > 0 ? "\(idleRate)/s" : "off")
    }

    public func nextFrame() throws -> Frame? {
        let interval = frameRate.nanoseconds(ofFrame: 1)
        while true {
            var info = nc_wlr_info()
            nc_wlr_peek(client, &info)
            let now = Int64(MonotonicClock.nanoseconds)
            if info.state == Int32(NC_WLR_READY) {
                if !frames.started || now >= lastGrab + interval { if let frame = grab(at: now) { return frame } }
                wait(timeoutMs: MonotonicClock.pollTimeout(until: lastGrab + interval, from: now), watchWakeUp: false)
                continue
            }
            if info.state == Int32(NC_WLR_FAILED) { throw WlrError.failed(message(info)) }
            if info.state == Int32(NC_WLR_ENDED) {
                if endReason == nil {
                    endReason = message(info)
                    log?("wlr: the stream ended: \(message(info).dropFirst("wlr: ".count))")
                }
                return nil
            }
            if frames.started {
                if wakeUp?.drain() == true || frames.idleRepeatDue(at: now) { return sendRepeat(at: now) }
            }
            wait(timeoutMs: frames.nextRepeat.map { MonotonicClock.pollTimeout(until: $0, from: now) } ?? -1, watchWakeUp: frames.started)
        }
    }

    private func grab(at now: Int64) -> Frame? {
        var info = nc_wlr_info()
        var data: UnsafeMutablePointer<UInt8>?
        let slot = nc_wlr_acquire(client, &data, &info)
        guard slot >= 0, let data else { return nil }
        let connection = connection
        let buffer = FrameBuffer(wrapping: data, capacity: Int(info.stride) * Int(info.height)) { nc_wlr_release(connection.pointer, slot) }
        let size = (Int(info.width) & ~1, Int(info.height) & ~1)
        if size != (width, height) {
            log?("wlr: the output is now \(info.width)x\(info.height)")
            (width, height) = size
        }
        _ = wakeUp?.drain()
        lastGrab = now
        var frame = Frame(width: width, height: height, format: .bgra, buffer: buffer,
                          planes: [Plane(offset: 0, stride: Int(info.stride), rows: height)],
                          sequence: 0, captureTimeNs: WallClock.nanoseconds, pts90k: 0)
        frame.damage = damage(of: slot, width: width, height: height)
        return frames.changed(frame, at: now)
    }

    /// What changed since the copy before (copy_with_damage); the whole output when the
    /// compositor did not say (the picture is still the one the next copy's damage is relative to).
    private func damage(of slot: Int32, width: Int, height: Int) -> FrameDamage {
        var boxes = [UInt32](repeating: 0, count: 4 * Int(NC_WLR_MAX_DAMAGE))
        var number: UInt64 = 0
        let count = Int(nc_wlr_damage(client, slot, &boxes, &number))
        guard count >= 0 else { return FrameDamage(picture: number, rects: [FrameDamage.Rect(x: 0, y: 0, width: width, height: height)]) }
        let rects = (0..<count).map { (i: Int) -> FrameDamage.Rect in
            let box = 4 * i
            return FrameDamage.Rect(x: Int(boxes[box]), y: Int(boxes[box + 1]), width: Int(boxes[box + 2]), height: Int(boxes[box + 3]))
        }
        return FrameDamage(picture: number, rects: rects)
    }

    private func sendRepeat(at now: Int64) -> Frame {
        frames.repeated(width: width, height: height, format: .bgra, captureTimeNs: WallClock.nanoseconds, at: now)
    }

    /// Waits for the compositor (or a wake-up), then handles what it sent.
    private func wait(timeoutMs: Int32, watchWakeUp: Bool) {
        var fds = [pollfd(fd: nc_wlr_prepare(client), events: Int16(POLLIN), revents: 0),
                   pollfd(fd: wakeUp?.fd ?? -1, events: Int16(POLLIN), revents: 0)]
        _ = poll(&fds, watchWakeUp ? 2 : 1, timeoutMs)
        if fds[0].revents != 0 { _ = nc_wlr_dispatch(client) }
    }

    private func message(_ info: nc_wlr_info) -> String {
        String(cField: info.message)
    }
}
