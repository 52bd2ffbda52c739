import Capture
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CPortal

/// What to ask the ScreenCast portal for.
public struct PortalOptions: Sendable, Hashable {
    /// Let the user pick a monitor, a window, or either.
    public enum Sources: String, Sendable, Hashable, CaseIterable {
        case monitor, window, any
        var bits: UInt32 { self == .monitor ? 1 : self == .window ? 2 : 3 }
    }
    public var sources = Sources.monitor
    /// The pointer in the picture: sent beside it as metadata and drawn by us when the portal
    /// offers that (`AvailableCursorModes`), else drawn by the compositor (embedded); or left
    /// out (hidden).
    public var drawCursor = true
    /// Where the restore token is kept (read before, written after): the user's choice is
    /// remembered, so the portal asks once. nil: neither read nor kept.
    public var tokenFile: String?
    /// The PipeWire side (the node and connection come from the portal).
    public var frameRate = FrameRate(30)
    public var idleRate: Double = 1

    public init(sources: Sources = .monitor, drawCursor: Bool = true, tokenFile: String? = nil,
                frameRate: FrameRate = FrameRate(30), idleRate: Double = 1) {
        self.sources = sources
        self.drawCursor = drawCursor
        self.tokenFile = tokenFile
        self.frameRate = frameRate
        self.idleRate = idleRate
    }

    /// `$XDG_STATE_HOME/nalcast/portal-token`, or `~/.local/state/nalcast/portal-token`.
    public static var defaultTokenFile: String? {
        func variable(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
        if let state = variable("XDG_STATE_HOME"), state.hasPrefix("/") { return state + "/nalcast/portal-token" }
        guard let home = variable("HOME"), home.hasPrefix("/") else { return nil }
        return home + "/.local/state/nalcast/portal-token"
    }
}

/// Why the portal gave no screen: not there (69), the user said no (69, a line of its own).
public enum PortalError: Error, Hashable, CustomStringConvertible {
    case unavailable(String)
    case notAllowed(String)
    case failed(String)

    public var description: String {
        switch self {
        case .unavailable(let why), .notAllowed(let why), .failed(let why): "portal: \(why)"
        }
    }
}

/// A screen cast granted by `org.freedesktop.portal.ScreenCast` (CPortal: CreateSession,
/// SelectSources, Start, OpenPipeWireRemote, over sd-bus): the PipeWire node and connection
/// to read it from. The session lives as long as this object (closing it ends the cast).
///
/// Not `Sendable`: made, kept (by its `PipeWireSource`) and closed on the capture thread.
public final class ScreenCastPortal {
    private let session: OpaquePointer
    public let node: UInt32
    /// The PipeWire connection; `PipeWireSource` takes it over.
    public let remoteFD: Int32
    public let version: UInt32
    /// The cursor mode asked for: 1 hidden, 2 embedded, 4 metadata (the pointer is ours to draw).
    public let cursorMode: UInt32
    /// Whether a kept restore token was given (the portal may still have asked).
    public let usedToken: Bool
    /// Where the new token was kept, or why not.
    public let tokenNote: String

    public init(_ options: PortalOptions) throws(PortalError) {
        let kept = options.tokenFile.flatMap(Self.readToken)
        var result = nc_portal_result()
        var code: Int32 = 0
        let opened: OpaquePointer? = (kept ?? "").withCString { token in
            var request = nc_portal_request(types: options.sources.bits, cursor_mode: options.drawCursor ? 4 | 2 : 1,
                                            persist_mode: 2, restore_token: kept == nil ? nil : token)
            return nc_portal_open(&request, &result, &code)
        }
        let error = String(cField: result.error)
        guard let opened else {
            switch Int(code) {
            case Int(NC_PORTAL_UNAVAILABLE): throw .unavailable(error)
            case Int(NC_PORTAL_CANCELLED): throw .notAllowed(error)
            default: throw .failed(error)
            }
        }
        session = opened
        node = result.node
        remoteFD = result.fd
        version = result.version
        cursorMode = result.cursor_mode
        usedToken = kept != nil
        let token = String(cField: result.restore_token)
        if let file = options.tokenFile, !token.isEmpty {
            tokenNote = Self.keepToken(token, in: file) ?? "choice kept in \(file)"
        } else {
            tokenNote = options.tokenFile == nil ? "choice not kept" : "the portal gave no restore token (version \(version))"
        }
    }

    deinit { nc_portal_close(session) }

    /// The kept token: the file's first line (a token is a UUID; 4 KiB read at most).
    private static func readToken(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 4096)
        let count = read(fd, &bytes, bytes.count)
        guard count > 0 else { return nil }
        let line = bytes[..<count].split(separator: UInt8(ascii: "\n")).first.map { String(decoding: $0, as: UTF8.self) }
        return line.flatMap { $0.allSatisfy { $0 == " " } ? nil : $0.filter { $0 != " " && $0 != "\r" } }
    }

    /// Writes the token (mode 0600, its directories made): nil, or why it could not.
    private static func keepToken(_ token: String, in path: String) -> String? {
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        if !directory.isEmpty { makeDirectories(directory) }
        let temporary = path + ".new"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return "choice not kept: \(temporary): \(String(cString: strerror(errno)))" }
        let bytes = Array((token + "\n").utf8)
        let written = write(fd, bytes, bytes.count)
        close(fd)
        guard written == bytes.count, rename(temporary, path) == 0 else { return "choice not kept: \(path): \(String(cString: strerror(errno)))" }
        return nil
    }

    private static func makeDirectories(_ path: String) {
        var prefix = ""
        for part in path.split(separator: "/") {
            prefix += "/" + part
            _ = mkdir(prefix, 0o700)
        }
    }
}
