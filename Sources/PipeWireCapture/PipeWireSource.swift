import Clocks
import Capture
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CPipeWire

/// What can go wrong taking frames from PipeWire, each one line. All mean the source is not
/// there or not usable (exit 69), except `noSuchNode` (66: the input named does not exist).
public enum PipeWireError: Error, Hashable, CustomStringConvertible {
    /// PipeWire is not reachable, or the stream could not start.
    case unavailable(String)
    /// PipeWire answered but has no video node of that id, serial or name.
    case noSuchNode(String)
    /// The node started but gives nothing nalcast can read (no raw BGRx/RGBx/xRGB, DMA-BUF only).
    case unusable(String)

    public var description: String {
        switch self {
        case .unavailable(let why), .noSuchNode(let why), .unusable(let why): "pipewire: \(why)"
        }
    }
}

/// What `PipeWireSource` captures and how.
public struct PipeWireOptions: Sendable, Hashable {
    /// The node: its id, serial or name (`node.name`).
    public var node: String
    /// A PipeWire connection already open (the portal's `OpenPipeWireRemote`), or -1 for the
    /// user's PipeWire daemon. The source takes it over.
    public var remoteFD: Int32 = -1
    /// At most this many frames a second.
    public var frameRate = FrameRate(30)
    /// While nothing changes, repeat the picture this many times a second (0: never).
    public var idleRate: Double = 1
    /// How the log lines name the source (`pipewire`, `portal`).
    public var label = "pipewire"
    /// How long to wait for the node's format before giving up, seconds.
    public var formatTimeout: Double = 10
    /// Ask for the pointer as cursor metadata and draw it into the frames (`--cursor`). A
    /// node that sends none (a camera, a cast whose compositor draws the pointer itself, or
    /// leaves it out) gets none drawn.
    public var drawCursor: Bool

    public init(node: String, remoteFD: Int32 = -1, frameRate: FrameRate = FrameRate(30), idleRate: Double = 1, label: String = "pipewire",
                drawCursor: Bool = true) {
        self.node = node
        self.drawCursor = drawCursor
        self.remoteFD = remoteFD
        self.frameRate = frameRate
        self.idleRate = idleRate
        self.label = label
    }
}

/// Frames of a PipeWire video node (a compositor's screen cast, a camera, another program's
/// stream), taken as they come, like X11's `--capture damage`.
///
/// libpipewire runs on a thread loop of its own (`nalcast-pw`, in the `CPipeWire` shim). Its
/// process callback keeps the newest buffer and gives older ones back (`replaced` counts
/// them): a compositor sends a buffer when its screen changed, so frames come only on change.
/// The capture thread sleeps in `poll()` on the shim's eventfd and `wakeUp`; a frame points
/// into the PipeWire buffer it came in (mapped memfd or shared memory: no copy, as `wlr`'s and
/// X11's frames) and the buffer goes back to PipeWire when the frame is released, after the
/// conversion; a size change meanwhile (new buffers) waits for that. Where the pointer is
/// drawn from cursor metadata, the picture is copied into a buffer of ours first, never
/// drawn into the compositor's (it may send the same buffer again with only its damage
/// redrawn). A picture read in place carries the node's damage metadata (`FrameDamage`,
/// SPA_META_VideoDamage) when it sends it, so that only what changed is converted. At most `frameRate` frames a second are
/// taken (a burst is the newest frame of it), each stamped with its real time; while
/// nothing comes, a repeat (`Frame.isRepeat`) every `1 / idleRate` s and one at once when
/// woken for an IDR. A new size arrives as a new format: the next frame has it and the
/// encoder reopens (a new SPS). The stream ending (the node went away, sharing stopped,
/// PipeWire exited) ends the frames: `nextFrame()` returns nil and `endReason` says why.
///
/// Not `Sendable`: it lives on the capture thread, which calls `nextFrame()` in a loop.
public final class PipeWireSource: FrameSource {
    public let options: PipeWireOptions
    public var frameRate: FrameRate { options.frameRate }
    public private(set) var pixelFormat: PixelFormat = .bgra
    public var isLive: Bool { true }
    public var isChangeDriven: Bool { true }
    public let wakeUp: CaptureWakeUp? = CaptureWakeUp()
    public private(set) var width = 0
    public private(set) var height = 0
    /// The node captured: its id and name.
    public private(set) var nodeID: UInt32 = 0
    public private(set) var nodeName = ""
    /// Frames sent because a new picture came, and repeats sent while none did.
    public var changedFrames: UInt64 { frames.changed }
    public var repeatFrames: UInt64 { frames.repeats }
    /// Why the frames ended (nil while they go on).
    public private(set) var endReason: String?
    /// The shim's counts: buffers with pixels, replaced before taken, without pixels, with damage.
    /// `unread`: pictures never taken because PipeWire took their buffer back first (a new
    /// format: a size change; or the end), or still waiting now. `pointer`: buffers whose
    /// cursor metadata changed the pointer (with `drawCursor`).
    public var counts: (received: UInt64, replaced: UInt64, unread: UInt64, metadataOnly: UInt64, damaged: UInt64, formats: UInt64,
                        pointer: UInt64) {
        var info = nc_pw_info()
        nc_pw_peek(stream, &info)
        return (info.received, info.replaced, info.withdrawn + (info.has_frame != 0 ? 1 : 0), info.metadata_only, info.damaged, info.formats,
                info.cursor_updates)
    }

    private let connection: SharedHandle
    private var stream: OpaquePointer { connection.pointer }
    /// What must live as long as the stream (the portal's session).
    public let owner: AnyObject?
    private let log: (@Sendable (String) -> Void)?
    private var buffers = ReusableBuffer()
    /// The pointer from cursor metadata, with `drawCursor`.
    private let pointer: PipeWirePointer?
    private var pointerSaid = false
    private var frames: ChangeDrivenFrames
    private var lastGrab: Int64 = 0
    /// Row bytes of the last picture (a pointer-only frame has them too).
    private var pointerStride = 0

    /// Connects and waits for the node's format (its size). Throws `PipeWireError`.
    public init(options: PipeWireOptions, keeping owner: AnyObject? = nil, log: (@Sendable (String) -> Void)? = nil) throws(PipeWireError) {
        self.options = options
        frames = ChangeDrivenFrames(idleRate: options.idleRate)
        self.owner = owner
        self.log = log
        pointer = options.drawCursor ? PipeWirePointer() : nil
        var error = [CChar](repeating: 0, count: 512)
        var missing: Int32 = 0
        guard let stream = nc_pw_open(options.node, options.remoteFD, options.drawCursor ? 1 : 0, &error, error.count, &missing) else {
            let why = error.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            throw missing == 1 ? .noSuchNode(why) : .unavailable(why)
        }
        // From here on the stream closes once the source and its frames are gone, on a throw too.
        connection = SharedHandle(stream, close: nc_pw_close)
        var info = nc_pw_info()
        // The format comes within a few milliseconds of a live node; a node that never
        // gives one (paused, or nothing links it) is an error rather than a silent wait.
        let deadline = Int64(MonotonicClock.nanoseconds) + Int64(options.formatTimeout * 1e9)
        while true {
            nc_pw_peek(stream, &info)
            if info.state >= Int32(NC_PW_ENDED) {
                throw .unusable(message(info))
            }
            if info.format != 0 { break }
            let now = Int64(MonotonicClock.nanoseconds)
            if now >= deadline {
                let state = String(cField: info.stream_state)
                throw .unusable("node \(options.node) gave no video format within \(short(options.formatTimeout)) s (stream \(state.isEmpty ? "not connected" : state))")
            }
            waitForEvent(timeoutMs: MonotonicClock.pollTimeout(until: deadline, from: now))
        }
        take(info)
        nodeID = info.node
        nodeName = String(cField: info.node_name)
    }

    /// What came and what became of it: every picture PipeWire gave is either taken,
    /// replaced by a newer one before it was (a burst faster than --fps, or while encoding),
    /// or unread: its buffer taken back by a size change before it was, or the stream ending.
    deinit {
        let c = counts
        if c.received > 0 {
            let own = pointer?.ownFrames ?? 0
            log?("\(options.label): \(c.received) pictures from node \(nodeID): \(changedFrames - own) taken, \(c.replaced) replaced by a newer one first"
                + (c.unread > 0 ? ", \(c.unread) unread (a new size or the end came first)" : "")
                + (c.metadataOnly > 0 ? ", \(c.metadataOnly) buffers without pixels" : "")
                + (c.pointer > 0 ? ", \(c.pointer) pointer changes drawn (\(own) frames for the pointer alone)" : ""))
        }
    }

    /// `node 35 (mutter), 1280x720 bgra, on change, keep-alive 1/s`, for the start line.
    public var captureDescription: String {
        "node \(nodeID) (\(nodeName.isEmpty ? "unnamed" : nodeName)), \(width)x\(height) \(pixelFormat), on change, keep-alive "
            + (options.idleRate > 0 ? "\(options.idleRate)/s" : "off")
    }

    public func nextFrame() throws -> Frame? {
        let interval = frameRate.nanoseconds(ofFrame: 1)
        while true {
            var info = nc_pw_info()
            nc_pw_peek(stream, &info)
            let now = Int64(MonotonicClock.nanoseconds)
            if info.has_frame != 0 {
                if !frames.started || now >= lastGrab + interval, let frame = grab(info, at: now) { return frame }
                waitForEvent(timeoutMs: MonotonicClock.pollTimeout(until: lastGrab + interval, from: now), watchWakeUp: false)
                continue
            }
            if let pointer, frames.started, pointer.picture != nil, info.cursor_serial != pointer.drawnSerial {
                if now >= lastGrab + interval, let buffer = pointer.redraw(stream: stream) {
                    return frame(in: buffer, stride: pointerStride, at: now)
                }
                waitForEvent(timeoutMs: MonotonicClock.pollTimeout(until: lastGrab + interval, from: now), watchWakeUp: false)
                continue
            }
            if info.state >= Int32(NC_PW_ENDED) {
                let why = message(info)
                guard frames.started || info.state == Int32(NC_PW_ENDED) else { throw PipeWireError.unusable(why) }
                if endReason == nil {
                    endReason = why
                    log?("\(options.label): the stream ended: \(why)")
                }
                return nil
            }
            if frames.started {
                if wakeUp?.drain() == true || frames.idleRepeatDue(at: now) { return sendRepeat(at: now) }
            }
            waitForEvent(timeoutMs: frames.nextRepeat.map { MonotonicClock.pollTimeout(until: $0, from: now) } ?? -1, watchWakeUp: frames.started)
        }
    }

    // MARK: frames

    /// The waiting picture (`info`: the stream's state as `nextFrame` just read it).
    private func grab(_ info: nc_pw_info, at now: Int64) -> Frame? {
        var info = info
        // No pointer to draw (none asked for, or the node sends no cursor metadata): in place.
        if pointer == nil || info.cursor_serial == 0, let frame = grabInPlace(at: now) { return frame }
        let bytes = Int(info.width) * Int(info.height) * 4
        var buffer = obtain(capacity: bytes)
        var result = nc_pw_take(stream, buffer.base, buffer.capacity, &info)
        if result < 0 {
            buffer = obtain(capacity: Int(-result))
            result = nc_pw_take(stream, buffer.base, buffer.capacity, &info)
        }
        guard result > 0 else { return nil }
        take(info)
        if let pointer {
            pointerStride = Int(info.stride)
            pointer.drawInto(buffer, stride: pointerStride, bytes: pointerStride * Int(info.height), width: width, height: height,
                             format: pixelFormat, stream: stream)
        }
        return frame(in: buffer, stride: Int(info.stride), at: now)
    }

    /// The waiting picture where PipeWire put it, given back when the frame is released.
    private func grabInPlace(at now: Int64) -> Frame? {
        var info = nc_pw_info()
        var data: UnsafeMutablePointer<UInt8>?
        guard nc_pw_acquire(stream, &data, &info) == 1, let data else { return nil }
        take(info)
        let connection = connection
        let buffer = FrameBuffer(wrapping: data, capacity: Int(info.stride) * Int(info.height)) { nc_pw_release(connection.pointer) }
        var frame = frame(in: buffer, stride: Int(info.stride), at: now)
        frame.damage = Self.damage(info, width: width, height: height)
        return frame
    }

    /// What changed since the node's picture before this one, as its damage metadata said
    /// (numbered among the pictures received: one replaced or unread between leaves a gap,
    /// and the converter converts the whole); the whole picture when it did not say. Only
    /// for a picture read as the node gave it: one with the pointer drawn in by us has none
    /// (the pointer's own moves are not in the node's damage), and is converted whole.
    static func damage(_ info: nc_pw_info, width: Int, height: Int) -> FrameDamage {
        let count = Int(info.damage_count)
        guard count > 0 else { return FrameDamage(picture: info.picture, rects: [FrameDamage.Rect(x: 0, y: 0, width: width, height: height)]) }
        return withUnsafeBytes(of: info.damage) { raw in
            let boxes = raw.bindMemory(to: UInt32.self)
            return FrameDamage(picture: info.picture, rects: (0..<count).map { i in
                FrameDamage.Rect(x: Int(boxes[4 * i]), y: Int(boxes[4 * i + 1]), width: Int(boxes[4 * i + 2]), height: Int(boxes[4 * i + 3]))
            })
        }
    }

    private func obtain(capacity: Int) -> FrameBuffer { pointer?.obtain(capacity: capacity) ?? buffers.obtain(capacity: capacity) }

    private func frame(in buffer: FrameBuffer, stride: Int, at now: Int64) -> Frame {
        if let pointer, pointer.seen, !pointerSaid {
            pointerSaid = true
            log?("\(options.label): the node sends the pointer as cursor metadata: drawn into the frames")
        }
        _ = wakeUp?.drain()  // this frame answers a wake-up for an IDR
        lastGrab = now
        let captureTime = WallClock.nanoseconds
        let frame = Frame(width: width, height: height, format: pixelFormat, buffer: buffer,
                          planes: [Plane(offset: 0, stride: stride, rows: height)],
                          sequence: 0, captureTimeNs: captureTime, pts90k: 0)
        return frames.changed(frame, at: now)
    }

    /// Takes the negotiated size and format; the frame is the even part of an odd size.
    private func take(_ info: nc_pw_info) {
        let size = (Int(info.width) & ~1, Int(info.height) & ~1)
        let format: PixelFormat = info.format == UInt32(NC_PW_RGBX) ? .rgba : info.format == UInt32(NC_PW_XRGB) ? .argb : .bgra
        if size != (width, height) || format != pixelFormat {
            if width != 0 { log?("\(options.label): the stream is now \(info.width)x\(info.height) \(format)") }
            else if size != (Int(info.width), Int(info.height)) {
                log?("\(options.label): \(info.width)x\(info.height) captured as \(size.0)x\(size.1) (4:2:0 video needs even sides)")
            }
            (width, height) = size
            pixelFormat = format
        }
    }

    private func sendRepeat(at now: Int64) -> Frame {
        frames.repeated(width: width, height: height, format: pixelFormat, captureTimeNs: WallClock.nanoseconds, at: now)
    }

    // MARK: waiting

    private func waitForEvent(timeoutMs: Int32, watchWakeUp: Bool = false) {
        var fds = [pollfd(fd: nc_pw_event_fd(stream), events: Int16(POLLIN), revents: 0),
                   pollfd(fd: wakeUp?.fd ?? -1, events: Int16(POLLIN), revents: 0)]
        _ = poll(&fds, watchWakeUp ? 2 : 1, timeoutMs)
        nc_pw_drain(stream)
    }

    private func short(_ value: Double) -> String { value == value.rounded() ? String(Int(value)) : String(value) }

    private func message(_ info: nc_pw_info) -> String {
        String(cField: info.message)
    }
}
