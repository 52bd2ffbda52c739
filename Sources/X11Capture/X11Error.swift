import Capture
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Everything that can go wrong capturing an X11 screen, each one line.
///
/// `isUnavailable` errors mean the display is not there (exit 69 in the CLI);
/// `isBadRegion` errors are a wrong `--region` (exit 64).
public enum X11Error: Error, Hashable, CustomStringConvertible {
    /// No display given and `$DISPLAY` is not set; `found` says which displays are there
    /// (`X11Displays.found`).
    case noDisplay(found: String)
    /// What follows `x11:` is no display name (see `X11Options.displayName(parsing:)`).
    case badDisplayName(String)
    /// `xcb_connect` failed: no server, connection refused, bad display name, no access, no
    /// such screen; `reason` says which displays or screens are there and what to try.
    case cannotConnect(display: String, reason: String)
    /// The connection broke while capturing (the server went away).
    case connectionLost(display: String)
    /// A region that cannot be read, or is empty or odd-sized (`--region X,Y,WxH`).
    case badRegion(String)
    /// A region not entirely on the screen.
    case regionOutsideScreen(region: X11Region, screenWidth: Int, screenHeight: Int)
    /// The root window's pixels are not 32-bit little-endian BGRX (depth 24/32 TrueColor).
    case unsupportedPixelFormat(String)
    /// An X request failed with an X error code.
    case requestFailed(request: String, code: UInt8)
    /// A system call failed (shared memory).
    case system(function: String, errno: Int32)

    public var description: String {
        switch self {
        case .noDisplay(let found):
            "x11: no display: DISPLAY is not set and no --source x11:DISPLAY given; \(found)"
        case .badDisplayName(let text):
            "x11: '\(text)' is not a display (expected a display number or host and number: x11:77, x11::77, x11:host:0.0)"
        case .cannotConnect(let display, let reason):
            "x11: cannot open display \(display): \(reason)"
        case .connectionLost(let display):
            "x11: connection to display \(display) lost"
        case .badRegion(let text):
            "x11: bad region '\(text)' (expected X,Y,WxH with even W and H, e.g. 0,0,1280x720)"
        case .regionOutsideScreen(let region, let w, let h):
            "x11: region \(region) is outside the \(w)x\(h) screen"
        case .unsupportedPixelFormat(let detail):
            "x11: unsupported screen pixel format (\(detail)); need 24/32-bit TrueColor"
        case .requestFailed(let request, let code):
            "x11: \(request) failed (X error \(code))"
        case .system(let function, let errno):
            "x11: \(function): \(String(cString: strerror(errno)))"
        }
    }

    /// The display cannot be used: not set, not reachable, gone.
    public var isUnavailable: Bool {
        switch self {
        case .noDisplay, .cannotConnect, .connectionLost: true
        default: false
        }
    }

    /// The region option is wrong for this screen.
    public var isBadRegion: Bool {
        switch self {
        case .badRegion, .regionOutsideScreen: true
        default: false
        }
    }
}
