import Clocks
import Metrics

/// The token check of an `HTTPServer` (`--token-file`, or the token made for a remote
/// `--web`): decides each request of a route that needs a permission, counts the failures
/// and says how long a failed attempt waits for its answer.
///
/// Slowing is per peer address (the host, not the port): each failure from a host makes its
/// next failure's answer wait twice as long (`baseDelay` up to `maxDelay`), and a host's
/// failures are answered one after another (`answerAt`), so opening connections in parallel
/// gains nothing; past `maxWaiting` answers waiting, its further failures are closed at once,
/// still counted. A host that fails nothing for `forgetAfter` seconds starts again from zero.
/// Requests with a good token are never slowed, nor is anything already admitted: a viewer
/// keeps playing while its neighbour guesses.
///
/// Loop-owned (its `HTTPServer`'s loop); a table may be shared by several servers of one loop.
public final class AccessGuard {
    public enum Decision: Equatable {
        case allowed
        /// No token, or not one of the table's: 401.
        case unauthorized
        /// A token that lacks the route's permission: 403.
        case forbidden
    }

    public let table: TokenTable
    let failures: Counter
    let clock: any Clock
    public var baseDelay = 0.05
    public var maxDelay = 5.0
    public var forgetAfter = 60.0
    public var maxWaiting = 16
    /// The most hosts remembered; past it the quietest are forgotten.
    public var maxHosts = 4096

    private struct HostState {
        var failures = 0
        var lastFailure = 0.0
        var answerAt = 0.0
        var waiting = 0
    }
    private var hosts: [String: HostState] = [:]

    public init(table: TokenTable, registry: MetricsRegistry, clock: any Clock = SystemClock()) {
        self.table = table
        self.clock = clock
        failures = Self.failuresCounter(registry)
    }

    /// `nalcast_http_auth_failures_total`: registered wherever an HTTP listener is, checked or
    /// not (0 when nothing is checked), so that a scrape always finds it.
    @discardableResult
    public static func failuresCounter(_ registry: MetricsRegistry) -> Counter {
        registry.counter("nalcast_http_auth_failures_total",
                         help: "HTTP requests (page, /ws, /metrics, POST /bitrate) refused for a missing, unknown or insufficient token.")
    }

    /// The decision for `request` on a route that needs `permission`. Nothing is counted.
    public func decide(_ request: HTTPRequest, needs permission: Permission) -> Decision {
        guard let token = request.presentedToken, let granted = table.permissions(of: token.utf8) else { return .unauthorized }
        return granted.contains(permission) ? .allowed : .forbidden
    }

    /// A failure from `host`: counted; returns in how many seconds to answer it, or nil to
    /// close it at once (too many of its answers waiting).
    public func failed(host: String) -> Double? {
        failures.increment()
        let now = Double(clock.nowNanoseconds) / 1e9
        var state = hosts[host] ?? HostState()
        if now - state.lastFailure > forgetAfter { state = HostState() }
        state.lastFailure = now
        guard state.waiting < maxWaiting else {
            hosts[host] = state
            return nil
        }
        let delay = min(maxDelay, baseDelay * Double(1 << min(state.failures, 20)))
        state.failures += 1
        state.answerAt = max(now, state.answerAt) + delay
        state.waiting += 1
        hosts[host] = state
        if hosts.count > maxHosts { forgetQuietHosts(now) }
        return state.answerAt - now
    }

    /// A waiting answer to `host` went out (or its connection closed).
    public func answered(host: String) {
        guard var state = hosts[host] else { return }
        state.waiting = max(0, state.waiting - 1)
        hosts[host] = state
    }

    /// Failures from `host` seen and not forgotten (tests).
    public func failureCount(host: String) -> Int { hosts[host]?.failures ?? 0 }

    private func forgetQuietHosts(_ now: Double) {
        hosts = hosts.filter { now - $0.value.lastFailure <= forgetAfter || $0.value.waiting > 0 }
        if hosts.count > maxHosts {
            let oldest = hosts.filter { $0.value.waiting == 0 }.sorted { $0.value.lastFailure < $1.value.lastFailure }
            for (host, _) in oldest.prefix(hosts.count - maxHosts) { hosts[host] = nil }
        }
    }
}
