import Clocks
import Capture
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CXCBShm

/// The live screen of an X11 display (the root window, or a region of it) as BGRA frames.
///
/// Frames are read with MIT-SHM: `xcb_shm_get_image` makes the server write the pixels
/// into a shared memory segment, and the frame's one plane points into that segment:
/// no copy on our side. When the server cannot share memory with us (a remote display,
/// or `useSharedMemory` off), frames come through plain `xcb_get_image`, and the frame
/// points into the reply (still no copy here, but the pixels cross the socket); the log
/// says so once. The cursor (XFixes) is blended into the frame unless `drawCursor` is off.
///
/// Pacing: a grab happens on each slot of a timer at `frameRate` (`t0 + k / fps`), never
/// faster; when the caller comes back after the next slot is already due, the missed
/// slots are skipped (their sequence numbers stay unused, the gap shows the drop) and
/// counted in `skippedSlots`, never queued, as `TestPatternSource` does in realtime mode.
/// An unchanged screen is grabbed all the same: the stream stays steady. That is
/// `X11CaptureMode.fixed`.
///
/// Capture on change (`.damage`, the default): the source sleeps in `poll()` on the X
/// connection and a wake-up eventfd until the captured area changes (`X11ChangeWatch`:
/// DAMAGE, cursor shape and position), then grabs at once, but no sooner than one frame
/// interval after the previous grab (a burst of drawing is one grab). Frames are then
/// timed by their real capture time: `pts90k` is the time since the first frame, and
/// `sequence` counts the frames sent (no gaps). While nothing changes it sends a repeat
/// (`Frame.isRepeat`, no pixels) every `1 / idleRate` seconds, and one at once when woken
/// (`wakeUp`: a reader joined and needs an IDR): the pipeline encodes the picture it kept.
/// When the cursor is drawn, pointer motion comes as XInput 2 raw events: a still pointer
/// costs nothing, and a warped one (no raw event) is seen at the next keep-alive.
/// Without the DAMAGE extension the source says so once and captures on the timer.
/// Each grab reads the whole area, not only the damaged rectangles: on a 1920x1080 Xvfb
/// screen a whole grab costs 0.67 ms and its conversion to I420 0.57 ms (a 64x64 one
/// 0.03 ms), against about 7 ms for x264 to encode the frame, which it does whole in any
/// case; reading rectangles into a kept frame would save at most 1.2 ms of some 9 per change.
/// What was drawn since the grab before (the damaged region, taken by the DamageSubtract
/// before the grab into an XFixes region and read back with the grab's round trip) and the
/// cursor where it was drawn before and now go with the frame as its `FrameDamage`, so that
/// only those rectangles are converted into the picture kept.
///
/// Resize: with RandR, the source listens for RRScreenChangeNotify (without it, it asks
/// for the root geometry before each grab). When the whole screen is captured, the next
/// frame has the new size (rounded down to even) in a new segment, and the encoder
/// reopens on its own. A region that no longer fits the new screen is an error.
///
/// Frame memory: a segment is overwritten only when no frame points into it any more;
/// if the caller still holds the previous frame, a new segment is made.
///
/// Not `Sendable`: it lives on the capture thread, which calls `nextFrame()` in a loop.
public final class X11Source: FrameSource {
    public let options: X11Options
    public var frameRate: FrameRate { options.frameRate }
    public var pixelFormat: PixelFormat { .bgra }
    public var isLive: Bool { true }
    public var isChangeDriven: Bool { changes != nil }
    public private(set) var wakeUp: CaptureWakeUp? = nil
    /// The mode in effect: `.fixed` when `.damage` was asked but the server has no DAMAGE.
    public var captureMode: X11CaptureMode { changes != nil ? .damage : .fixed }
    /// Frames sent because the area changed, and repeats sent while it did not (`.damage`).
    public var changedFrames: UInt64 { frames.changed }
    public var repeatFrames: UInt64 { frames.repeats }
    /// Size of the next frame (changes when the screen does).
    public private(set) var width: Int
    public private(set) var height: Int
    /// The display's current screen size.
    public private(set) var screenWidth: Int
    public private(set) var screenHeight: Int
    /// The display name, e.g. `:1`.
    public var display: String { connection.display }
    /// True while frames come through MIT-SHM.
    public var usesSharedMemory: Bool { segment != nil || (sharedMemoryAvailable && !sharedMemoryFailed) }
    /// Slots skipped because `nextFrame()` was called after the next slot was already due.
    public var skippedSlots: UInt64 { slots.skipped }
    /// Screen size changes seen.
    public private(set) var resizes = 0

    private let connection: X11Connection
    private let log: (@Sendable (String) -> Void)?
    private var sharedMemoryAvailable = false
    private var sharedMemoryFailed = false
    private var segment: X11SharedSegment?
    private var cursorAvailable = false
    /// RandR's ScreenChangeNotify event code; nil without RandR (then geometry is polled).
    private var screenChangeEvent: UInt8?
    private var slots: LiveSlots
    private var changes: X11ChangeWatch?
    /// `.damage` numbering and timing (CLOCK_MONOTONIC ns), and the last grab.
    private var frames: ChangeDrivenFrames
    private var lastGrab: Int64 = 0
    private var nextPointerCheck: Int64 = 0
    private var pendingChange = false
    /// `.damage`: grabs made (the damage's picture numbers), and where the cursor was drawn
    /// into the last grab and the one before (frame coordinates), for each frame's damage.
    private var grabs: UInt64 = 0
    private var cursorBox: X11Region?
    private var previousCursorBox: X11Region?

    /// Connects to the display and checks the region. Throws `X11Error`: `noDisplay`,
    /// `cannotConnect`, `regionOutsideScreen`, `unsupportedPixelFormat`.
    public init(options: X11Options = X11Options(), log: (@Sendable (String) -> Void)? = nil) throws(X11Error) {
        self.options = options
        frames = ChangeDrivenFrames(idleRate: options.idleRate)
        self.log = log
        slots = LiveSlots(rate: options.frameRate)
        connection = try X11Connection(display: options.display)
        (screenWidth, screenHeight) = try connection.rootSize()
        (width, height) = (0, 0)
        try fitCaptureArea()

        let c = connection.handle
        var xfixesFirst: UInt8?
        if options.useSharedMemory {
            if connection.extensionFirstEvent(CXCBShm_extension_id()) != nil {
                sharedMemoryAvailable = true
            } else {
                fallBack("the server has no MIT-SHM extension")
            }
        } else {
            fallBack("shared memory is turned off")
        }
        if options.drawCursor {
            if let first = connection.extensionFirstEvent(CXCBShm_xfixes_extension_id()) {
                xfixesFirst = first
                // XFixes answers only clients that said which version they speak.
                free(xcb_xfixes_query_version_reply(c, xcb_xfixes_query_version(c, 4, 0), nil))
                cursorAvailable = true
            } else {
                log?("x11: the server has no XFixes extension: the cursor is not drawn")
            }
        }
        if let first = connection.extensionFirstEvent(CXCBShm_randr_extension_id()) {
            free(xcb_randr_query_version_reply(c, xcb_randr_query_version(c, 1, 5), nil))
            xcb_randr_select_input(c, connection.root, UInt16(XCB_RANDR_NOTIFY_MASK_SCREEN_CHANGE.rawValue))
            xcb_flush(c)
            screenChangeEvent = first + UInt8(XCB_RANDR_SCREEN_CHANGE_NOTIFY)
        }
        if options.captureMode == .damage {
            changes = X11ChangeWatch(connection: connection, cursorFirstEvent: xfixesFirst)
            if changes == nil { log?("x11: the server has no DAMAGE extension: capturing on a timer (--capture fixed)") }
            if let changes, cursorAvailable, !changes.followsMotion {
                log?("x11: the server has no XInput 2: the pointer is asked once a frame interval while the screen is still")
            }
        }
        wakeUp = changes != nil ? CaptureWakeUp() : nil
        try connection.checkConnection()
    }

    deinit {
        segment?.detach(from: connection)
    }

    /// What is captured, for the one line the producer prints on start, e.g.
    /// `display :1, 1920x1080 screen, area 1920x1080+0+0, MIT-SHM, cursor`.
    public var captureDescription: String {
        let area = options.region.map { "region \($0)" } ?? "whole screen \(width)x\(height)+0+0"
        let mode = changes != nil ? ", on change, keep-alive " + (options.idleRate > 0 ? "\(options.idleRate)/s" : "off") : ", fixed rate"
        return "display \(display) (\(screenWidth)x\(screenHeight)), \(area), "
            + (usesSharedMemory ? "MIT-SHM" : "GetImage") + (cursorAvailable ? ", cursor" : ", no cursor") + mode
    }

    public func nextFrame() throws -> Frame? {
        if changes != nil { return try nextChange() }
        let slot = slots.wait()
        try followScreenSize()
        let captureTime = WallClock.nanoseconds
        let buffer = try grab()
        let stride = width * 4
        return Frame(width: width, height: height, format: .bgra, buffer: buffer,
                     planes: [Plane(offset: 0, stride: stride, rows: height)],
                     sequence: UInt64(slot), captureTimeNs: captureTime, pts90k: frameRate.ticks90k(ofFrame: slot))
    }

    // MARK: capture on change

    /// The captured area in root coordinates.
    private var area: X11Region {
        options.region ?? X11Region(x: 0, y: 0, width: width, height: height)
    }

    /// `.damage`: waits for a change (then grabs), a keep-alive or a wake-up (then sends a
    /// repeat). See the type's comment.
    private func nextChange() throws(X11Error) -> Frame {
        guard let changes else { preconditionFailure("no change watch") }
        let c = connection.handle
        let interval = frameRate.nanoseconds(ofFrame: 1)
        let watchPointer = cursorAvailable
        // With XInput 2 the pointer is asked only after a raw motion event (and at each
        // keep-alive, below); without it, once a frame interval.
        let pollsPointer = watchPointer && !changes.followsMotion
        while true {
            if try readEvents() { pendingChange = true }
            var now = Int64(MonotonicClock.nanoseconds)
            let pointerDue = pollsPointer || (watchPointer && changes.motionPending)
            if pointerDue, now >= nextPointerCheck {
                if changes.pointerMoved(near: area) { pendingChange = true }
                nextPointerCheck = now + interval
                now = Int64(MonotonicClock.nanoseconds)
            }
            guard frames.started else { return try grabChange(at: now) }
            var deadline = Int64.max
            if pendingChange {
                let earliest = lastGrab + interval
                if now >= earliest { return try grabChange(at: now) }
                deadline = earliest
            } else {
                if wakeUp?.drain() == true { return sendRepeat(at: now) }
                if let nextRepeat = frames.nextRepeat {
                    if frames.idleRepeatDue(at: now) {
                        // XWarpPointer makes no raw motion event: a warped pointer is
                        // seen here, at the keep-alive, which it turns into a grab.
                        if watchPointer, !pollsPointer, changes.pointerMoved(near: area) {
                            pendingChange = true
                            nextPointerCheck = now + interval
                            continue
                        }
                        return sendRepeat(at: now)
                    }
                    deadline = nextRepeat
                }
                if pollsPointer || (watchPointer && changes.motionPending) { deadline = Swift.min(deadline, nextPointerCheck) }
            }
            xcb_flush(c)
            // While a change waits for its slot, only the X connection is watched: a
            // wake-up is answered by that grab, soon, rather than by a repeat now.
            var fds = [pollfd(fd: xcb_get_file_descriptor(c), events: Int16(POLLIN), revents: 0),
                       pollfd(fd: wakeUp?.fd ?? -1, events: Int16(POLLIN), revents: 0)]
            let count: nfds_t = pendingChange || wakeUp == nil ? 1 : 2
            // A deadline already past (a pointer query that took longer than a frame
            // interval on a busy machine) is a zero timeout (pollTimeout), not a negative one,
            // which poll() takes as "forever": a still screen would then send no keep-alive again.
            let timeout = deadline == Int64.max ? -1 : MonotonicClock.pollTimeout(until: deadline, from: now)
            _ = poll(&fds, count, timeout)
        }
    }

    /// Reads every pending event: screen size changes are followed, and the result says
    /// whether the captured area changed (damage in it, the cursor's shape near it).
    private func readEvents() throws(X11Error) -> Bool {
        var changed = false
        var screenChanged = false
        let area = self.area
        while let event = xcb_poll_for_event(connection.handle) {
            let code = CXCBShm_event_type(event)
            if let screenChangeEvent, code == screenChangeEvent {
                screenChanged = true
            } else if changes?.changes(event, code: code, area: area) == true {
                changed = true
            }
            free(event)
        }
        try connection.checkConnection()
        if screenChanged {
            let before = (width, height)
            try takeScreenSize(connection.rootSize())
            if before != (width, height) { changed = true }
        }
        return changed
    }

    private func grabChange(at now: Int64) throws(X11Error) -> Frame {
        changes?.reset()
        // A wake-up while this change waited for its slot is answered by this frame.
        _ = wakeUp?.drain()
        if screenChangeEvent == nil { try takeScreenSize(connection.rootSize()) }
        let captureTime = WallClock.nanoseconds
        previousCursorBox = cursorBox
        cursorBox = nil
        let buffer = try grab()
        pendingChange = false
        lastGrab = now
        grabs += 1
        var frame = Frame(width: width, height: height, format: .bgra, buffer: buffer,
                          planes: [Plane(offset: 0, stride: width * 4, rows: height)],
                          sequence: 0, captureTimeNs: captureTime, pts90k: 0)
        frame.damage = damage(changes?.damaged())
        return frames.changed(frame, at: now)
    }

    /// The grab's damage: what was drawn since the grab before (root coordinates, into the
    /// frame's), and the cursor where it was drawn before and now; the whole frame when the
    /// server did not say.
    private func damage(_ drawn: [X11Region]?) -> FrameDamage {
        guard let drawn else { return FrameDamage(picture: grabs, rects: [FrameDamage.Rect(x: 0, y: 0, width: width, height: height)]) }
        let (x, y) = origin
        var rects = drawn.map { FrameDamage.Rect(x: $0.x - x, y: $0.y - y, width: $0.width, height: $0.height) }
        for box in [previousCursorBox, cursorBox].compactMap({ $0 }) {
            rects.append(FrameDamage.Rect(x: box.x, y: box.y, width: box.width, height: box.height))
        }
        return FrameDamage(picture: grabs, rects: rects.filter { $0.x < width && $0.y < height && $0.x + $0.width > 0 && $0.y + $0.height > 0 })
    }

    private func sendRepeat(at now: Int64) -> Frame {
        frames.repeated(width: width, height: height, format: .bgra, captureTimeNs: WallClock.nanoseconds, at: now)
    }

    /// Raw pointer motion events received (XInput 2), for tests and the log.
    public var pointerMotionEvents: UInt64 { changes?.motionEvents ?? 0 }
    /// Whether pointer motion comes as events (XInput 2) rather than by asking once a frame interval.
    public var followsPointerMotion: Bool { changes?.followsMotion ?? false }

    // MARK: screen size

    /// Sets the capture size from the screen size: the region, checked, or the whole
    /// screen rounded down to even sides.
    private func fitCaptureArea() throws(X11Error) {
        if let region = options.region {
            guard region.fits(screenWidth: screenWidth, screenHeight: screenHeight) else {
                throw .regionOutsideScreen(region: region, screenWidth: screenWidth, screenHeight: screenHeight)
            }
            (width, height) = (region.width, region.height)
        } else {
            guard screenWidth >= 2, screenHeight >= 2 else {
                throw .regionOutsideScreen(region: X11Region(x: 0, y: 0, width: 2, height: 2), screenWidth: screenWidth, screenHeight: screenHeight)
            }
            let even = (screenWidth & ~1, screenHeight & ~1)
            if even != (width, height), even != (screenWidth, screenHeight) {
                log?("x11: screen \(screenWidth)x\(screenHeight) captured as \(even.0)x\(even.1) (4:2:0 video needs even sides)")
            }
            (width, height) = even
        }
    }

    /// Reads pending events; on a screen change (or always, without RandR) takes the new
    /// root size, and moves to a new segment if the frame size changed.
    private func followScreenSize() throws(X11Error) {
        var changed = screenChangeEvent == nil
        while let event = xcb_poll_for_event(connection.handle) {
            if let code = screenChangeEvent, CXCBShm_event_type(event) == code { changed = true }
            free(event)
        }
        try connection.checkConnection()
        guard changed else { return }
        try takeScreenSize(connection.rootSize())
    }

    private func takeScreenSize(_ size: (width: Int, height: Int)) throws(X11Error) {
        guard size != (screenWidth, screenHeight) else { return }
        let before = (width, height)
        (screenWidth, screenHeight) = size
        resizes += 1
        try fitCaptureArea()
        log?("x11: screen is now \(screenWidth)x\(screenHeight)" + (before != (width, height) ? ", frames \(width)x\(height)" : ""))
        if before != (width, height) { segment?.detach(from: connection); segment = nil }
    }

    // MARK: grabbing

    private var origin: (x: Int, y: Int) { options.region.map { ($0.x, $0.y) } ?? (0, 0) }

    /// The pixels of the capture area, with the cursor drawn in. A grab that fails
    /// because the screen just shrank is retried once at the new size.
    private func grab() throws(X11Error) -> FrameBuffer {
        do {
            return try grabOnce()
        } catch .requestFailed(let request, let code) {
            let size = try connection.rootSize()
            guard size != (screenWidth, screenHeight) else { throw .requestFailed(request: request, code: code) }
            try takeScreenSize(size)
            return try grabOnce()
        }
    }

    private func grabOnce() throws(X11Error) -> FrameBuffer {
        let c = connection.handle
        let byteCount = width * height * 4
        if sharedMemoryAvailable && !sharedMemoryFailed {
            if segment != nil, !segment!.isFree() || segment!.buffer!.capacity < byteCount {
                segment!.detach(from: connection)
                segment = nil
            }
            if segment == nil {
                var why = ""
                segment = try X11SharedSegment.make(byteCount: byteCount, on: connection, why: &why)
                if segment == nil {
                    sharedMemoryFailed = true
                    fallBack(why)
                }
            }
        }
        let (x, y) = origin
        let area = (Int16(x), Int16(y), UInt16(width), UInt16(height))
        let format = UInt8(XCB_IMAGE_FORMAT_Z_PIXMAP.rawValue)
        let buffer: FrameBuffer
        if let segment, let shared = segment.buffer {
            let cookie = xcb_shm_get_image(c, connection.root, area.0, area.1, area.2, area.3, ~0, format, segment.id, 0)
            let cursor = cursorAvailable ? xcb_xfixes_get_cursor_image(c) : nil
            var error: UnsafeMutablePointer<xcb_generic_error_t>?
            guard let reply = xcb_shm_get_image_reply(c, cookie, &error) else {
                if let cursor { discard(cursor) }
                throw connection.failure("ShmGetImage", error)
            }
            free(reply)
            buffer = shared
            if let cursor { drawCursor(cursor, into: buffer) }
        } else {
            let cookie = xcb_get_image(c, format, connection.root, area.0, area.1, area.2, area.3, ~0)
            let cursor = cursorAvailable ? xcb_xfixes_get_cursor_image(c) : nil
            var error: UnsafeMutablePointer<xcb_generic_error_t>?
            guard let reply = xcb_get_image_reply(c, cookie, &error) else {
                if let cursor { discard(cursor) }
                throw connection.failure("GetImage", error)
            }
            let length = Int(xcb_get_image_data_length(reply))
            guard length >= byteCount, let data = xcb_get_image_data(reply) else {
                free(reply)
                if let cursor { discard(cursor) }
                throw .unsupportedPixelFormat("GetImage returned \(length) bytes for \(width)x\(height)")
            }
            // The frame points into the reply; it is freed with the last frame.
            buffer = FrameBuffer(wrapping: data, capacity: length) { free(reply) }
            if let cursor { drawCursor(cursor, into: buffer) }
        }
        return buffer
    }

    private func drawCursor(_ cookie: xcb_xfixes_get_cursor_image_cookie_t, into buffer: FrameBuffer) {
        guard let reply = xcb_xfixes_get_cursor_image_reply(connection.handle, cookie, nil) else { return }
        defer { free(reply) }
        let r = reply.pointee
        guard let image = xcb_xfixes_get_cursor_image_cursor_image(reply) else { return }
        let (x, y) = origin
        cursorBox = X11Region(x: Int(r.x) - Int(r.xhot) - x, y: Int(r.y) - Int(r.yhot) - y, width: Int(r.width), height: Int(r.height))
        CursorOverlay.blend(image, width: Int(r.width), height: Int(r.height),
                            left: Int(r.x) - Int(r.xhot) - x, top: Int(r.y) - Int(r.yhot) - y,
                            into: buffer.base, stride: width * 4, frameWidth: width, frameHeight: height)
    }

    private func discard(_ cookie: xcb_xfixes_get_cursor_image_cookie_t) {
        xcb_discard_reply(connection.handle, cookie.sequence)
    }

    private func fallBack(_ why: String) {
        log?("x11: not using MIT-SHM on \(connection.display) (\(why)): frames come through GetImage, slower")
    }
}
