import CommandOptions
import IO
import Metrics
import Serving
import TLS

#if canImport(Glibc)
import Glibc
#endif

/// The loop side of an `AccessChoice`: the token guard and the TLS context that `--web` and
/// `--metrics` share, put on each HTTP server (`protect`), said once at start (`startLines`),
/// and the certificate read again on SIGHUP (`watchReload`). One per run.
///
/// Loop-owned: made before the loop runs, used on the loop thread.
final class HTTPSecurity {
    let choice: AccessChoice
    let access: AccessGuard?
    let tls: TLSContext?

    init(_ choice: AccessChoice, registry: MetricsRegistry, prefix: String) throws {
        self.choice = choice
        access = choice.makeGuard(registry)
        if choice.servesHTTP { AccessGuard.failuresCounter(registry) }
        tls = try choice.makeTLS(prefix: prefix)
    }

    /// The token check and the transport of `server`.
    func protect(_ server: HTTPServer) {
        server.access = access
        if let tls { server.makeTransport = { socket in tls.makeTransport(socket) } }
    }

    var isSecure: Bool { tls != nil }

    /// Where a browser opens the page (`https://` with TLS).
    func pageURL(_ endpoint: Endpoint) -> String { AccessChoice.pageURL(endpoint, secure: isSecure) }

    /// The lines said at start: TLS's fingerprint, then the page's address with the token
    /// made for the run (the one place a token is written), or that `--no-auth` lets anyone in.
    func startLines(page: HTTPServer?, metrics: HTTPServer?) -> [String] {
        var lines: [String] = []
        if let tls { lines.append(AccessChoice.tlsLine(tls)) }
        if let line = choice.startLine(pageURL: page.map { pageURL($0.boundEndpoint) }, metricsURL: metrics.map { pageURL($0.boundEndpoint) + "metrics" }) {
            lines.append(line)
        }
        return lines
    }

    /// SIGHUP reads the certificate files again: new connections get the new certificate,
    /// open ones keep theirs. A file that fails is said and the certificate in use stays.
    /// Nil when there are no files to read.
    func watchReload(_ loop: EventLoop, log: Log) -> SignalWatcher? {
        guard let tls, case .files = tls.source else { return nil }
        let watcher = SignalWatcher(loop: loop, signal: SIGHUP) {
            do {
                try tls.reload()
                log.line("SIGHUP: " + AccessChoice.tlsLine(tls), force: true)
            } catch {
                log.line("SIGHUP: \(error); the certificate in use stays", force: true)
            }
        }
        watcher.start()
        return watcher
    }
}
