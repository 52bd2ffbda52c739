/// Which of one viewer's lost video packets are sent again, and when: for its NACKs, and for
/// what its transport-wide feedback (TWCC) reported lost when no NACK for it came first.
///
/// Why the feedback: a viewer whose NACK is lost on the way repeats it only after its idea of
/// the round trip (Chromium's NackRequester: its RTT estimate, 100 ms before it knows one), a
/// picture held that much longer. Its transport-wide feedback (every 50-100 ms) reports the
/// same packet lost on its own, in another RTCP packet: sending the packet again then, if no
/// NACK brought it first, takes the lost NACK's place.
///
/// The rules:
/// - a packet the feedback reports lost is sent again once, and only if it was not sent again
///   before (for a NACK or an earlier report); at most `feedbackLimit` a feedback packet, so
///   that a burst of losses is left to the NACKs (and keyframe requests) as before;
/// - a NACK is answered, unless the packet was sent again for the feedback less than a
///   round trip ago: that NACK left the viewer before the copy could reach it (the NACK and
///   the feedback report the same hole at about the same time). With no round trip known
///   yet every NACK is answered. A NACK repeated after a NACK is always answered: the viewer
///   repeats one only after its own round trip, when the copy should have come.
///
/// Pure: its caller sends and counts.
struct LossRepair: Sendable {
    /// At most this many packets sent again for one feedback packet.
    static let feedbackLimit = 8

    /// The round trip from the viewer's receiver reports (nil before one gave it).
    var roundTripNs: UInt64?

    /// By video sequence number: when it was last sent again, and whether for the feedback.
    private var resent: PacketHistory<(atNs: UInt64, forFeedback: Bool)>
    /// The video sequence number of each transport-wide one.
    private var media: PacketHistory<UInt16>

    init(history: Int) {
        resent = PacketHistory(size: history)
        media = PacketHistory(size: history)
    }

    /// Video packet `sequence` went out numbered `transport` across the transport.
    mutating func sent(_ sequence: UInt16, transport: UInt16) {
        media.remember(transport, sequence)
    }

    /// A NACK for `sequence` at `nowNs`: whether to send it again (and it is noted as sent).
    mutating func nacked(_ sequence: UInt16, nowNs: UInt64) -> Bool {
        if let last = resent[sequence], last.forFeedback, let roundTripNs, nowNs &- last.atNs < roundTripNs { return false }
        resent.remember(sequence, (nowNs, false))
        return true
    }

    /// The transport-wide numbers a feedback packet reported lost, at `nowNs`: the video
    /// sequence numbers to send again (noted as sent), and how many more it would have named
    /// past `feedbackLimit`.
    mutating func reportedLost(_ transport: [UInt16], nowNs: UInt64) -> (resend: [UInt16], overLimit: Int) {
        var out: [UInt16] = []
        var over = 0
        for number in transport {
            guard let sequence = media[number], resent[sequence] == nil else { continue }
            guard out.count < Self.feedbackLimit else {
                over += 1
                continue
            }
            resent.remember(sequence, (nowNs, true))
            out.append(sequence)
        }
        return (out, over)
    }
}
