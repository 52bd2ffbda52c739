import IO
import Clocks
import Delivery
import WebRTC

/// One WHEP viewer of a `StreamServer`, a `StreamReader` over a connected `WebRTCPeer`: each
/// access unit goes out as SRTP packets on the endpoint's UDP socket (`WebRTCPeer.send`), its
/// RTP payloads the ones `WHEPService` made once for every viewer (`RTPPayloads`),
/// whole and at once: UDP has no back-pressure to wait on, so a write always finishes and
/// the reader never lags in its queue; what the path loses, the viewer NACKs (answered from
/// the peer's history) or, when a picture is lost, asks a new one for (PLI, FIR:
/// `onKeyframeRequest`). Admitted by `WHEPService` once its handshake is done.
///
/// Paced (`CatchUpPacer`): after each unit it is not ready for the next one until the
/// next is due, a quarter of the media time between them after this one was due, so a
/// relay's cached GOP (at a join, and again after a PLI) goes out at four times real time
/// instead of in one burst, however late the loop's timer fires, and what is not sent yet
/// stays in its `ReaderQueue`, where a PLI's restart at the IDR replaces it. The pacing
/// never costs a skip: while the queue is near its bound (a relay's input that comes in a
/// burst, as it does while the relay catches up after opening it) the server writes on
/// (`isPacing`).
///
/// Loop-owned.
final class WebRTCViewer: StreamReader {
    let peer: String
    var onProgress: ((ReaderProgress) -> Void)?
    var onClose: ((String) -> Void)?
    let webrtc: WebRTCPeer
    private(set) var closeReason: String?
    private let loop: EventLoop
    private var pacer = CatchUpPacer()
    /// Running while the pacer holds the next unit back.
    private var pacing: LoopTimer?

    init(_ webrtc: WebRTCPeer, peer: String, loop: EventLoop) {
        self.webrtc = webrtc
        self.peer = peer
        self.loop = loop
    }

    func start() {
        webrtc.onClosed = { [unowned self] reason in self.onClose?(self.closeReason ?? reason) }
    }

    var isReady: Bool { isOpen && pacing?.isActive != true }
    var isPacing: Bool { isOpen && pacing?.isActive == true }
    private var isOpen: Bool { webrtc.isConnected && !webrtc.isClosed }
    var isClosed: Bool { webrtc.isClosed }

    /// Sends `unit` timed by its capture (its SEI's time, else now), which its RTP timestamp,
    /// the sender reports and abs-capture-time carry; its media time (the relay's, the SEI's,
    /// else its arrival's) places the sound beside it.
    func write(_ unit: QueuedAccessUnit) -> ReaderProgress {
        let pts = unit.pts90k ?? unit.arrivalNs / 100_000 * 9
        let wall = unit.accessUnit.timestamp?.captureTimeNs ?? WallClock.nanoseconds
        // Made once by `WHEPService` for every viewer; a unit published before there was one
        // (a relay's cached GOP at a join) is packetized here.
        let payloads = unit.forms[RTPPayloads.self] ?? RTPPayloads(unit.nalUnits)
        let bytes = webrtc.send(payloads, pts90k: pts, wallNs: wall)
        hold(forNs: pacer.sent(pts90k: pts, nowNs: MonotonicClock.nanoseconds))
        return ReaderProgress(bytes: bytes, units: 1, items: 1)
    }

    /// Not ready for `ns`; then the server is told to write on (`onProgress`).
    private func hold(forNs ns: UInt64) {
        loop.preconditionOnLoop()
        guard ns > 0 else { return }
        let timer = pacing ?? LoopTimer(loop: loop) { [weak self] in self?.onProgress?(ReaderProgress(items: 1)) }
        pacing = timer
        timer.start(after: Double(ns) / 1e9)
    }

    func end() {
        pacing?.stop()
        webrtc.close(WebSocketViewer.streamEnded)
    }

    func endNow(_ ending: ReaderEnding) {
        pacing?.stop()
        switch ending {
        case .streamEnded: webrtc.close(WebSocketViewer.streamEnded)
        case .stalled(let reason): webrtc.close(reason)
        }
    }
}
