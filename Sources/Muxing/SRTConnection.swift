import Clocks
import CMedia
import Output

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The SRT connection under an `srt://` push (libavformat's libsrt protocol, reached as
/// `srtpush.h` says), for two things FFmpeg does not do:
///
/// - **End without losing the last second.** An SRT receiver in live mode holds each packet
///   for the agreed latency before handing it on (TSBPD), and one that sees the caller
///   close drops what it still holds: srt-live-transmit, SRT's own tool, stops reading the
///   moment the socket is broken, with up to a latency's worth of packets received,
///   acknowledged and never delivered (its statistics count them received, none dropped or
///   lost). FFmpeg's `linger` waits only for the acknowledgements. `drain` waits for them
///   too, then for the latency and a margin, so that the receiver has handed on the last
///   packet before it hears of the close.
/// - **Say what SRT did** (`totals`): packets sent, retransmitted, reported lost, and dropped
///   by the sender as too late to send (SRTO_TLPKTDROP), which nothing else would show.
struct SRTConnection {
    let socket: Int32

    /// The connection of `pb`, when it is an SRT push that is connected.
    init?(_ pb: UnsafeMutablePointer<AVIOContext>?) {
        let socket = CMedia_srt_socket(pb)
        guard socket >= 0 else { return nil }
        self.socket = socket
    }

    struct Totals: Sendable, Equatable, CustomStringConvertible {
        var sent = 0, retransmitted = 0, lost = 0, dropped = 0
        /// The latency agreed with the receiver, ms (-1: unknown).
        var latencyMilliseconds = -1

        var description: String {
            "SRT sent \(sent) packets (\(retransmitted) retransmitted, \(lost) reported lost), "
                + "\(dropped) dropped too late to send; latency \(latencyMilliseconds) ms"
        }
    }

    var totals: Totals? {
        var raw = CMedia_srt_totals()
        guard CMedia_srt_totals_of(socket, &raw) == 0 else { return nil }
        return Totals(sent: Int(raw.sent), retransmitted: Int(raw.retransmitted), lost: Int(raw.lost), dropped: Int(raw.dropped),
                      latencyMilliseconds: Int(raw.peer_latency_ms))
    }

    /// What `drain` waits past the receiver's latency: for the receiver to read the last packet
    /// it hands on (a loaded machine's scheduling), before the close reaches it.
    static let margin = 0.5
    /// The longest latency `drain` waits for (SRT allows far more than a push needs).
    static let longestLatency = 10.0

    /// Waits until every packet sent is acknowledged (giving up at `deadline`, monotonic ns,
    /// or when the connection breaks), then for the receiver's latency and `margin`. False
    /// when the acknowledgements did not all come.
    func drain(deadline: UInt64) -> Bool {
        while CMedia_srt_connected(socket) != 0 {
            let unacknowledged = CMedia_srt_unacknowledged(socket)
            if unacknowledged == 0 { break }
            if unacknowledged < 0 || MonotonicClock.nanoseconds >= deadline { return false }
            usleep(10_000)
        }
        guard CMedia_srt_connected(socket) != 0 else { return false }
        let latency = min(Double(max(0, CMedia_srt_peer_latency(socket))) / 1000, Self.longestLatency)
        usleep(UInt32((latency + Self.margin) * 1e6))
        return true
    }
}
