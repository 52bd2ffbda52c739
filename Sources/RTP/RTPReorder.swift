/// One RTP source's packets put back in sequence order for a depacketizer that takes them in
/// order, with what a receiver that NACKs needs: the sequence numbers missing, asked for
/// again at most `maxRequests` times each, `requestInterval` apart (`nacks(now:)`), and a
/// bound on the wait: once the oldest hole has waited `wait` seconds, or more than
/// `capacity` packets are held behind it, the packets after it go on without it (the
/// depacketizer sees the gap in the sequence numbers and marks its access unit damaged).
/// A packet from before what went on (late, or a retransmission of a packet given up on) or
/// one already held is left out and counted.
///
/// Pure (the caller says the time); used by one thread.
public struct RTPReorder: Sendable {
    public let wait: Double
    public let capacity: Int
    public let requestInterval: Double
    public let maxRequests: Int

    /// Packets given up on: their hole was skipped.
    public private(set) var skipped = 0
    /// Packets that came late or twice, left out.
    public private(set) var duplicates = 0
    /// Holes filled by a packet that came after later ones (a retransmission, or reordering).
    public private(set) var recovered = 0

    /// The next sequence number to hand on.
    private var next: UInt16?
    private var held: [UInt16: RTPPacket] = [:]
    /// The newest sequence number taken: when packets are held, the newest of them (all
    /// held ones lie between `next` and it), so that a packet's gap is found without going
    /// through them.
    private var newest: UInt16?
    /// The holes: since when each is missing, when it was last asked for and how often.
    private var missing: [UInt16: (since: Double, asked: Double, count: Int)] = [:]

    public init(wait: Double = 0.3, capacity: Int = 1024, requestInterval: Double = 0.06, maxRequests: Int = 4) {
        self.wait = wait
        self.capacity = capacity
        self.requestInterval = requestInterval
        self.maxRequests = maxRequests
    }

    /// Takes a packet that arrived at `now` (seconds, any monotonic origin); returns the
    /// packets now in order, oldest first.
    public mutating func take(_ packet: RTPPacket, now: Double) -> [RTPPacket] {
        let sequence = packet.sequenceNumber
        guard let expected = next else {
            next = sequence &+ 1
            newest = sequence
            return [packet]
        }
        if sequence != expected && !rtpSequence(sequence, isAfter: expected) || held[sequence] != nil {
            duplicates += 1
            return []
        }
        if Int(sequence &- expected) > capacity {  // a jump (the sender started again): no hole to wait for
            var out: [RTPPacket] = []
            while !held.isEmpty { out += skipHole() }
            skipped += Int(sequence &- (next ?? sequence))
            missing.removeAll()
            next = sequence &+ 1
            newest = sequence
            return out + [packet]
        }
        if missing.removeValue(forKey: sequence) != nil { recovered += 1 }
        var gapStart = expected
        if let newest, rtpSequence(newest, isAfter: gapStart) { gapStart = newest &+ 1 }
        if newest.map({ rtpSequence(sequence, isAfter: $0) }) ?? true { newest = sequence }
        var at = gapStart
        while at != sequence && rtpSequence(sequence, isAfter: at) {
            if held[at] == nil && missing[at] == nil { missing[at] = (now, -.infinity, 0) }
            at &+= 1
        }
        held[sequence] = packet
        var out = drain()
        if held.count > capacity { out += skipHole() }
        return out
    }

    /// Goes on past a hole that waited `wait` seconds: the packets after it, in order.
    public mutating func expire(now: Double) -> [RTPPacket] {
        var out: [RTPPacket] = []
        while let expected = next, !held.isEmpty, let hole = missing[expected], now - hole.since >= wait {
            out += skipHole()
        }
        return out
    }

    /// The holes to ask for now (RTCP NACK), each at most `maxRequests` times.
    public mutating func nacks(now: Double) -> [UInt16] {
        var out: [UInt16] = []
        for (sequence, hole) in missing where hole.count < maxRequests && now - hole.asked >= requestInterval {
            missing[sequence] = (hole.since, now, hole.count + 1)
            out.append(sequence)
        }
        return out.sorted { rtpSequence($1, isAfter: $0) }
    }

    /// Packets held behind a hole now.
    public var heldCount: Int { held.count }

    /// The packets from `next` on that are here, in order.
    private mutating func drain() -> [RTPPacket] {
        var out: [RTPPacket] = []
        while let expected = next, let packet = held.removeValue(forKey: expected) {
            out.append(packet)
            next = expected &+ 1
        }
        return out
    }

    /// Skips the hole at `next` up to the oldest packet held, then drains.
    private mutating func skipHole() -> [RTPPacket] {
        guard let expected = next, let first = held.keys.first else { return [] }
        let oldest = held.keys.reduce(first) { rtpSequence($0, isAfter: $1) ? $1 : $0 }
        var at = expected
        while at != oldest {
            missing[at] = nil
            skipped += 1
            at &+= 1
        }
        next = oldest
        return drain()
    }
}
