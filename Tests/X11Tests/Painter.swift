import CXCBShm
import CXCBXTest
import Glibc

/// Paints known content on an X display's root window through its own xcb connection,
/// and moves the pointer. Every call waits until the server has done it (a round trip),
/// so a capture that starts afterwards sees it.
final class Painter {
    private let connection: OpaquePointer
    private let root: xcb_window_t
    private let gc: xcb_gcontext_t

    init(display: String) throws {
        guard let c = xcb_connect(display, nil), xcb_connection_has_error(c) == 0 else {
            throw PainterError.cannotConnect(display)
        }
        connection = c
        let screen = xcb_setup_roots_iterator(xcb_get_setup(c)).data!
        root = screen.pointee.root
        gc = xcb_generate_id(c)
        let values: [UInt32] = [0, 0]  // foreground, graphics exposures off
        xcb_create_gc(c, gc, root, UInt32(XCB_GC_FOREGROUND.rawValue | XCB_GC_GRAPHICS_EXPOSURES.rawValue), values)
        sync()
    }

    deinit { xcb_disconnect(connection) }

    /// Fills a rectangle with a 0xRRGGBB colour (TrueColor depth 24 pixel value).
    func fill(_ rgb: UInt32, x: Int, y: Int, width: Int, height: Int) {
        var foreground = rgb
        xcb_change_gc(connection, gc, UInt32(XCB_GC_FOREGROUND.rawValue), &foreground)
        var rect = xcb_rectangle_t(x: Int16(x), y: Int16(y), width: UInt16(width), height: UInt16(height))
        xcb_poly_fill_rectangle(connection, root, gc, 1, &rect)
        sync()
    }

    /// Moves the pointer to (x, y) the way a mouse does: XTest fake motion goes through
    /// the server's input path, which sends XInput 2 raw motion events.
    func movePointer(x: Int, y: Int) {
        xcb_test_fake_input(connection, UInt8(XCB_MOTION_NOTIFY), 0, UInt32(XCB_CURRENT_TIME), root, Int16(x), Int16(y), 0)
        sync()
    }

    /// Moves the pointer to (x, y) on the root window as a client does (XWarpPointer):
    /// no raw motion event.
    func warpPointer(x: Int, y: Int) {
        xcb_warp_pointer(connection, 0, root, 0, 0, 0, 0, Int16(x), Int16(y))
        sync()
    }

    /// Gives the root window the cursor font's glyph `glyph` (e.g. 68, left_ptr; 152, xterm)
    /// as its cursor: the pointer's shape changes where it shows the root.
    func setRootCursor(glyph: UInt16) {
        let font = xcb_generate_id(connection)
        let name = "cursor"
        xcb_open_font(connection, font, UInt16(name.utf8.count), name)
        let cursor = xcb_generate_id(connection)
        xcb_create_glyph_cursor(connection, cursor, font, font, glyph, glyph + 1, 0, 0, 0, 0xffff, 0xffff, 0xffff)
        var value = cursor
        xcb_change_window_attributes(connection, root, UInt32(XCB_CW_CURSOR.rawValue), &value)
        xcb_free_cursor(connection, cursor)
        xcb_close_font(connection, font)
        sync()
    }

    /// Waits until the server has processed everything sent so far.
    func sync() {
        xcb_flush(connection)
        free(xcb_get_input_focus_reply(connection, xcb_get_input_focus(connection), nil))
    }
}

enum PainterError: Error {
    case cannotConnect(String)
}
