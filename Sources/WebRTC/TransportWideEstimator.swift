import RTP

/// A sender's estimate of one viewer's path from its transport-wide feedback (TWCC,
/// `TransportFeedback`), standing in for the REMB a receiver makes when the sender numbers its
/// packets (Chromium then sends feedback and no REMB). Once a second (`close(nowNs:)`) it
/// looks at what the feedback acknowledged since the last time:
///
/// - the rate that arrived (bytes of packets received / the time since the last close);
/// - the queue: the one-way delay (arrival − send, each on its own clock) of the last quarter
///   of those packets against the first quarter's (medians); growing by `queueGrowthUs` or
///   more is a queue filling up (the delay gradient congestion controllers use);
/// - the fraction reported lost.
///
/// The estimate (bits per second): 85 % of the rate that arrived when the queue grew or 10 %
/// or more was lost (overuse); else it rises, to the greater of 1.08 × the last estimate and
/// 1.5 × what arrived, as a receiver's REMB climbs while the path takes what is sent. So a
/// still screen's few kbit/s give an estimate above what it is sent, which
/// `BitrateDecision` never takes for congestion. Pure.
public struct TransportWideEstimator: Sendable {
    public static let queueGrowthUs: Int64 = 20_000
    public static let ceiling: UInt64 = 1_000_000_000
    /// The packets sent, by transport-wide sequence number: each one's size and send time.
    private var sent: PacketHistory<(bytes: Int, sendUs: Int64)>
    private var window: [(sendUs: Int64, delayUs: Int64, bytes: Int)] = []
    private var lostInWindow = 0
    private var lastCloseNs: UInt64?
    public private(set) var estimate: UInt64?
    /// The fraction of the packets reported lost over the last window, of 256 (as RTCP's).
    public private(set) var fractionLost: UInt8 = 0
    /// Packets the feedback reported lost, and reported at all.
    public private(set) var reportedLost = 0
    public private(set) var reported = 0

    public init(history: Int = 4096) {
        sent = PacketHistory(size: history)
    }

    /// A packet numbered `sequence` of `bytes` left at `sendNs` (any monotonic clock).
    public mutating func sent(_ sequence: UInt16, bytes: Int, sendNs: UInt64) {
        sent.remember(sequence, (bytes, Int64(sendNs / 1000)))
    }

    /// A feedback packet: each packet it names that was sent here (and is still in the ring)
    /// joins the window, received or lost.
    public mutating func feedback(_ feedback: TransportFeedback) {
        for (sequence, arrival) in feedback.packets {
            guard let packet = sent[sequence] else { continue }
            reported += 1
            if let arrival {
                window.append((packet.sendUs, arrival - packet.sendUs, packet.bytes))
            } else {
                reportedLost += 1
                lostInWindow += 1
            }
        }
    }

    /// Closes the window at `nowNs` (the clock of `sent`): the new estimate, or the last one
    /// when nothing was acknowledged (nil before any feedback).
    @discardableResult
    public mutating func close(nowNs: UInt64) -> UInt64? {
        defer {
            window.removeAll(keepingCapacity: true)
            lostInWindow = 0
            lastCloseNs = nowNs
        }
        guard let last = lastCloseNs, nowNs > last, !window.isEmpty else { return estimate }
        let total = window.count + lostInWindow
        let lost = Double(lostInWindow) / Double(total)
        fractionLost = UInt8(min(255, lost * 256))
        let bytes = window.reduce(0) { $0 + $1.bytes }
        let arrived = UInt64(bytes) * 8 * 1_000_000_000 / (nowNs - last)
        let ordered = window.sorted { $0.sendUs < $1.sendUs }
        let quarter = max(1, ordered.count / 4)
        // Medians: a retransmitted packet (its first send's time, arriving a round trip late)
        // is one outlier, not a queue.
        let median = { (part: ArraySlice<(sendUs: Int64, delayUs: Int64, bytes: Int)>) in part.map { $0.delayUs }.sorted()[part.count / 2] }
        let growth = median(ordered.suffix(quarter)) - median(ordered.prefix(quarter))
        if growth >= Self.queueGrowthUs || lost >= 0.1 {
            estimate = arrived * 85 / 100
        } else {
            let rising = max(Double(estimate ?? 0) * 1.08, Double(arrived) * 1.5)
            estimate = UInt64(min(rising, Double(Self.ceiling)))
        }
        return estimate
    }
}
