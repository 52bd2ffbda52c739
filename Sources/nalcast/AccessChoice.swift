import CommandOptions
import IO
import Metrics
import Serving

#if canImport(Glibc)
import Glibc
#endif

/// Who may use the HTTP side (`--web`'s page and /ws, `--metrics`, `POST /bitrate`):
/// `--token-file`, the token made for a run that serves them to other machines without one,
/// or `--no-auth`. Raw `--listen` sockets carry no token (docs/operations.md, "Security").
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

    static let specs: [OptionSpec] = [
        OptionSpec(name: "token-file", value: "FILE", help: "serve --web and --metrics only to requests with a token of FILE (a line each: TOKEN PERMISSIONS, permissions watch, publish, metrics, control or all, comma-separated), as Authorization: Bearer TOKEN or ?token=TOKEN"),
        OptionSpec(name: "no-auth", value: nil, help: "serve --web and --metrics on a non-loopback address without a token (else one is made at start and its URL printed)"),
    ]

    static func parse(_ o: ParsedOptions, web: Endpoint?, metrics: Endpoint?, prefix: String) throws -> AccessChoice {
        var choice = AccessChoice()
        choice.servesHTTP = web != nil || metrics != nil
        let remote = [web, metrics].contains { $0.map { !$0.isLoopback } ?? false }
        if let path = o.string("token-file") {
            guard !o.has("no-auth") else { throw CommandError.usage("\(prefix)--token-file and --no-auth: give one of them") }
            guard choice.servesHTTP else { throw CommandError.usage("\(prefix)--token-file protects --web and --metrics: give one of them") }
            choice.tokens = .file(path: path, try readTable(path, prefix: prefix))
        } else if o.has("no-auth") {
            choice.tokens = .none(explicit: true)
        } else if remote {
            choice.tokens = .generated(TokenTable.randomToken())
        }
        return choice
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

    /// The guard the HTTP servers share, or nil when nothing is checked.
    func makeGuard(_ registry: MetricsRegistry) -> AccessGuard? {
        switch tokens {
        case .none: nil
        case .file(_, let table): AccessGuard(table: table, registry: registry)
        case .generated(let token): AccessGuard(table: TokenTable(token: token, permissions: .all), registry: registry)
        }
    }

    /// The `--dry-run` line, when an HTTP listener is configured.
    var lines: [String] {
        guard servesHTTP else { return [] }
        switch tokens {
        case .none(let explicit): return ["access: " + (explicit ? "anyone who reaches the port (--no-auth)" : "anyone on this machine (loopback)")]
        case .file(let path, let table): return ["access: tokens of \(path) (\(table.entries.count))"]
        case .generated: return ["access: a token made at start, printed with the page's address"]
        }
    }

    /// The line said at start: where to open the page with its token (the one time a token
    /// is written anywhere), or that nothing is checked on a non-loopback address.
    func startLine(pageURL: String?, metricsURL: String?) -> String? {
        switch tokens {
        case .generated(let token):
            if let pageURL { return "open \(pageURL)?token=\(token) (a token made for this run: the page keeps it, give the address only to who may watch)" }
            return "use Authorization: Bearer \(token) for \(metricsURL ?? "/metrics") (a token made for this run)"
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
        let machine = gethostname(&name, name.count - 1) == 0 ? String(cString: name) : host
        return "\(scheme)://\(machine):\(port)/"
    }
}
