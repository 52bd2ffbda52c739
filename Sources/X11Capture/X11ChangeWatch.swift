import Capture
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CXCBShm

/// What tells `X11Source` in `.damage` mode that the captured area changed.
///
/// - DAMAGE on the root window at the DeltaRectangles level: the server sends an event
///   only for a rectangle that grows the damaged region, which `reset()` (DamageSubtract,
///   once per grab) empties. So a burst of drawing between two grabs costs a few events,
///   not one per drawing request, and one grab answers all of them. Areas outside the
///   captured region stay in the damaged region until the next grab: they are reported
///   once, and ignored.
/// - XFixes CursorNotify when the cursor is drawn: its shape changed.
/// - Pointer position, asked with QueryPointer while the cursor is drawn (XFixes has no
///   motion events). With XInput 2, the pointer is asked only after an XI_RawMotion event
///   (`motionPending`; selected on the root for every master device), at most once a frame
///   interval: a still screen with a still pointer costs no query and no wake-up but the
///   keep-alive's. A pointer moved by a client (XWarpPointer) makes no raw event: the
///   source asks the pointer at every keep-alive too, so a warp shows within one
///   1/--idle-fps. Without XInput 2 (`followsMotion` false), the source asks once a frame
///   interval while still (one round trip of a few tens of microseconds, 30 times a second).
///
/// Not `Sendable`: lives with its source on the capture thread.
final class X11ChangeWatch {
    private let connection: X11Connection
    private let damage: xcb_damage_damage_t
    private let damageEvent: UInt8
    private let cursorEvent: UInt8?
    /// The last pointer position asked for (root coordinates).
    private var pointer: (x: Int, y: Int)?
    /// Damage events received (for tests and the log).
    private(set) var damageEvents: UInt64 = 0
    /// XInput's major opcode when XI_RawMotion is selected; nil without XInput 2.
    private let xinputOpcode: UInt8?
    /// Whether pointer motion comes as events (XInput 2); otherwise the pointer is polled.
    var followsMotion: Bool { xinputOpcode != nil }
    /// A raw motion event came since the pointer was last asked.
    private(set) var motionPending = false
    /// Raw motion events received (for tests and the log).
    private(set) var motionEvents: UInt64 = 0
    /// The XFixes region `reset()` moves the damaged region into (DamageSubtract's `parts`),
    /// and the request that reads it back: what was drawn since the reset before. nil when the
    /// server's XFixes has no regions (then a frame's damage is unknown: the whole).
    private let parts: xcb_xfixes_region_t?
    private var partsRead: xcb_xfixes_fetch_region_cookie_t?
    /// More rectangles than this in a damaged region: its bounding box instead.
    static let maxRects = 64

    /// How far from the captured area a pointer still shows (cursor images are at most
    /// 64x64 in practice; hot spot anywhere in them).
    static let cursorMargin = 64

    /// Nil when the server has no DAMAGE extension. `cursorFirstEvent`: XFixes' first event
    /// code, when the cursor is drawn (then its shape changes are watched).
    init?(connection: X11Connection, cursorFirstEvent: UInt8?) {
        let c = connection.handle
        guard let first = connection.extensionFirstEvent(CXCBShm_damage_extension_id()) else { return nil }
        // DAMAGE answers only clients that said which version they speak.
        free(xcb_damage_query_version_reply(c, xcb_damage_query_version(c, 1, 1), nil))
        self.connection = connection
        damage = xcb_generate_id(c)
        xcb_damage_create(c, damage, connection.root, UInt8(XCB_DAMAGE_REPORT_LEVEL_DELTA_RECTANGLES.rawValue))
        damageEvent = first + UInt8(XCB_DAMAGE_NOTIFY)
        // DAMAGE's regions are XFixes' (version 2 and up), which answers only clients that said
        // which version they speak.
        if connection.extensionFirstEvent(CXCBShm_xfixes_extension_id()) != nil,
           let version = xcb_xfixes_query_version_reply(c, xcb_xfixes_query_version(c, 4, 0), nil) {
            let major = version.pointee.major_version
            free(version)
            if major >= 2 {
                let region = xcb_generate_id(c)
                xcb_xfixes_create_region(c, region, 0, nil)
                parts = region
            } else {
                parts = nil
            }
        } else {
            parts = nil
        }
        if let cursorFirstEvent {
            xcb_xfixes_select_cursor_input(c, connection.root, UInt32(XCB_XFIXES_CURSOR_NOTIFY_MASK_DISPLAY_CURSOR.rawValue))
            cursorEvent = cursorFirstEvent + UInt8(XCB_XFIXES_CURSOR_NOTIFY)
            xinputOpcode = X11ChangeWatch.selectRawMotion(connection)
        } else {
            cursorEvent = nil
            xinputOpcode = nil
        }
        // The server reports the whole window as damaged when the damage object is made:
        // one round trip, so that this event is in hand before the first grab (which answers
        // it), not after it (a second grab for nothing).
        free(xcb_get_input_focus_reply(c, xcb_get_input_focus(c), nil))
        // Where the pointer starts: the first move is then judged from there.
        if cursorEvent != nil { pointer = askPointer() }
    }

    deinit {
        xcb_damage_destroy(connection.handle, damage)
        if let parts { xcb_xfixes_destroy_region(connection.handle, parts) }
        xcb_flush(connection.handle)
    }

    /// Selects XI_RawMotion on the root for every master device; XInput's major opcode, or
    /// nil when the server has no XInput 2 (or refuses the selection).
    private static func selectRawMotion(_ connection: X11Connection) -> UInt8? {
        let c = connection.handle
        guard let data = xcb_get_extension_data(c, CXCBShm_xinput_extension_id()), data.pointee.present != 0 else { return nil }
        let opcode = data.pointee.major_opcode
        // XInput 2 requests are refused to clients that did not say they speak version 2.
        guard let version = xcb_input_xi_query_version_reply(c, xcb_input_xi_query_version(c, 2, 0), nil) else { return nil }
        let major = version.pointee.major_version
        free(version)
        guard major >= 2 else { return nil }
        if let error = xcb_request_check(c, CXCBShm_select_raw_motion(c, connection.root)) {
            free(error)
            return nil
        }
        return opcode
    }

    /// Whether `event` (of type `code`) says `area` changed; nil when it is not one of ours.
    /// A raw motion event says nothing yet (false): it sets `motionPending`, and the source
    /// asks where the pointer went.
    func changes(_ event: UnsafeMutablePointer<xcb_generic_event_t>, code: UInt8, area: X11Region) -> Bool? {
        if let xinputOpcode, CXCBShm_is_raw_motion(event, xinputOpcode) != 0 {
            motionEvents += 1
            motionPending = true
            return false
        }
        if code == damageEvent {
            damageEvents += 1
            let r = UnsafeRawPointer(event).assumingMemoryBound(to: xcb_damage_notify_event_t.self).pointee.area
            return X11ChangeWatch.intersects(x: Int(r.x), y: Int(r.y), width: Int(r.width), height: Int(r.height), area, margin: 0)
        }
        if let cursorEvent, code == cursorEvent {
            guard let pointer else { return true }
            return X11ChangeWatch.intersects(x: pointer.x, y: pointer.y, width: 1, height: 1, area, margin: X11ChangeWatch.cursorMargin)
        }
        return nil
    }

    /// Empties the damaged region: what changes from now on is reported again. Call it
    /// right before a grab (a change during the grab is then reported, not lost). What it
    /// held (everything drawn since the reset before) is asked for at the same time, to be
    /// read with `damaged()` once the grab is in: no round trip of its own.
    func reset() {
        let c = connection.handle
        xcb_damage_subtract(c, damage, 0, parts ?? 0)
        if let parts { partsRead = xcb_xfixes_fetch_region(c, parts) }
    }

    /// The region `reset()` took, in root coordinates: what was drawn between the reset
    /// before and that one (a superset of what changed on screen); nil when unknown. Drawing
    /// between that reset and the grab after it is in the grab but not here: it is in the
    /// next reset's region, and its event asks for that next grab, so until then the picture
    /// converted by damage shows that place as it was just before.
    func damaged() -> [X11Region]? {
        guard let cookie = partsRead else { return nil }
        partsRead = nil
        guard let reply = xcb_xfixes_fetch_region_reply(connection.handle, cookie, nil) else { return nil }
        defer { free(reply) }
        let count = Int(xcb_xfixes_fetch_region_rectangles_length(reply))
        guard count <= X11ChangeWatch.maxRects else {
            let e = reply.pointee.extents
            return [X11Region(x: Int(e.x), y: Int(e.y), width: Int(e.width), height: Int(e.height))]
        }
        guard let rects = xcb_xfixes_fetch_region_rectangles(reply) else { return count == 0 ? [] : nil }
        return (0..<count).map { X11Region(x: Int(rects[$0].x), y: Int(rects[$0].y), width: Int(rects[$0].width), height: Int(rects[$0].height)) }
    }

    /// Asks where the pointer is; true when it moved and was or is near `area`.
    func pointerMoved(near area: X11Region) -> Bool {
        motionPending = false
        guard let now = askPointer() else { return false }
        defer { pointer = now }
        guard let before = pointer, before != now else { return false }
        let m = X11ChangeWatch.cursorMargin
        return X11ChangeWatch.intersects(x: before.x, y: before.y, width: 1, height: 1, area, margin: m)
            || X11ChangeWatch.intersects(x: now.x, y: now.y, width: 1, height: 1, area, margin: m)
    }

    private func askPointer() -> (x: Int, y: Int)? {
        let c = connection.handle
        guard let reply = xcb_query_pointer_reply(c, xcb_query_pointer(c, connection.root), nil) else { return nil }
        defer { free(reply) }
        return (Int(reply.pointee.root_x), Int(reply.pointee.root_y))
    }

    static func intersects(x: Int, y: Int, width: Int, height: Int, _ area: X11Region, margin: Int) -> Bool {
        x < area.x + area.width + margin && x + width > area.x - margin
            && y < area.y + area.height + margin && y + height > area.y - margin
    }
}
