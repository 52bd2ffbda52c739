#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The X displays of this machine, as their servers' sockets in `/tmp/.X11-unix` (`X0` is
/// display `:0`), and what to say about a display that cannot be opened: which are there,
/// and what to try. A socket may outlive its server; what it names is what is worth trying.
public enum X11Displays {
    public static let socketDirectory = "/tmp/.X11-unix"

    /// The display numbers with a socket in `directory`, lowest first.
    public static func local(in directory: String = socketDirectory) -> [Int] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var numbers: [Int] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasPrefix("X"), let n = Int(name.dropFirst()), n >= 0 { numbers.append(n) }
        }
        return numbers.sorted()
    }

    /// The display number of a local display name (`:1`, `:1.0`, `unix:1`); nil for another
    /// host's (`host:0`) or a name that is none.
    public static func localNumber(_ display: String) -> Int? {
        guard let colon = display.lastIndex(of: ":") else { return nil }
        let host = display[..<colon]
        guard host.isEmpty || host == "unix" else { return nil }
        return Int(display[display.index(after: colon)...].prefix { $0 != "." })
    }

    /// The display name without its screen number (`host.lan:1.2` is `host.lan:1`).
    public static func withoutScreen(_ display: String) -> String {
        guard let colon = display.lastIndex(of: ":"), let dot = display[colon...].firstIndex(of: ".") else { return display }
        return String(display[..<dot])
    }

    /// The screen number of a display name (`:1.2` is 2), 0 when it names none.
    public static func screenNumber(_ display: String) -> Int {
        guard let colon = display.lastIndex(of: ":"), let dot = display[colon...].firstIndex(of: ".") else { return 0 }
        return Int(display[display.index(after: dot)...]) ?? 0
    }

    /// The X servers found, and the one to try: `X servers here: :0, :1 (try --source x11:0)`,
    /// or how to get one when there is none (display `wanted`, else 99).
    public static func found(_ present: [Int], wanted: Int? = nil) -> String {
        guard let first = present.first else {
            let n = wanted ?? 99
            return "no X server runs here (\(socketDirectory) has no display socket): start one (Xvfb :\(n) &) and use --source x11:\(n), or use --source testsrc"
        }
        return "X servers here: " + present.map { ":\($0)" }.joined(separator: ", ") + " (try --source x11:\(first))"
    }

    /// Why `xcb_connect` could not open `display` and what to try, from the displays present.
    public static func connectFailure(_ display: String, present: [Int]) -> String {
        guard let number = localNumber(display) else {
            return "no X server answered, or it refused this host (another host's X server must listen on TCP port \(6000 + (remoteNumber(display) ?? 0)) and let this host in)"
        }
        if present.contains(number) {
            return "its X server refused the connection: not authorized (XAUTHORITY must name its cookie file, or allow this user there: xhost +si:localuser:$USER), or a socket left by a server that is gone"
        }
        let others = present.filter { $0 != number }
        return others.isEmpty ? "no X server there, and " + found([], wanted: number) : "no X server there; " + found(others)
    }

    /// The screens a display has, for a screen number it has not: `display :0 has screen 0
    /// only (try --source x11:0)`.
    public static func missingScreen(_ display: String, screens: Int) -> String {
        let base = withoutScreen(display)
        let which = screens <= 1 ? "screen 0 only" : "screens 0 to \(screens - 1)"
        let number = localNumber(base).map(String.init) ?? base
        return "no screen \(screenNumber(display)): display \(base) has \(which) (try --source x11:\(number))"
    }

    private static func remoteNumber(_ display: String) -> Int? {
        guard let colon = display.lastIndex(of: ":") else { return nil }
        return Int(display[display.index(after: colon)...].prefix { $0 != "." })
    }
}
