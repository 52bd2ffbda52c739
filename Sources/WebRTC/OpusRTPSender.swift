import RTP

/// What a WebRTC sender puts on the wire for the sound, before SRTP: one Opus packet per RTP
/// packet (RFC 7587), 48 kHz timestamps on the video's capture clock (`RTPSender.clock`:
/// media time + the video's origin is the capture time, here in 48 kHz ticks), so that the
/// two senders' reports map both onto the same wall-clock time and the browser lines the
/// sound up with the pictures. The marker on the first packet (the start of a talkspurt).
/// Pure.
public struct OpusRTPSender: Sendable {
    public let ssrc: UInt32
    public let payloadType: UInt8
    public private(set) var sequenceNumber: UInt16
    public private(set) var packetsSent: UInt32 = 0
    public private(set) var octetsSent: UInt32 = 0

    public init(ssrc: UInt32, payloadType: UInt8, firstSequence: UInt16) {
        self.ssrc = ssrc
        self.payloadType = payloadType
        self.sequenceNumber = firstSequence
    }

    /// The 48 kHz RTP timestamp of a time on the capture clock in 90 kHz ticks.
    static func timestamp(_ clock90k: Int64) -> UInt32 {
        UInt32(truncatingIfNeeded: clock90k * 8 / 15)
    }

    /// The RTP packet of one Opus packet at media time `mediaTime90k`, with its sequence number;
    /// nil while `video` has sent nothing (no clock to put the sound on yet).
    public mutating func packet(_ opus: [UInt8], mediaTime90k: Int64, video: RTPSender) -> (sequence: UInt16, bytes: [UInt8])? {
        guard let clock = video.clock else { return nil }
        let packet = RTPPacket(marker: packetsSent == 0, payloadType: payloadType, sequenceNumber: sequenceNumber,
                               timestamp: Self.timestamp(mediaTime90k + clock.origin90k), ssrc: ssrc, payload: opus[...])
        let sequence = sequenceNumber
        sequenceNumber &+= 1
        packetsSent &+= 1
        octetsSent &+= UInt32(opus.count)
        return (sequence, packet.serialized())
    }

    /// A sender report for `nowNs` (CLOCK_REALTIME) on the video's line (the RTP time of now
    /// as the video's report extrapolates it, in 48 kHz ticks); nil before the first packet.
    public func senderReport(nowNs: UInt64, video: RTPSender) -> RTCP.SenderReport? {
        guard packetsSent > 0, let clock = video.clock else { return nil }
        let elapsed = Int64(bitPattern: nowNs &- clock.wallNs)
        let rtp = Self.timestamp(clock.pts90k + clock.origin90k) &+ UInt32(truncatingIfNeeded: elapsed * 48 / 1_000_000)
        return RTCP.SenderReport(ssrc: ssrc, ntpTime: RTCP.SenderReport.ntpTime(unixSeconds: Double(nowNs) / 1e9),
                                 rtpTimestamp: rtp, packetCount: packetsSent, octetCount: octetsSent)
    }
}
