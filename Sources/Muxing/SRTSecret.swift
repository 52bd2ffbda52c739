import CMedia

/// SRT's encryption for `--forward srt://` and `--from srt://`: the passphrase (from
/// `--srt-passphrase-file` or `NALCAST_SRT_PASSPHRASE`, never the command line, which `ps`
/// shows) and the key length, handed to libavformat's SRT protocol as its `passphrase` and
/// `pbkeylen` options. Its description never shows the passphrase.
public struct SRTSecret: Sendable, Equatable, CustomStringConvertible {
    public let passphrase: String
    /// 16, 24 or 32 bytes (AES-128, -192, -256); nil: SRT's default (16).
    public let keyLength: Int?

    /// SRT takes 10 to 79 characters.
    public static let lengths = 10...79
    public static let keyLengths = [16, 24, 32]

    /// Nil with the reason when SRT would refuse it.
    public init(passphrase: String, keyLength: Int?) throws(SRTSecretError) {
        guard Self.lengths.contains(passphrase.utf8.count) else {
            throw SRTSecretError("an SRT passphrase is 10 to 79 characters, this one \(passphrase.utf8.count)")
        }
        if let keyLength, !Self.keyLengths.contains(keyLength) { throw SRTSecretError("pbkeylen \(keyLength): expected 16, 24 or 32") }
        self.passphrase = passphrase
        self.keyLength = keyLength
    }

    /// libavformat's SRT protocol options.
    public var libavformatOptions: [(String, String)] { options }

    var options: [(String, String)] {
        [("passphrase", passphrase)] + (keyLength.map { [("pbkeylen", String($0))] } ?? [])
    }

    public var description: String { "encrypted (AES-\((keyLength ?? 16) * 8))" }

    /// After an SRT open of `url` (as a caller) failed: whether its listener refuses this
    /// passphrase (a wrong one, or one it does not expect). libavformat says only "I/O
    /// error" and drops libsrt's reason with its socket, so the listener is asked once more
    /// with a socket of nalcast's own (`CMedia_srt_refuses_passphrase`, at most 3 s).
    public func isRefused(by url: String) -> Bool {
        guard let (host, port, query) = Self.parts(url) else { return false }
        let fields = query.split(separator: "&")
        if fields.contains(where: { $0.hasPrefix("mode=") && $0 != "mode=caller" }) { return false }
        let streamid = fields.first { $0.hasPrefix("streamid=") }.map { String($0.dropFirst("streamid=".count)) }
        return CMedia_srt_refuses_passphrase(host, port, passphrase, Int32(keyLength ?? 0), streamid, 3000) == 1
    }

    /// Leaves libsrt's own warning about a refused passphrase out of stderr (nalcast says it in
    /// a line of its own); every other line of libsrt's goes there as before. Once the FFmpeg
    /// libraries are open, when a passphrase is configured.
    public static func quietRefusals() { CMedia_srt_quiet_refusals() }

    /// HOST, PORT and the query of `srt://HOST:PORT[?QUERY]` (`[IPv6]` too).
    static func parts(_ url: String) -> (String, String, Substring)? {
        guard url.lowercased().hasPrefix("srt://") else { return nil }
        let rest = url.dropFirst("srt://".count)
        let authority = rest.prefix { $0 != "?" && $0 != "/" }
        let query = rest.split(separator: "?", maxSplits: 1).dropFirst().first ?? ""
        guard let colon = authority.lastIndex(of: ":") else { return nil }
        var host = authority[..<colon]
        if host.hasPrefix("[") && host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        let port = authority[authority.index(after: colon)...]
        guard !host.isEmpty, !port.isEmpty else { return nil }
        return (String(host), String(port), query)
    }

    /// The one line for a refused passphrase.
    public static let refusedText = "the SRT peer refused the passphrase (wrong, or given on one side only): check --srt-passphrase-file or NALCAST_SRT_PASSPHRASE"
}

public struct SRTSecretError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
