import Capture
/// What `X11Source` captures and how.
public struct X11Options: Sendable, Hashable {
    /// The display, e.g. `:1` or `host:0.0`; nil takes `$DISPLAY`.
    public var display: String?
    /// A part of the screen; nil captures the whole root window (and follows its size).
    public var region: X11Region?
    /// Draw the pointer into the frames (XFixes cursor image), like FFmpeg's x11grab.
    public var drawCursor = true
    /// Read frames through MIT-SHM when the server offers it. False forces plain
    /// `GetImage` (what a remote display gets anyway): for tests and comparison.
    public var useSharedMemory = true
    /// Grab at most this many frames a second (on a timer with `.fixed`, on change with `.damage`).
    public var frameRate = FrameRate(30)
    /// When to grab: on change (DAMAGE events) or on every slot of `frameRate`.
    public var captureMode = X11CaptureMode.damage
    /// With `.damage`: while nothing changes, repeat the last frame this many times a
    /// second (a keep-alive: skipped blocks, cheap to encode); 0 sends nothing while still.
    public var idleRate: Double = 1

    public init(display: String? = nil, region: X11Region? = nil, drawCursor: Bool = true,
                useSharedMemory: Bool = true, frameRate: FrameRate = FrameRate(30),
                captureMode: X11CaptureMode = .damage, idleRate: Double = 1) {
        self.display = display
        self.region = region
        self.drawCursor = drawCursor
        self.useSharedMemory = useSharedMemory
        self.frameRate = frameRate
        self.captureMode = captureMode
        self.idleRate = idleRate
    }

    /// The display named after `x11:` on the command line, as xcb takes it. People write
    /// the display number alone (`x11:77`, like `DISPLAY` without its colon), X11's own form
    /// (`x11::77`, the colon of `:77`), or a remote one (`x11:host:0.0`): the text is
    /// `[HOST]:NUMBER[.SCREEN]` or `NUMBER[.SCREEN]`, which is `:NUMBER[.SCREEN]`.
    public static func displayName(parsing text: String) throws(X11Error) -> String {
        let host: Substring
        let rest: Substring
        if let colon = text.lastIndex(of: ":") {
            host = text[..<colon]
            rest = text[text.index(after: colon)...]
        } else {
            host = ""
            rest = text[...]
        }
        let parts = rest.split(separator: ".", omittingEmptySubsequences: false)
        func number(_ s: Substring) -> Bool { !s.isEmpty && s.count <= 5 && s.allSatisfy { $0.isASCII && $0.isNumber } }
        guard (1...2).contains(parts.count), parts.allSatisfy(number),
              host.allSatisfy({ $0.isASCII && !$0.isWhitespace && !$0.isNewline && $0.asciiValue! >= 0x21 && $0.asciiValue! < 0x7f })
        else { throw .badDisplayName(text) }
        return String(host) + ":" + String(rest)
    }
}

/// How `X11Source` decides when to grab the screen.
public enum X11CaptureMode: String, Sendable, Hashable, CaseIterable {
    /// On change: the X server's DAMAGE events (and cursor moves and shape changes when
    /// the cursor is drawn) say the captured area changed; the grab follows at once, but
    /// no sooner than one frame interval after the previous one. A variable frame rate.
    case damage
    /// On every slot of the frame rate, changed or not: a steady stream. The way out
    /// when damage is not reported (some compositors, GL drivers that draw without it).
    case fixed
}
