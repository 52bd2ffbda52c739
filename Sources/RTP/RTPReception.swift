/// What a receiver keeps of one RTP source to send receiver reports (RFC 3550 §6.4.2, A.3,
/// A.8): the extended highest sequence number, packets expected and lost, interarrival
/// jitter, and the last sender report's time.
public struct RTPReception: Sendable {
    public let clockRate: Int
    public private(set) var ssrc: UInt32 = 0
    private var baseSequence: UInt32?
    private var cycles: UInt32 = 0
    private var maxSequence: UInt16 = 0
    public private(set) var received: UInt32 = 0
    private var expectedPrior: UInt32 = 0
    private var receivedPrior: UInt32 = 0
    private var jitter: Double = 0
    private var lastTransit: Double?
    private var lastSR: (middle: UInt32, at: Double)?

    public init(clockRate: Int) { self.clockRate = max(1, clockRate) }

    /// A packet arrived at `arrival` seconds (any monotonic origin).
    public mutating func note(_ packet: RTPPacket, arrival: Double) {
        ssrc = packet.ssrc
        received &+= 1
        if baseSequence == nil {
            baseSequence = UInt32(packet.sequenceNumber)
            maxSequence = packet.sequenceNumber
        } else if rtpSequence(packet.sequenceNumber, isAfter: maxSequence) {
            if packet.sequenceNumber < maxSequence { cycles &+= 0x1_0000 }
            maxSequence = packet.sequenceNumber
        }
        let transit = arrival * Double(clockRate) - Double(packet.timestamp)
        if let last = lastTransit {
            var d = abs(transit - last)
            if d > Double(UInt32.max) / 2 { d = 0 }  // a timestamp wrap
            jitter += (d - jitter) / 16
        }
        lastTransit = transit
    }

    /// A sender report of this source came at `arrival`.
    public mutating func note(_ report: RTCP.SenderReport, arrival: Double) {
        lastSR = (UInt32(truncatingIfNeeded: report.ntpTime >> 16), arrival)
    }

    /// Packets missing from the sequence so far (never below 0).
    public var lost: Int {
        guard let base = baseSequence else { return 0 }
        let expected = Int(cycles &+ UInt32(maxSequence)) - Int(base) + 1
        return max(0, expected - Int(received))
    }

    /// A receiver report from `ourSSRC` with one block for this source, at `now` seconds.
    public mutating func receiverReport(ourSSRC: UInt32, now: Double) -> [UInt8] {
        guard let base = baseSequence else { return Self.emptyReceiverReport(ourSSRC: ourSSRC) }
        let extended = cycles &+ UInt32(maxSequence)
        let expected = extended &- base &+ 1
        let expectedInterval = expected &- expectedPrior
        let receivedInterval = received &- receivedPrior
        expectedPrior = expected
        receivedPrior = received
        let lostInterval = Int64(expectedInterval) - Int64(receivedInterval)
        let fraction: UInt32 = expectedInterval == 0 || lostInterval <= 0 ? 0 : UInt32((lostInterval << 8) / Int64(expectedInterval))
        let cumulative = UInt32(min(Int(0x7F_FFFF), lost))
        var out: [UInt8] = [0x81, 201, 0, 7]
        out += Self.word(ourSSRC) + Self.word(ssrc)
        out += Self.word(min(fraction, 255) << 24 | cumulative)
        out += Self.word(extended) + Self.word(UInt32(min(jitter, Double(UInt32.max))))
        out += Self.word(lastSR?.middle ?? 0)
        out += Self.word(lastSR.map { UInt32(min(Double(UInt32.max), max(0, now - $0.at) * 65536)) } ?? 0)
        return out
    }

    /// A receiver report from `ourSSRC` with no block: what feedback (NACK, PLI) goes behind
    /// in a compound packet when there is nothing to report (RFC 3550 §6.1).
    public static func emptyReceiverReport(ourSSRC: UInt32) -> [UInt8] { [0x80, 201, 0, 1] + word(ourSSRC) }

    static func word(_ v: UInt32) -> [UInt8] {
        [UInt8(v >> 24), UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v)]
    }
}
