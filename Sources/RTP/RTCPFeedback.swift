/// RTCP feedback a receiver sends a sender (RFC 4585, RFC 5104, and the REMB draft): what a
/// WebRTC sender acts on. Read from the packets of a compound (`RTCP.packets(in:)`).
public enum RTCPFeedback: Sendable, Equatable {
    /// Picture loss indication (PSFB, FMT 1): send an entry point.
    case pictureLoss(mediaSSRC: UInt32)
    /// Full intra request (PSFB, FMT 4, RFC 5104 §4.3.1): the same, with a command sequence
    /// number that repeats for a repeated request.
    case fullIntraRequest(mediaSSRC: UInt32, sequence: UInt8)
    /// Generic NACK (RTPFB, FMT 1): the sequence numbers lost.
    case nack(mediaSSRC: UInt32, lost: [UInt16])
    /// Receiver estimated maximum bitrate (PSFB, FMT 15, "REMB"), bits per second.
    case estimatedBitrate(bitsPerSecond: UInt64, ssrcs: [UInt32])
    /// Transport-wide congestion control feedback (RTPFB, FMT 15): what arrived and when
    /// (nil: cut short or a reserved status).
    case transportWide(TransportFeedback?)
    /// A receiver report (RR, 201), its first block: fraction lost (0 to 255), cumulative
    /// lost, jitter, and the middle 32 bits of the NTP time of the last sender report it had
    /// (0: none yet) with the delay since, in 1/65536 s: what the round trip is read from
    /// (RFC 3550 §6.4.1, `RTCP.roundTrip`).
    case receiverReport(fractionLost: UInt8, cumulativeLost: Int32, jitter: UInt32, lastSR: UInt32 = 0, delaySinceLastSR: UInt32 = 0)
    /// An extended report (XR, 207, RFC 3611) with a receiver reference time block (BT 4):
    /// the NTP time a receiver that sends nothing stamped it with, which the sender answers
    /// with a DLRR (`RTCP.delaySinceLastReceiverReport`) for it to learn the round trip.
    case receiverReferenceTime(ssrc: UInt32, ntpTime: UInt64)

    /// The feedback in `packet`, nil for what is none of the above (an SDES, a BYE...).
    public init?(_ packet: RTCP.Packet) {
        let b = packet.body
        let s = b.startIndex
        switch (packet.type, packet.count) {
        case (206, 1) where b.count >= 8:
            self = .pictureLoss(mediaSSRC: RTPPacket.word(b, s + 4))
        case (206, 4) where b.count >= 16:
            self = .fullIntraRequest(mediaSSRC: RTPPacket.word(b, s + 8), sequence: b[s + 12])
        case (205, 1) where b.count >= 12:
            var lost: [UInt16] = []
            var at = s + 8
            while at + 4 <= b.endIndex {
                let pid = UInt16(b[at]) << 8 | UInt16(b[at + 1])
                let mask = UInt16(b[at + 2]) << 8 | UInt16(b[at + 3])
                lost.append(pid)
                for bit in 0..<16 where mask & (1 << bit) != 0 { lost.append(pid &+ UInt16(bit + 1)) }
                at += 4
            }
            self = .nack(mediaSSRC: RTPPacket.word(b, s + 4), lost: lost)
        case (206, 15) where b.count >= 16 && Array(b[(s + 8)..<(s + 12)]) == Array("REMB".utf8):
            let count = Int(b[s + 12])
            let exponent = UInt64(b[s + 13] >> 2)
            let mantissa = UInt64(b[s + 13] & 3) << 16 | UInt64(b[s + 14]) << 8 | UInt64(b[s + 15])
            var ssrcs: [UInt32] = []
            for i in 0..<count where s + 16 + 4 * i + 4 <= b.endIndex { ssrcs.append(RTPPacket.word(b, s + 16 + 4 * i)) }
            self = .estimatedBitrate(bitsPerSecond: exponent >= 46 ? UInt64.max : mantissa << exponent, ssrcs: ssrcs)
        case (205, 15):
            self = .transportWide(TransportFeedback(body: b))
        case (201, let blocks) where blocks > 0 && b.count >= 28:
            let lost = Int32(bitPattern: UInt32(b[s + 9]) << 24 | UInt32(b[s + 10]) << 16 | UInt32(b[s + 11]) << 8) >> 8
            self = .receiverReport(fractionLost: b[s + 8], cumulativeLost: lost, jitter: RTPPacket.word(b, s + 16),
                                   lastSR: RTPPacket.word(b, s + 20), delaySinceLastSR: RTPPacket.word(b, s + 24))
        case (207, _) where b.count >= 4:
            // Report blocks after the sender's SSRC: type, a byte, length in words after the
            // block's own header word.
            var at = s + 4
            while at + 4 <= b.endIndex {
                let words = Int(b[at + 2]) << 8 | Int(b[at + 3])
                if b[at] == 4, words == 2, at + 12 <= b.endIndex {
                    self = .receiverReferenceTime(ssrc: RTPPacket.word(b, s),
                                                  ntpTime: UInt64(RTPPacket.word(b, at + 4)) << 32 | UInt64(RTPPacket.word(b, at + 8)))
                    return
                }
                at += 4 + 4 * words
            }
            return nil
        default:
            return nil
        }
    }

    /// A PLI's bytes (what a receiver sends: the WHIP ingest, and the tests' peers).
    public static func pictureLossPacket(sender: UInt32, media: UInt32) -> [UInt8] {
        var out: [UInt8] = [0x81, 206, 0, 2]
        RTPPacket.append(sender, to: &out)
        RTPPacket.append(media, to: &out)
        return out
    }

    /// A generic NACK's bytes for `lost` (each its own FCI entry, no bitmask).
    public static func nackPacket(sender: UInt32, media: UInt32, lost: [UInt16]) -> [UInt8] {
        var out: [UInt8] = [0x81, 205, 0, UInt8(2 + lost.count)]
        RTPPacket.append(sender, to: &out)
        RTPPacket.append(media, to: &out)
        for seq in lost { out += [UInt8(seq >> 8), UInt8(truncatingIfNeeded: seq), 0, 0] }
        return out
    }
}
