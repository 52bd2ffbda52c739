import Capture
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CXCBShm

/// One xcb connection to a display and the screen on it that we capture: its root
/// window, and the checks that its pixels are what the converter takes (32-bit
/// little-endian xRGB, i.e. bytes B, G, R, X).
///
/// Not `Sendable`: only the capture thread may use it (xcb itself is thread-safe, but
/// replies and events here are consumed in order by one owner).
final class X11Connection {
    let handle: OpaquePointer
    /// The display name as connected to, e.g. `:1`.
    let display: String
    let root: xcb_window_t

    /// Connects to `display`, or `$DISPLAY` when nil. The corresponding C function is
    /// `xcb_connect`.
    init(display: String?) throws(X11Error) {
        let name = try X11Connection.displayName(explicit: display, environment: getenv("DISPLAY").map { String(cString: $0) })
        var screenNumber: Int32 = 0
        guard let connection = xcb_connect(name, &screenNumber) else {
            throw .cannotConnect(display: name, reason: "out of memory")
        }
        let code = xcb_connection_has_error(connection)
        if code != 0 {
            xcb_disconnect(connection)
            let reason = switch code {
            case XCB_CONN_ERROR: X11Displays.connectFailure(name, present: X11Displays.local())
            case XCB_CONN_CLOSED_INVALID_SCREEN: X11Connection.screenCount(name).map { X11Displays.missingScreen(name, screens: $0) } ?? X11Connection.reason(code)
            default: X11Connection.reason(code)
            }
            throw .cannotConnect(display: name, reason: reason)
        }
        self.handle = connection
        self.display = name

        var roots = xcb_setup_roots_iterator(xcb_get_setup(connection))
        for _ in 0..<screenNumber where roots.rem > 0 { xcb_screen_next(&roots) }
        guard roots.rem > 0, let screen = roots.data else {
            let screens = Int(xcb_setup_roots_length(xcb_get_setup(connection)))
            xcb_disconnect(connection)
            throw .cannotConnect(display: name, reason: X11Displays.missingScreen(name, screens: screens))
        }
        self.root = screen.pointee.root
        do {
            try X11Connection.checkPixelFormat(setup: xcb_get_setup(connection), screen: screen)
        } catch {
            xcb_disconnect(connection)
            throw error
        }
    }

    deinit { xcb_disconnect(handle) }

    /// The display to open: the explicit one, else `$DISPLAY` (given as `environment`).
    static func displayName(explicit: String?, environment: String?) throws(X11Error) -> String {
        if let explicit, !explicit.isEmpty { return explicit }
        if let environment, !environment.isEmpty { return environment }
        throw .noDisplay(found: X11Displays.found(X11Displays.local()))
    }

    /// How many screens the display of `name` (`:1.3`) has: its screen 0 opened for a moment.
    private static func screenCount(_ name: String) -> Int? {
        guard let connection = xcb_connect(X11Displays.withoutScreen(name), nil) else { return nil }
        defer { xcb_disconnect(connection) }
        guard xcb_connection_has_error(connection) == 0 else { return nil }
        return Int(xcb_setup_roots_length(xcb_get_setup(connection)))
    }

    /// Why `xcb_connect` failed, from `xcb_connection_has_error`.
    private static func reason(_ code: Int32) -> String {
        switch code {
        case XCB_CONN_ERROR: "no X server there, connection refused or not authorized"
        case XCB_CONN_CLOSED_EXT_NOTSUPPORTED: "extension not supported"
        case XCB_CONN_CLOSED_MEM_INSUFFICIENT: "out of memory"
        case XCB_CONN_CLOSED_REQ_LEN_EXCEED: "request too long"
        case XCB_CONN_CLOSED_PARSE_ERR: "not a valid display name"
        case XCB_CONN_CLOSED_INVALID_SCREEN: "no such screen (x11:DISPLAY.SCREEN; most displays have screen 0 only)"
        default: "connection error \(code)"
        }
    }

    /// Root depth 24 or 32, 32 bits per pixel, LSB-first bytes, TrueColor masks
    /// R 0xff0000, G 0xff00, B 0xff: the memory is B, G, R, X per pixel.
    private static func checkPixelFormat(setup: UnsafePointer<xcb_setup_t>, screen: UnsafeMutablePointer<xcb_screen_t>) throws(X11Error) {
        let depth = screen.pointee.root_depth
        guard setup.pointee.image_byte_order == UInt8(XCB_IMAGE_ORDER_LSB_FIRST.rawValue) else {
            throw .unsupportedPixelFormat("MSB-first image byte order")
        }
        var bitsPerPixel: UInt8 = 0
        var formats = xcb_setup_pixmap_formats_iterator(setup)
        while formats.rem > 0 {
            if formats.data.pointee.depth == depth { bitsPerPixel = formats.data.pointee.bits_per_pixel }
            xcb_format_next(&formats)
        }
        guard (depth == 24 || depth == 32), bitsPerPixel == 32 else {
            throw .unsupportedPixelFormat("depth \(depth), \(bitsPerPixel) bits per pixel")
        }
        var depths = xcb_screen_allowed_depths_iterator(screen)
        while depths.rem > 0 {
            var visuals = xcb_depth_visuals_iterator(depths.data)
            while visuals.rem > 0 {
                let v = visuals.data.pointee
                if v.visual_id == screen.pointee.root_visual {
                    guard v.red_mask == 0xff0000, v.green_mask == 0xff00, v.blue_mask == 0xff else {
                        throw .unsupportedPixelFormat("masks R \(hex(v.red_mask)) G \(hex(v.green_mask)) B \(hex(v.blue_mask))")
                    }
                    return
                }
                xcb_visualtype_next(&visuals)
            }
            xcb_depth_next(&depths)
        }
        throw .unsupportedPixelFormat("root visual not found")
    }

    private static func hex(_ value: UInt32) -> String { "0x" + String(value, radix: 16) }

    /// The extension's first event code when the server has it, else nil. The
    /// corresponding C function is `xcb_get_extension_data`.
    func extensionFirstEvent(_ id: OpaquePointer) -> UInt8? {
        guard let data = xcb_get_extension_data(handle, id), data.pointee.present != 0 else { return nil }
        return data.pointee.first_event
    }

    /// The root window's current size (it changes with RandR). The corresponding C
    /// function is `xcb_get_geometry`.
    func rootSize() throws(X11Error) -> (width: Int, height: Int) {
        var error: UnsafeMutablePointer<xcb_generic_error_t>?
        guard let reply = xcb_get_geometry_reply(handle, xcb_get_geometry(handle, root), &error) else {
            throw failure("GetGeometry", error)
        }
        defer { free(reply) }
        return (Int(reply.pointee.width), Int(reply.pointee.height))
    }

    /// The error for a request whose reply did not come: the connection's end, or the X
    /// error (freed here).
    func failure(_ request: String, _ error: UnsafeMutablePointer<xcb_generic_error_t>?) -> X11Error {
        defer { free(error) }
        if xcb_connection_has_error(handle) != 0 { return .connectionLost(display: display) }
        return .requestFailed(request: request, code: error?.pointee.error_code ?? 0)
    }

    /// Throws `connectionLost` if the connection broke.
    func checkConnection() throws(X11Error) {
        if xcb_connection_has_error(handle) != 0 { throw .connectionLost(display: display) }
    }
}
