import CMedia
import Clocks
import IO
import Metrics
import WebRTC

/// The WebRTC side of one WHIP connection, on an event loop of its own (thread
/// `nalcast-whip`): a `WebRTCEndpoint` on a UDP socket of the machine's addresses, and the
/// one `WebRTCPeer` made from the server's answer (controlling ICE, DTLS in the role the
/// answer left, SRTP, RTCP: NACKs answered from its history, PLI and FIR counted for the
/// forward's thread). The forward's thread hands it access units through a mailbox and reads
/// its state under a lock; it never touches the loop's objects.
final class WHIPSession: @unchecked Sendable {
    // @unchecked Sendable holds because: `loop`, `endpoint` and `peer` are made on the
    // forward's thread before the loop starts and used only on the loop thread after
    // (`loop.start()` hands them over; `stop()` joins the loop before they are released);
    // the other threads reach the session only through `mailbox` (a Mailbox) and `state`
    // guarded by the `ConditionLock` that signals its changes.

    enum Message: Sendable {
        case publish(SDPOffer, SDPOffer.Accepted)
        case unit(RTPPayloads, pts90k: UInt64, wallNs: UInt64)
        /// One Opus packet at its media time (the pictures' time line).
        case audio([UInt8], mediaTime90k: Int64)
        case end(notify: Bool)
    }

    /// What the forward's thread reads.
    struct State {
        var connected = false
        var closed: String?
        /// PLI and FIR not yet taken.
        var keyframeRequests = 0
        /// The peer's counters, once it ended (`stop`).
        var counters: WebRTCPeer.Counters?
        /// The SRTP profile its handshake chose.
        var profile: SRTPProfile?
        /// Opus packets not sent (before the first picture, or refused), not yet taken.
        var droppedAudio = 0
    }

    private let loop: EventLoop
    private let endpoint: WebRTCEndpoint
    private var peer: WebRTCPeer?
    private var mailbox: Mailbox<Message>!
    /// Names the loop's thread on its first turn.
    private var naming: LoopTimer?
    /// Guarded by `changed`.
    private var state = State()
    private let changed = ConditionLock()

    /// Binds the socket (every address of the machine, a port of the kernel's) and makes the
    /// certificate; the loop is not running yet.
    init() throws {
        loop = EventLoop()
        let hosts = try HostCandidates.list(bound: "0.0.0.0", extra: [])
        endpoint = try WebRTCEndpoint(loop: loop, host: "0.0.0.0", candidates: hosts, metrics: WebRTCMetrics(registry: MetricsRegistry()))
        mailbox = Mailbox(loop: loop) { [unowned self] messages in for m in messages { self.handle(m) } }
    }

    /// The offer, made before the loop runs.
    func makeOffer(profileLevelID: String, sound: Bool) -> SDPOffer {
        endpoint.makeOffer(profileLevelID: profileLevelID, sound: sound)
    }

    /// Starts the loop on its thread, then the peer of `answer`; waits up to `timeout` s for
    /// ICE and DTLS: nil when connected, else why not.
    func connect(_ offer: SDPOffer, _ answer: SDPOffer.Accepted, timeout: Double) -> String? {
        endpoint.start()
        endpoint.handshakeTimeout = timeout
        naming = LoopTimer(loop: loop) { CMedia_name_thread("nalcast-whip") }
        naming?.start(after: 0)
        loop.start()
        mailbox.send(.publish(offer, answer))
        let deadline = MonotonicClock.nanoseconds + UInt64(timeout * 1e9) + 500_000_000
        changed.lock()
        defer { changed.unlock() }
        while true {
            if state.connected { return nil }
            if let why = state.closed { return why }
            if !changed.wait(untilMonotonicNanoseconds: deadline) { return "no ICE and DTLS within \(Int(timeout)) s" }
        }
    }

    func send(_ message: Message) { mailbox.send(message) }

    /// The Opus packets not sent since the last call.
    func takeDroppedAudio() -> Int {
        changed.withLock {
            defer { state.droppedAudio = 0 }
            return state.droppedAudio
        }
    }

    /// The state now; takes the keyframe requests waiting.
    func take() -> State {
        changed.withLock {
            let now = state
            state.keyframeRequests = 0
            return now
        }
    }

    /// Ends the peer (a DTLS close_notify when `notify`), stops the loop and waits for it.
    func stop(notify: Bool) {
        mailbox.send(.end(notify: notify))
        loop.join()
        peer = nil
        naming = nil
        mailbox = nil
    }

    // MARK: - On the loop

    private func handle(_ message: Message) {
        switch message {
        case .publish(let offer, let answer):
            do {
                let made = try endpoint.publish(offer, answer: answer)
                peer = made
                made.onConnected = { [unowned self, unowned made] in
                    let profile = made.srtpProfile
                    self.update { $0.connected = true; $0.profile = profile }
                }
                made.onClosed = { [unowned self] why in self.update { $0.closed = why } }
                made.onKeyframeRequest = { [unowned self] in self.update { $0.keyframeRequests += 1 } }
            } catch {
                update { $0.closed = error.description }
            }
        case .unit(let payloads, let pts, let wall):
            _ = peer?.send(payloads, pts90k: pts, wallNs: wall)
        case .audio(let opus, let time):
            guard let peer else { return }
            if peer.sendAudio(opus, mediaTime90k: time) != .sent { update { $0.droppedAudio += 1 } }
        case .end(let notify):
            peer?.close("ended", notify: notify)
            if let peer { let counters = peer.counters; update { $0.counters = counters } }
            endpoint.close("ended")
            loop.stop()
        }
    }

    private func update(_ change: (inout State) -> Void) {
        changed.withLock {
            change(&state)
            changed.broadcast()
        }
    }
}
