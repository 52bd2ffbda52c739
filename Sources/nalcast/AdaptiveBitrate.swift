import Clocks
import Delivery

/// `produce`'s live bitrate following its WebRTC viewers (REMB: each viewer's estimate of
/// what its path takes; or nalcast's own from its transport-wide feedback, TWCC:
/// `TransportWideEstimator`) within a ceiling: `--bitrate` (or width × height × 3), or the last
/// `POST /bitrate`. The encoder is shared by every reader, so the lowest estimate of the
/// viewers rules, once it is under what that viewer was sent while it loses packets
/// (congestion: `BitrateDecision`): the target is
/// 85 % of it (room for the packets' headers and the retransmissions), never under
/// 100 kbit/s nor over the ceiling; back to the ceiling when no viewer has an estimate. A change goes to the encoder (`CaptureControl.requestBitrate`:
/// x264 reconfigured in place, no IDR) when it moves the target by 10 % or more, at most
/// once a second (what waits goes at a later report: the endpoint reports every second,
/// with or without viewers). The decisions are `BitrateDecision`'s (Delivery).
///
/// Loop-owned.
final class AdaptiveBitrate {
    private var decision: BitrateDecision
    private let apply: (Int, UInt64?) -> Void

    /// `apply(bits, estimate)`: ask the encoder (and say so).
    init(ceiling: Int, apply: @escaping (Int, UInt64?) -> Void) {
        decision = BitrateDecision(ceiling: ceiling)
        self.apply = apply
    }

    /// The lowest estimate of the viewers now, what that viewer was sent and the fraction it
    /// lost (nil: none has an estimate); once a second (`WebRTCEndpoint.onLowestEstimate`).
    func report(_ lowest: (estimate: UInt64, sent: UInt64, fractionLost: UInt8)?) {
        decision.report(estimate: lowest?.estimate, sent: lowest?.sent ?? 0, fractionLost: lowest?.fractionLost ?? 0)
        update()
    }

    /// A new ceiling (`POST /bitrate`); applied at once, within the viewers' estimate.
    func ceiling(_ bits: Int) -> Int {
        decision.ceiling = bits
        let target = decision.target
        decision.applied(target, nowNs: MonotonicClock.nanoseconds)
        return target
    }

    private func update() {
        let now = MonotonicClock.nanoseconds
        guard let target = decision.change(nowNs: now) else { return }
        decision.applied(target, nowNs: now)
        apply(target, decision.estimate)
    }
}
