import Relay
import EventLoop
import H264

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `--forward tcp://HOST:PORT`: sends the stream to a remote reader.
///
/// Runs on its runner's worker thread with a blocking socket. While the remote is down,
/// access units are dropped (and counted) and a connection is tried again when the backoff
/// says so (100 ms doubling to 5 s, with jitter), at the pace access units arrive; once
/// connected, sending resumes at the next entry point (IDR with SPS/PPS). A remote that
/// stops reading blocks only this thread, for at most `sendTimeout`, then counts as gone;
/// meanwhile the runner's queue fills and skips, and the other sinks are not affected.
public final class ForwardSink: AccessUnitSink {
    public enum Event: Sendable {
        case connected(Endpoint)
        case disconnected(Endpoint, reason: String)
        /// Still down: attempt `attempt` failed, the next one in `nextIn` s (at most one per
        /// 2 s, `ReconnectBackoff.progressDue`).
        case retrying(Endpoint, attempt: Int, reason: String, nextIn: Double)
    }

    public let name = "forward"
    public let endpoint: Endpoint
    private let connectTimeout: Double
    private let sendTimeout: Double
    private var backoff: ReconnectBackoff
    private var socket: Socket?
    private var output: FileOutput?
    private var needEntry = true
    private var nextAttempt: UInt64 = 0
    private var everConnected = false
    private var reportedDown = false
    private var lastFailure = ""
    private var random = SystemRandomNumberGenerator()
    private let onEvent: @Sendable (Event) -> Void

    public init(endpoint: Endpoint, connectTimeout: Double = 2, sendTimeout: Double = 5, backoff: ReconnectBackoff.Config = .init(), onEvent: @escaping @Sendable (Event) -> Void) {
        self.endpoint = endpoint
        self.connectTimeout = connectTimeout
        self.sendTimeout = sendTimeout
        self.backoff = ReconnectBackoff(config: backoff)
        self.onEvent = onEvent
    }

    public func write(_ items: ArraySlice<SinkItem>) throws(SinkError) -> WriteReport {
        var report = WriteReport()
        var batchUnits = 0
        for item in items {
            switch item {
            case .discontinuity, .gap:
                needEntry = true
            case .unit(let received):
                if output == nil { connectIfDue() }
                guard output != nil, !needEntry || received.isEntryPoint else {
                    report.dropped += 1
                    continue
                }
                output!.add(needEntry ? received.unit.nalUnitsForEntry : received.nalUnits)
                needEntry = false
                batchUnits += 1
            }
        }
        guard output != nil, output!.hasPending else { return report }
        let before = output!.offset
        do {
            try output!.flush()
            report.units += batchUnits
            report.bytes += output!.offset - before
        } catch {
            let reason = error.code == EAGAIN || error.code == EWOULDBLOCK ? "the remote stopped reading for \(MediaTime.seconds(sendTimeout).secondsText) s" : "send: \(error.message)"
            report.dropped += batchUnits
            lose(reason)
        }
        return report
    }

    public func close() throws(SinkError) {
        socket?.close()
        socket = nil
        output = nil
    }

    private func connectIfDue() {
        let now = monotonicNanoseconds()
        guard now >= nextAttempt else { return }
        do {
            let connected = try connect()
            socket = connected
            output = FileOutput(fd: connected.fd, isSocket: true)
            needEntry = true
            backoff.connected()
            everConnected = true
            reportedDown = false
            onEvent(.connected(endpoint))
        } catch {
            lastFailure = error.description
            if !reportedDown {
                reportedDown = true
                onEvent(.disconnected(endpoint, reason: error.description))
            }
            schedule(now: now)
        }
    }

    private func lose(_ reason: String) {
        socket?.close()
        socket = nil
        output = nil
        needEntry = true
        reportedDown = true
        onEvent(.disconnected(endpoint, reason: reason))
        schedule(now: monotonicNanoseconds())
    }

    private func schedule(now: UInt64) {
        let delay = backoff.nextDelay(now: now, random: Double.random(in: 0...1, using: &random)) ?? 5
        nextAttempt = now + UInt64(delay * 1e9)
        if reportedDown && backoff.progressDue(now: now) {
            onEvent(.retrying(endpoint, attempt: backoff.attempts, reason: lastFailure, nextIn: delay))
        }
    }

    /// A connect bounded by `connectTimeout` (`Connector.connect`); the socket is then
    /// blocking, with `SO_SNDTIMEO` = `sendTimeout`.
    private func connect() throws(ForwardError) -> Socket {
        do {
            let socket = try Connector.connect(to: endpoint, timeout: connectTimeout)
            try socket.setBlocking(true)
            var tv = timeval(tv_sec: Int(sendTimeout), tv_usec: Int((sendTimeout - Double(Int(sendTimeout))) * 1e6))
            setsockopt(socket.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            let family = try socket.family()
            if family == AF_INET || family == AF_INET6 {
                try? socket.setOption(level: Int32(IPPROTO_TCP), name: TCP_NODELAY, value: 1)
            }
            return socket
        } catch {
            throw ForwardError("\(error)")
        }
    }
}

/// Why the remote could not be reached, one line.
struct ForwardError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
