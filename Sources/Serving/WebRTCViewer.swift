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
/// Loop-owned.
final class WebRTCViewer: StreamReader {
    let peer: String
    var onProgress: ((ReaderProgress) -> Void)?
    var onClose: ((String) -> Void)?
    let webrtc: WebRTCPeer
    private(set) var closeReason: String?

    init(_ webrtc: WebRTCPeer, peer: String) {
        self.webrtc = webrtc
        self.peer = peer
    }

    func start() {
        webrtc.onClosed = { [unowned self] reason in self.onClose?(self.closeReason ?? reason) }
    }

    var isReady: Bool { webrtc.isConnected && !webrtc.isClosed }
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
        return ReaderProgress(bytes: bytes, units: 1, items: 1)
    }

    func end() {
        webrtc.close(WebSocketViewer.streamEnded)
    }

    func endNow(_ ending: ReaderEnding) {
        switch ending {
        case .streamEnded: webrtc.close(WebSocketViewer.streamEnded)
        case .stalled(let reason): webrtc.close(reason)
        }
    }
}
