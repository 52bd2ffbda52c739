/// Exit codes, as sysexits.h names them (docs/architecture.md, "Security and errors").
public enum ExitCode: Int32, Sendable, CaseIterable {
    case ok = 0
    /// A bad option or value.
    case usage = 64
    /// The input is not what it claims to be (a malformed Y4M header, a truncated frame).
    case dataError = 65
    /// The input does not exist or cannot be read.
    case noInput = 66
    /// A peer, port, display or device is not there.
    case unavailable = 69
    /// A bug: something that should not happen did.
    case software = 70
    /// Reading or writing failed.
    case ioError = 74
    /// A peer refused nalcast's credentials (a wrong SRT passphrase).
    case noPermission = 77

    /// What the code says, in the man page's EXIT STATUS.
    public var meaning: String {
        switch self {
        case .ok: "success; also when the producer said its stream ended (the end-of-sequence NAL unit nalcast produce sends when it stops)"
        case .usage: "bad usage: an unknown option, a bad value, a missing argument"
        case .dataError: "bad input data: a malformed or truncated Y4M header or frame, video that is not H.264, a damaged container file, a container given where Annex-B is read"
        case .noInput: "an input file is missing or cannot be read"
        case .unavailable: "a peer, port, display or sound device is unavailable: an upstream lost past --reconnect-timeout, a --forward target that never answered, no X server, no sound server, nothing decodable for probe"
        case .noPermission: "a peer refused nalcast's credentials: a wrong SRT passphrase (--srt-passphrase-file, NALCAST_SRT_PASSPHRASE), or one given on one side only"
        case .software: "internal error"
        case .ioError: "an I/O error reading or writing"
        }
    }
}

/// An error that ends the program with one line on stderr and a distinct exit code.
public struct CommandError: Error {
    public let code: ExitCode
    public let message: String

    public init(code: ExitCode, message: String) {
        self.code = code
        self.message = message
    }

    public static func usage(_ message: String) -> CommandError { CommandError(code: .usage, message: message) }
    public static func noInput(_ message: String) -> CommandError { CommandError(code: .noInput, message: message) }
    public static func unavailable(_ message: String) -> CommandError { CommandError(code: .unavailable, message: message) }
    public static func io(_ message: String) -> CommandError { CommandError(code: .ioError, message: message) }
}
