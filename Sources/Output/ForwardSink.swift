import Clocks
import Media
import Delivery
import IO

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `--forward TARGET`: sends the stream to a remote, over whatever `ForwardTransport` speaks
/// to it (raw Annex-B over TCP or a unix socket, `SocketTransport`; a container pushed to a
/// media server, `PushTransport` in the `Muxing` module).
///
/// Runs on its runner's worker thread; the transport blocks, each of its calls bounded in
/// time. While the remote is down, access units are dropped (and counted) and a connection
/// is tried again when the backoff says so (100 ms doubling to 5 s, with jitter), at the next
/// entry point (IDR with SPS/PPS) after that, which is where a connection starts. A remote
/// that stops reading blocks only this thread, for at most the transport's send timeout,
/// then counts as gone; meanwhile the runner's queue fills and skips, and the other sinks
/// are not affected.
public final class ForwardSink: AccessUnitSink {
    public enum Event: Sendable {
        /// `target` is the transport's `target`: credentials never appear in it.
        case connected(target: String)
        case disconnected(target: String, reason: String)
        /// Still down: attempt `attempt` failed, the next one in `nextIn` s (at most one per
        /// 2 s, `ReconnectBackoff.progressDue`).
        case retrying(target: String, attempt: Int, reason: String, nextIn: Double)
        /// The remote refused our credentials (a wrong SRT passphrase): no more attempts;
        /// what comes is dropped and counted.
        case refused(target: String, reason: String)
        /// A connection closed (at the end, or lost), and what its transport counted on it:
        /// over SRT, the packets sent, retransmitted and dropped too late to send.
        case closed(target: String, summary: String)
    }

    public let name: String
    private let transport: any ForwardTransport
    private var backoff: ReconnectBackoff
    private var connected = false
    private var needEntry = true
    private var nextAttempt: UInt64 = 0
    private var reportedDown = false
    private var lastFailure = ""
    private var random = SystemRandomNumberGenerator()
    private let onEvent: @Sendable (Event) -> Void

    public init(name: String = "forward", transport: sending any ForwardTransport, backoff: ReconnectBackoff.Config = .init(),
                onEvent: @escaping @Sendable (Event) -> Void) {
        self.name = name
        self.transport = transport
        self.backoff = ReconnectBackoff(config: backoff)
        self.onEvent = onEvent
    }

    /// Raw Annex-B to `endpoint` (`tcp://HOST:PORT`, `unix:PATH`).
    public convenience init(endpoint: Endpoint, connectTimeout: Double = 2, sendTimeout: Double = 5, backoff: ReconnectBackoff.Config = .init(),
                            onEvent: @escaping @Sendable (Event) -> Void) {
        self.init(transport: SocketTransport(endpoint: endpoint, connectTimeout: connectTimeout, sendTimeout: sendTimeout), backoff: backoff, onEvent: onEvent)
    }

    /// The transport's (a push carries the audio track, raw Annex-B does not).
    public var carriesAudio: Bool { transport.carriesAudio }

    public func audioCountsAfterLastWrite() -> (written: Int, dropped: Int) { (0, transport.takeDroppedAudio()) }

    public func write(_ items: ArraySlice<SinkItem>) throws(SinkError) -> WriteReport {
        var report = WriteReport()
        var batchUnits = 0
        for item in items {
            switch item {
            case .audioFormat(let format):
                transport.declareAudio(format)
            case .audio(let packet):
                // A connection carries audio from its first picture on.
                guard connected, !needEntry else {
                    report.droppedAudio += 1
                    continue
                }
                do {
                    try transport.send(audio: packet)
                    report.audioPackets += 1
                } catch {
                    report.droppedAudio += 1
                    report.dropped += batchUnits
                    batchUnits = 0
                    lose(error.description)
                }
            case .discontinuity, .gap:
                needEntry = true
                if connected { transport.discontinuity() }
            case .unit(let received):
                if !connected && received.isEntryPoint { connectIfDue(at: received) }
                guard connected, !needEntry || received.isEntryPoint else {
                    report.dropped += 1
                    continue
                }
                var unit = received
                if needEntry { unit.resumes = true }
                do {
                    try transport.send(unit, entry: needEntry)
                } catch {
                    report.dropped += batchUnits + 1
                    batchUnits = 0
                    lose(error.description)
                    continue
                }
                needEntry = false
                batchUnits += 1
            }
        }
        let droppedAudio = transport.takeDroppedAudio()
        report.droppedAudio += droppedAudio
        report.audioPackets -= min(report.audioPackets, droppedAudio)
        guard connected, batchUnits > 0 else { return report }
        do {
            report.bytes += try transport.flush()
            report.units += batchUnits
        } catch {
            report.dropped += batchUnits
            lose(error.description)
        }
        return report
    }

    public func close() throws(SinkError) {
        guard connected else { return }
        connected = false
        defer { summarize() }
        do {
            try transport.close(finishing: true)
        } catch {
            throw SinkError(sink: name, message: "\(transport.target): \(error.description)")
        }
    }

    private func summarize() {
        if let summary = transport.takeSummary() { onEvent(.closed(target: transport.target, summary: summary)) }
    }

    /// Connects when the backoff allows; `first`, an entry point, is where the stream starts.
    private func connectIfDue(at first: TimedUnit) {
        let now = MonotonicClock.nanoseconds
        guard now >= nextAttempt else { return }
        do {
            try transport.open(first: first)
            connected = true
            needEntry = true
            backoff.connected()
            reportedDown = false
            onEvent(.connected(target: transport.target))
        } catch {
            lastFailure = error.description
            if error.refused {
                nextAttempt = .max
                reportedDown = true
                return onEvent(.refused(target: transport.target, reason: error.description))
            }
            if !reportedDown {
                reportedDown = true
                onEvent(.disconnected(target: transport.target, reason: error.description))
            }
            schedule(now: now)
        }
    }

    private func lose(_ reason: String) {
        try? transport.close(finishing: false)
        summarize()
        connected = false
        needEntry = true
        reportedDown = true
        onEvent(.disconnected(target: transport.target, reason: reason))
        schedule(now: MonotonicClock.nanoseconds)
    }

    private func schedule(now: UInt64) {
        let delay = backoff.nextDelay(now: now, random: Double.random(in: 0...1, using: &random)) ?? 5
        nextAttempt = now + UInt64(delay * 1e9)
        if reportedDown && backoff.progressDue(now: now) {
            onEvent(.retrying(target: transport.target, attempt: backoff.attempts, reason: lastFailure, nextIn: delay))
        }
    }
}

/// One way of reaching a forward's remote: `ForwardSink` opens it at an entry point when its
/// backoff allows, sends access units, flushes them per batch, and closes it when a call
/// fails or the stream ends. Every call is bounded in time (a dead remote never hangs the
/// thread). Used by one thread, the sink's.
public protocol ForwardTransport: AnyObject {
    /// Where it goes, for logs, events and metrics: never with credentials.
    var target: String { get }
    /// Connects; `first` (an entry point, sent next) may be needed to describe the stream.
    func open(first: TimedUnit) throws(ForwardError)
    /// One access unit; `entry`: the first of this connection, carrying its SPS and PPS.
    func send(_ unit: TimedUnit, entry: Bool) throws(ForwardError)
    /// Pushes out what `send` buffered; the bytes of the access units sent since the last
    /// flush.
    func flush() throws(ForwardError) -> Int
    /// Something was lost before the next access unit (a skip, the input reconnecting).
    func discontinuity()
    /// Ends the connection: `finishing` at the end of the stream (say so to the remote,
    /// write what is left), else after a failure (just drop it).
    func close(finishing: Bool) throws(ForwardError)
    /// True when it pushes an audio track (a container to a media server); raw Annex-B
    /// does not.
    var carriesAudio: Bool { get }
    /// The stream's audio track, declared in every connection's header from the next `open`.
    func declareAudio(_ format: AudioFormat)
    /// One audio packet, after the connection's first access unit: interleaved by time with
    /// the video, as the transport buffers it.
    func send(audio: AudioPacket) throws(ForwardError)
    /// Audio packets taken by `send(audio:)` and then not written (out of time order, a
    /// connection lost with them waiting) since the last call.
    func takeDroppedAudio() -> Int
    /// What the transport counted on the connection that closed last, once (nil: nothing
    /// to say).
    func takeSummary() -> String?
}

extension ForwardTransport {
    public var carriesAudio: Bool { false }
    public func declareAudio(_ format: AudioFormat) {}
    public func send(audio: AudioPacket) throws(ForwardError) {}
    public func takeDroppedAudio() -> Int { 0 }
    public func takeSummary() -> String? { nil }
}

/// Why a forward's remote could not be reached or written, one line.
public struct ForwardError: Error, CustomStringConvertible, Sendable {
    public let description: String
    /// The remote refused our credentials (an SRT passphrase): trying again cannot help.
    public let refused: Bool
    public init(_ description: String, refused: Bool = false) {
        self.description = description
        self.refused = refused
    }
}

/// Raw Annex-B over TCP or a unix socket, as `produce --listen` serves it.
///
/// A connect bounded by `connectTimeout` (`Connector.connect`); the socket is then blocking,
/// with `SO_SNDTIMEO` = `sendTimeout`: a remote that stops reading for that long is gone.
///
/// With `delimits` (a live run), each connection's stream is delimited as a `--listen`
/// reader's is (`StreamFraming`: H.264's `AccessUnitDelimiting`): every access unit goes out with the next one's AUD
/// behind it, so that the remote's parser hands each picture on at once, and a clean close
/// ends the stream with the filler SEI and end of sequence.
public final class SocketTransport: ForwardTransport {
    public let endpoint: Endpoint
    private let connectTimeout: Double
    private let sendTimeout: Double
    private let delimits: Bool
    private var socket: Socket?
    private var output: FileOutput?
    private var delimiting: StreamFraming?

    public init(endpoint: Endpoint, connectTimeout: Double = 2, sendTimeout: Double = 5, delimits: Bool = false) {
        self.endpoint = endpoint
        self.connectTimeout = connectTimeout
        self.sendTimeout = sendTimeout
        self.delimits = delimits
    }

    public var target: String { endpoint.description }

    public func open(first: TimedUnit) throws(ForwardError) {
        do {
            let socket = try Connector.connect(to: endpoint, timeout: connectTimeout)
            try socket.setBlocking(true)
            var tv = timeval(tv_sec: Int(sendTimeout), tv_usec: Int((sendTimeout - Double(Int(sendTimeout))) * 1e6))
            setsockopt(socket.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            let family = try socket.family()
            if family == AF_INET || family == AF_INET6 {
                try? socket.setOption(level: Int32(IPPROTO_TCP), name: TCP_NODELAY, value: 1)
            }
            self.socket = socket
            output = FileOutput(fd: socket.fd, isSocket: true)
            delimiting = delimits ? StreamFraming() : nil
        } catch {
            throw ForwardError("\(error)")
        }
    }

    public func send(_ unit: TimedUnit, entry: Bool) throws(ForwardError) {
        if delimiting != nil {
            output?.add(chunks: delimiting!.frame(unit.nalUnits, of: unit.unit.codec))
        } else {
            output?.add(unit.nalUnits)
        }
    }

    public func flush() throws(ForwardError) -> Int {
        guard output != nil, output!.hasPending else { return 0 }
        let before = output!.offset
        do {
            try output!.flush()
        } catch {
            throw ForwardError(error.code == EAGAIN || error.code == EWOULDBLOCK
                ? "the remote stopped reading for \(MediaTime.seconds(sendTimeout).secondsText) s" : "send: \(error.message)")
        }
        return output!.offset - before
    }

    public func discontinuity() {}

    public func close(finishing: Bool) throws(ForwardError) {
        defer {
            socket?.close()
            socket = nil
            output = nil
            delimiting = nil
        }
        if finishing, let delimiting, delimiting.nextIsOpen {
            // The access unit the last AUD opened never comes: end it as a reader's stream
            // ends. Best effort: every access unit is out already, and a remote that is gone
            // by now (a reset) loses nothing but the end marker.
            output?.add(chunks: delimiting.closing())
            _ = try? flush()
        }
    }
}
