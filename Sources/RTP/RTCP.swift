/// RTCP (RFC 3550 §6): a compound packet split into its packets, and the sender report,
/// which ties a source's RTP timestamps to wall-clock time (what lip sync between tracks
/// and capture-time figures rest on). Feedback messages (RFC 4585) are their own types.
public enum RTCP {
    /// One packet of a compound packet: its type (200 SR, 201 RR, 205 transport feedback,
    /// 206 payload-specific feedback...), the count/format field, and its body after the
    /// four-byte header.
    public struct Packet: Sendable, Equatable {
        public let type: UInt8
        public let count: UInt8
        public let body: ArraySlice<UInt8>
    }

    /// The packets of a compound packet, in order; nil when the lengths do not add up to the
    /// bytes given (the compound is dropped whole, as RFC 3550 §6.1 asks).
    public static func packets(in bytes: ArraySlice<UInt8>) -> [Packet]? {
        var out: [Packet] = []
        var at = bytes.startIndex
        while at < bytes.endIndex {
            guard at + 4 <= bytes.endIndex, bytes[at] >> 6 == 2 else { return nil }
            let length = 4 * (Int(bytes[at + 2]) << 8 | Int(bytes[at + 3]))
            guard at + 4 + length <= bytes.endIndex else { return nil }
            var end = at + 4 + length
            if bytes[at] & 0x20 != 0, length > 0 {  // padding, counted by the last byte
                let padding = Int(bytes[end - 1])
                guard padding <= length else { return nil }
                end -= padding
            }
            out.append(Packet(type: bytes[at + 1], count: bytes[at] & 0x1F, body: bytes[(at + 4)..<end]))
            at += 4 + length
        }
        return out
    }

    /// A sender report's sender information (report blocks are not kept).
    public struct SenderReport: Sendable, Equatable {
        public let ssrc: UInt32
        /// NTP time (seconds since 1900 in the high word, a binary fraction in the low).
        public let ntpTime: UInt64
        public let rtpTimestamp: UInt32
        public let packetCount: UInt32
        public let octetCount: UInt32

        public init(ssrc: UInt32, ntpTime: UInt64, rtpTimestamp: UInt32, packetCount: UInt32, octetCount: UInt32) {
            self.ssrc = ssrc
            self.ntpTime = ntpTime
            self.rtpTimestamp = rtpTimestamp
            self.packetCount = packetCount
            self.octetCount = octetCount
        }

        /// Reads a type-200 packet's body.
        public init?(_ packet: Packet) {
            let b = packet.body
            guard packet.type == 200, b.count >= 24 else { return nil }
            let s = b.startIndex
            self.init(ssrc: RTPPacket.word(b, s),
                      ntpTime: UInt64(RTPPacket.word(b, s + 4)) << 32 | UInt64(RTPPacket.word(b, s + 8)),
                      rtpTimestamp: RTPPacket.word(b, s + 12), packetCount: RTPPacket.word(b, s + 16),
                      octetCount: RTPPacket.word(b, s + 20))
        }

        /// The packet's bytes, with no report blocks.
        public func serialized() -> [UInt8] {
            var out: [UInt8] = [0x80, 200, 0, 6]
            RTPPacket.append(ssrc, to: &out)
            RTPPacket.append(UInt32(ntpTime >> 32), to: &out)
            RTPPacket.append(UInt32(truncatingIfNeeded: ntpTime), to: &out)
            RTPPacket.append(rtpTimestamp, to: &out)
            RTPPacket.append(packetCount, to: &out)
            RTPPacket.append(octetCount, to: &out)
            return out
        }

        /// The NTP time as seconds since 1970 (the Unix epoch).
        public var unixSeconds: Double {
            Double(ntpTime >> 32) - 2_208_988_800 + Double(ntpTime & 0xFFFF_FFFF) / 4_294_967_296
        }

        /// NTP time from seconds since 1970.
        public static func ntpTime(unixSeconds: Double) -> UInt64 {
            let seconds = unixSeconds + 2_208_988_800
            let whole = seconds.rounded(.down)
            return UInt64(whole) << 32 | UInt64((seconds - whole) * 4_294_967_296)
        }
    }

    /// The middle 32 bits of an NTP time (RFC 3550's compact form, 1/65536 s): what LSR,
    /// LRR and the round trip are counted in.
    public static func compact(_ ntpTime: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: ntpTime >> 16) }

    /// The round trip a report gives (RFC 3550 §6.4.1, RFC 3611 §4.5): `now` minus the
    /// time stamp it echoes (`lastSR`, LRR) minus the delay it spent at the other end, all in
    /// the compact form; in nanoseconds, nil when there is no time stamp (0) or it does not
    /// add up (later than now, or a minute or more: a clock stepped).
    public static func roundTrip(now: UInt32, echoed: UInt32, delay: UInt32) -> UInt64? {
        guard echoed != 0 else { return nil }
        let rtt = now &- echoed &- delay
        guard rtt < 60 << 16 else { return nil }
        return UInt64(rtt) * 1_000_000_000 >> 16
    }

    /// An extended report (XR, 207) from `sender` with one DLRR block (BT 5, RFC 3611 §4.5):
    /// for each receiver its SSRC, the compact NTP time of its last receiver reference time
    /// (LRR) and the delay since it came, in 1/65536 s.
    public static func delaySinceLastReceiverReport(sender: UInt32, _ items: [(ssrc: UInt32, lastRR: UInt32, delay: UInt32)]) -> [UInt8] {
        let length = 2 + 3 * items.count
        var out: [UInt8] = [0x80, 207, UInt8(length >> 8), UInt8(truncatingIfNeeded: length)]
        RTPPacket.append(sender, to: &out)
        out += [5, 0, UInt8((3 * items.count) >> 8), UInt8(truncatingIfNeeded: 3 * items.count)]
        for item in items {
            RTPPacket.append(item.ssrc, to: &out)
            RTPPacket.append(item.lastRR, to: &out)
            RTPPacket.append(item.delay, to: &out)
        }
        return out
    }
}
