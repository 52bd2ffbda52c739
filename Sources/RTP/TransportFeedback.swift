/// Transport-wide congestion control feedback (RTPFB, FMT 15,
/// draft-holmer-rmcat-transport-wide-cc-extensions-01 §3.1): for a run of transport-wide
/// sequence numbers (the header extension a sender numbers every packet with), whether each
/// arrived and when, in 250 µs steps from a reference time in 64 ms steps. What a sender
/// estimates the path's rate and queueing from. Pure.
public struct TransportFeedback: Sendable, Equatable {
    public let mediaSSRC: UInt32
    public let baseSequence: UInt16
    /// The feedback packet's own count (wraps at 256): repeats and reordering show in it.
    public let feedbackCount: UInt8
    /// Each packet reported, from `baseSequence` on: its transport-wide sequence number and
    /// when it arrived, in microseconds on the receiver's clock (nil: not received).
    public let packets: [(sequence: UInt16, arrivalUs: Int64?)]

    public static func == (a: Self, b: Self) -> Bool {
        a.mediaSSRC == b.mediaSSRC && a.baseSequence == b.baseSequence && a.feedbackCount == b.feedbackCount
            && a.packets.map(\.sequence) == b.packets.map(\.sequence) && a.packets.map(\.arrivalUs) == b.packets.map(\.arrivalUs)
    }

    public init(mediaSSRC: UInt32, baseSequence: UInt16, feedbackCount: UInt8, packets: [(sequence: UInt16, arrivalUs: Int64?)]) {
        self.mediaSSRC = mediaSSRC
        self.baseSequence = baseSequence
        self.feedbackCount = feedbackCount
        self.packets = packets
    }

    /// Reads the body of an RTCP packet of type 205, FMT 15 (from the sender's SSRC on, as
    /// `RTCP.Packet.body`); nil when it is cut short or names a reserved status.
    public init?(body b: ArraySlice<UInt8>) {
        let s = b.startIndex
        guard b.count >= 16 else { return nil }
        mediaSSRC = RTPPacket.word(b, s + 4)
        baseSequence = UInt16(b[s + 8]) << 8 | UInt16(b[s + 9])
        let count = Int(UInt16(b[s + 10]) << 8 | UInt16(b[s + 11]))
        // 24 bits, signed, in 64 ms.
        let reference = Int64(Int32(bitPattern: UInt32(b[s + 12]) << 24 | UInt32(b[s + 13]) << 16 | UInt32(b[s + 14]) << 8) >> 8)
        feedbackCount = b[s + 15]
        var at = s + 16
        var symbols: [UInt8] = []
        symbols.reserveCapacity(count)
        while symbols.count < count {
            guard at + 2 <= b.endIndex else { return nil }
            let chunk = UInt16(b[at]) << 8 | UInt16(b[at + 1])
            at += 2
            symbols += Self.symbols(of: chunk, wanted: count - symbols.count)
        }
        var arrival = reference * 64_000
        var packets: [(UInt16, Int64?)] = []
        packets.reserveCapacity(count)
        for (i, symbol) in symbols.enumerated() {
            let sequence = baseSequence &+ UInt16(truncatingIfNeeded: i)
            switch symbol {
            case 0:
                packets.append((sequence, nil))
                continue
            case 1:
                guard at + 1 <= b.endIndex else { return nil }
                arrival += Int64(b[at]) * 250
                at += 1
            case 2:
                guard at + 2 <= b.endIndex else { return nil }
                arrival += Int64(Int16(bitPattern: UInt16(b[at]) << 8 | UInt16(b[at + 1]))) * 250
                at += 2
            default:
                return nil
            }
            packets.append((sequence, arrival))
        }
        self.packets = packets
    }

    /// The statuses of one packet chunk, at most `wanted` of them: a run (T=0: a 2-bit
    /// symbol, a 13-bit length), or a vector (T=1) of 14 one-bit or 7 two-bit symbols.
    static func symbols(of chunk: UInt16, wanted: Int) -> [UInt8] {
        if chunk & 0x8000 == 0 {
            let symbol = UInt8((chunk >> 13) & 3)
            return Array(repeating: symbol, count: min(Int(chunk & 0x1FFF), wanted))
        }
        if chunk & 0x4000 == 0 {
            return (0..<min(14, wanted)).map { UInt8((chunk >> (13 - $0)) & 1) }
        }
        return (0..<min(7, wanted)).map { UInt8((chunk >> (12 - 2 * $0)) & 3) }
    }
}
