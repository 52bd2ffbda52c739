import CommandOptions
import IO
import Metrics
import Serving
import TLS

#if canImport(Glibc)
import Glibc
#endif

/// Who may use the HTTP side (`--web`'s page and /ws, `--metrics`, `POST /bitrate`):
/// `--token-file`, the token made for a run that serves them to other machines without one,
/// or `--no-auth`; and whether it speaks TLS (`--tls-cert`/`--tls-key`, `--tls self-signed`).
/// Raw `--listen` sockets carry neither (docs/operations.md, "Security").
struct AccessChoice {
    enum Tokens {
        /// Nothing is checked: loopback only, or `--no-auth`.
        case none(explicit: Bool)
        case file(path: String, TokenTable)
        /// Made at start for a non-loopback `--web`/`--metrics` without a token file: every
        /// permission, printed once with the page's address.
        case generated(String)
    }

    var tokens: Tokens = .none(explicit: false)
    /// Whether an HTTP listener is configured at all (`--web` or `--metrics`).
    var servesHTTP = false
    /// The TLS of `--web` and `--metrics` (its context is made by `HTTPSecurity`); nil for
    /// plain HTTP.
    var tls: TLSContext.Source?

    static let specs: [OptionSpec] = [
        OptionSpec(name: "token-file", value: "FILE", help: "serve --web and --metrics only to requests with a token of FILE (a line each: TOKEN PERMISSIONS, permissions watch, publish, metrics, control or all, comma-separated), as Authorization: Bearer TOKEN or ?token=TOKEN"),
        OptionSpec(name: "no-auth", value: nil, help: "serve --web and --metrics on a non-loopback address without a token (else one is made at start and its URL printed)"),
        OptionSpec(name: "tls-cert", value: "FILE", help: "serve --web and --metrics over TLS (https, wss) with this PEM certificate (and its chain); read again on SIGHUP"),
        OptionSpec(name: "tls-key", value: "FILE", help: "the PEM private key of --tls-cert"),
        OptionSpec(name: "tls", value: "MODE", help: "self-signed: serve --web and --metrics over TLS with a certificate made at start (its SHA-256 fingerprint printed)", values: ["self-signed"]),
    ]

    static func parse(_ o: ParsedOptions, web: Endpoint?, metrics: Endpoint?, publish: Endpoint? = nil, prefix: String) throws -> AccessChoice {
        var choice = AccessChoice()
        choice.servesHTTP = web != nil || metrics != nil || publish != nil
        let remote = [web, metrics, publish].contains { $0.map { !$0.isLoopback } ?? false }
        if let path = o.string("token-file") {
            guard !o.has("no-auth") else { throw CommandError.usage("\(prefix)--token-file and --no-auth: give one of them") }
            guard choice.servesHTTP else { throw CommandError.usage("\(prefix)--token-file protects --web and --metrics (and a whip-listen:// input): give one of them") }
            choice.tokens = .file(path: path, try readTable(path, prefix: prefix))
        } else if o.has("no-auth") {
            choice.tokens = .none(explicit: true)
        } else if remote {
            choice.tokens = .generated(TokenTable.randomToken())
        }
        choice.tls = try tlsSource(o, web: web, metrics: metrics, prefix: prefix)
        // Files that are no certificate and key are said now (and by --dry-run).
        if case .files = choice.tls { _ = try choice.makeTLS(prefix: prefix) }
        return choice
    }

    /// `--tls-cert` and `--tls-key` (files that must be there), or `--tls self-signed`.
    private static func tlsSource(_ o: ParsedOptions, web: Endpoint?, metrics: Endpoint?, prefix: String) throws -> TLSContext.Source? {
        let certificate = o.string("tls-cert"), key = o.string("tls-key"), mode = o.string("tls")
        guard certificate != nil || key != nil || mode != nil else { return nil }
        guard web != nil || metrics != nil else { throw CommandError.usage("\(prefix)TLS is for --web and --metrics: give one of them") }
        if let mode {
            guard mode == "self-signed" else { throw CommandError.usage("\(prefix)--tls \(mode): expected self-signed (or give --tls-cert FILE --tls-key FILE)") }
            guard certificate == nil, key == nil else { throw CommandError.usage("\(prefix)--tls self-signed and --tls-cert/--tls-key: give one of them") }
            return .selfSigned(names: subjectNames([web, metrics].compactMap { $0 }))
        }
        guard let certificate, let key else { throw CommandError.usage("\(prefix)--tls-cert and --tls-key go together: give both PEM files") }
        for (option, path) in [("tls-cert", certificate), ("tls-key", key)] {
            guard let file = fopen(path, "r") else { throw CommandError.noInput("\(prefix)--\(option) \(path): \(describeOpenError(errno))") }
            fclose(file)
        }
        return .files(certificate: certificate, key: key)
    }

    /// What a self-signed certificate names: localhost, the loopback addresses, this
    /// machine's name and the addresses listened on (a wildcard names none).
    static func subjectNames(_ endpoints: [Endpoint]) -> [String] {
        var names = ["DNS:localhost", "IP:127.0.0.1", "IP:::1"]
        var buffer = [CChar](repeating: 0, count: 256)
        if gethostname(&buffer, buffer.count - 1) == 0 {
            let machine = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if !machine.isEmpty, machine != "localhost" { names.append("DNS:\(machine)") }
        }
        for case .tcp(let host, _) in endpoints where !["0.0.0.0", "::", "localhost", "127.0.0.1", "::1"].contains(host) {
            let isAddress = host.allSatisfy { $0.isHexDigit || $0 == "." || $0 == ":" }
            let name = (isAddress ? "IP:" : "DNS:") + host
            if !names.contains(name) { names.append(name) }
        }
        return names
    }

    /// The token file's table; one line when it cannot be read (66) or is not one (65).
    private static func readTable(_ path: String, prefix: String) throws -> TokenTable {
        guard let file = fopen(path, "r") else {
            throw CommandError.noInput("\(prefix)--token-file \(path): \(describeOpenError(errno))")
        }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = fread(&buffer, 1, buffer.count, file)
            if n <= 0 { break }
            bytes += buffer[0..<n]
            if bytes.count > 1 << 20 { throw CommandError(code: .dataError, message: "\(prefix)--token-file \(path): larger than 1 MB: not a token file") }
        }
        do {
            return try TokenTable(parsing: String(decoding: bytes, as: UTF8.self))
        } catch {
            throw CommandError(code: .dataError, message: "\(prefix)--token-file \(path): \(error)")
        }
    }

    /// The guard the HTTP servers share, or nil when nothing is checked (`HTTPSecurity`).
    func makeGuard(_ registry: MetricsRegistry) -> AccessGuard? {
        switch tokens {
        case .none: nil
        case .file(_, let table): AccessGuard(table: table, registry: registry)
        case .generated(let token): AccessGuard(table: TokenTable(token: token, permissions: .all), registry: registry)
        }
    }

    /// The `--dry-run` lines, when an HTTP listener is configured.
    var lines: [String] {
        guard servesHTTP else { return [] }
        let access: String
        switch tokens {
        case .none(let explicit): access = "access: " + (explicit ? "anyone who reaches the port (--no-auth)" : "anyone on this machine (loopback)")
        case .file(let path, let table): access = "access: tokens of \(path) (\(table.entries.count))"
        case .generated: access = "access: a token made at start, printed with the page's address"
        }
        return [access, "tls: " + tlsText]
    }

    /// SIGHUP reads the certificate files again (`HTTPSecurity.watchReload`).
    var reloadsOnHangUp: Bool {
        if case .files = tls { return true }
        return false
    }

    /// The TLS context, or nil without TLS; 65 for files that are no certificate and key.
    func makeTLS(prefix: String) throws -> TLSContext? {
        guard let tls else { return nil }
        do {
            return try TLSContext(tls)
        } catch {
            throw CommandError(code: .dataError, message: "\(prefix)\(error)")
        }
    }

    private var tlsText: String {
        switch tls {
        case nil: "none (http)"
        case .files(let certificate, let key)?: "\(certificate) and \(key) (TLS 1.2+, read again on SIGHUP)"
        case .selfSigned?: "a self-signed certificate made at start (TLS 1.2+)"
        }
    }

    /// The line said at start about TLS: the certificate's fingerprint, to compare with what
    /// the browser shows before accepting it.
    static func tlsLine(_ tls: TLSContext) -> String {
        switch tls.source {
        case .selfSigned: "TLS: a self-signed certificate made for this run, SHA-256 fingerprint \(tls.fingerprint)"
        case .files(let certificate, _): "TLS: \(certificate), SHA-256 fingerprint \(tls.fingerprint); SIGHUP reads it again"
        }
    }

    /// The line said at start: where to open the page with its token (the one time a token
    /// is written anywhere), or that nothing is checked on a non-loopback address.
    func startLine(pageURL: String?, metricsURL: String?) -> String? {
        switch tokens {
        case .generated(let token):
            if let pageURL { return "open \(pageURL)?token=\(token) (a token made for this run: the page keeps it, give the address only to who may watch)" }
            guard let metricsURL else { return "publish with Authorization: Bearer \(token) (a token made for this run)" }
            return "use Authorization: Bearer \(token) for \(metricsURL) (a token made for this run)"
        case .none(explicit: true):
            return "--no-auth: anyone who reaches \(pageURL ?? metricsURL ?? "the port") may watch"
        default:
            return nil
        }
    }

    /// The address a browser on another machine opens (`http://HOST:PORT/`, `https://` with
    /// TLS): this machine's name for a wildcard address (`0.0.0.0`, `::`).
    static func pageURL(_ endpoint: Endpoint, secure: Bool = false) -> String {
        let scheme = secure ? "https" : "http"
        guard case .tcp(let host, let port) = endpoint else { return endpoint.description }
        guard host == "0.0.0.0" || host == "::" else { return "\(scheme)" + endpoint.description.dropFirst(3) + "/" }
        var name = [CChar](repeating: 0, count: 256)
        let machine = gethostname(&name, name.count - 1) == 0 ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : host
        return "\(scheme)://\(machine):\(port)/"
    }
}
