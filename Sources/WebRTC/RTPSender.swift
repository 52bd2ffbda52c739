import Media
import RTP

/// What a WebRTC sender puts on the wire for one access unit, before SRTP: the NAL units a
/// receiver decodes (no AUD, SEI, end of sequence or filler: WebRTC frames access units with
/// the marker bit and timestamps), packetized (RFC 6184, mode 1), with abs-send-time and the
/// transport-wide sequence number (TWCC) on every packet and abs-capture-time and
/// playout-delay (0, 0) on the first when negotiated. Pure.
public struct RTPSender: Sendable {
    public let ssrc: UInt32
    public let payloadType: UInt8
    /// The one-byte header extension id of abs-capture-time; nil when not negotiated.
    public let captureTimeExtension: Int?
    /// The one-byte header extension id of abs-send-time; nil when not negotiated.
    public let sendTimeExtension: Int?
    /// The one-byte header extension id of playout-delay; nil when not negotiated.
    public let playoutDelayExtension: Int?
    /// The one-byte header extension id of transport-wide-cc; nil when not negotiated.
    public let transportSequenceExtension: Int?
    /// The transport-wide sequence number of the next packet (when numbered): the packets of
    /// one `packets` call have the numbers from its value before the call on.
    public private(set) var transportSequence: UInt16 = 1
    public private(set) var sequenceNumber: UInt16
    /// The last access unit's RTP timestamp and the wall-clock time (ns) it stands for: what
    /// sender reports map from.
    public private(set) var last: (rtp: UInt32, wallNs: UInt64)?
    /// The same clock unwrapped, for the sound (`OpusRTPSender`): media time + `origin90k` is
    /// the capture clock in 90 kHz ticks (the RTP timestamp before its 32-bit wrap); the last
    /// access unit's media time and capture time, which sender reports extrapolate from.
    public private(set) var clock: (origin90k: Int64, pts90k: Int64, wallNs: UInt64)?
    public private(set) var packetsSent: UInt32 = 0
    public private(set) var octetsSent: UInt32 = 0

    public init(ssrc: UInt32, payloadType: UInt8, captureTimeExtension: Int?, sendTimeExtension: Int? = nil,
                playoutDelayExtension: Int? = nil, transportSequenceExtension: Int? = nil, firstSequence: UInt16) {
        self.ssrc = ssrc
        self.transportSequenceExtension = transportSequenceExtension
        self.payloadType = payloadType
        self.captureTimeExtension = captureTimeExtension
        self.sendTimeExtension = sendTimeExtension
        self.playoutDelayExtension = playoutDelayExtension
        self.sequenceNumber = firstSequence
    }

    /// NAL unit types left out: AUD (9), SEI (6), end of sequence (10) and stream (11), filler (12).
    static func carried(_ type: UInt8) -> Bool { ![6, 9, 10, 11, 12].contains(type) }

    /// The RTP payloads of one access unit, the same for every viewer (only the headers and
    /// SRTP differ): the NAL units a receiver decodes, packetized. Made once per unit
    /// (`RTPPayloads`) and handed to each viewer's `packets(payloads:)`.
    public static func payloads(_ nalUnits: [NALUnit]) -> [H264Packetizer.Payload] {
        let bodies = nalUnits.compactMap { nal -> ArraySlice<UInt8>? in
            let body = nal.body
            guard let first = body.first, carried(first & 0x1F) else { return nil }
            return body
        }
        return H264Packetizer().payloads(for: bodies)
    }

    /// `packets(payloads:)` of `nalUnits`.
    public mutating func packets(_ nalUnits: [NALUnit], pts90k: UInt64? = nil, wallNs: UInt64, sendNs: UInt64 = 0) -> [(sequence: UInt16, bytes: [UInt8])] {
        packets(payloads: Self.payloads(nalUnits), pts90k: pts90k, wallNs: wallNs, sendNs: sendNs)
    }

    /// The RTP packets of one access unit (its `payloads`) at media time `pts90k` (nil: unknown) captured at
    /// `wallNs` (CLOCK_REALTIME: the timestamp SEI's, else when it came) and sent at `sendNs`
    /// (any clock), in order, each with its sequence number.
    ///
    /// The RTP timestamp is the capture time itself, in 90 kHz ticks modulo 2^32, which the
    /// page reads back from `requestVideoFrameCallback`'s `rtpTimestamp` for its capture →
    /// paint figure (Chromium gives a receive-only peer no `captureTime`: it needs a round-trip
    /// time). Not random as RFC 3550 §5.1 suggests: SRTP's AES counter mode makes known
    /// timestamps no help to an attacker. A media time moved onto the capture clock would
    /// carry the first picture's capture jitter into every figure. The sound (`clock`) is
    /// placed by media time, on the origin the first picture gave.
    public mutating func packets(payloads: [H264Packetizer.Payload], pts90k: UInt64? = nil, wallNs: UInt64, sendNs: UInt64 = 0)
        -> [(sequence: UInt16, bytes: [UInt8])] {
        if let pts90k {
            let origin = clock?.origin90k ?? Int64(wallNs / 100_000 * 9) - Int64(truncatingIfNeeded: pts90k)
            clock = (origin, Int64(truncatingIfNeeded: pts90k), wallNs)
        }
        var timestamp = UInt32(truncatingIfNeeded: wallNs / 100_000 * 9)
        // Never backwards (a relay's GOP sent again after a PLI carries old times).
        if let previous = last?.rtp, !(timestamp == previous || rtpTimestamp(timestamp, isAfter: previous)) { timestamp = previous &+ 1 }
        last = (timestamp, wallNs)
        var out: [(UInt16, [UInt8])] = []
        for (i, payload) in payloads.enumerated() {
            var packet = RTPPacket(marker: payload.marker, payloadType: payloadType, sequenceNumber: sequenceNumber,
                                   timestamp: timestamp, ssrc: ssrc, payload: payload.bytes[...])
            var elements: [UInt8] = []
            if let id = sendTimeExtension { elements += Self.absSendTime(id: id, sendNs: sendNs) }
            if let id = transportSequenceExtension {
                elements += [UInt8(id << 4 | 1), UInt8(transportSequence >> 8), UInt8(truncatingIfNeeded: transportSequence)]
                transportSequence &+= 1
            }
            if i == 0, let id = captureTimeExtension { elements += Self.absCaptureTime(id: id, wallNs: wallNs) }
            // Minimum and maximum 0 (12 bits each, 10 ms units): no buffering to smooth the picture.
            if i == 0, let id = playoutDelayExtension { elements += [UInt8(id << 4 | 2), 0, 0, 0] }
            if !elements.isEmpty {
                packet.extensionProfile = 0xBEDE
                packet.extensionData = (elements + [UInt8](repeating: 0, count: (4 - elements.count % 4) % 4))[...]
            }
            let bytes = packet.serialized()
            out.append((sequenceNumber, bytes))
            sequenceNumber &+= 1
            packetsSent &+= 1
            octetsSent &+= UInt32(payload.bytes.count)
        }
        return out
    }

    /// A sender report for `nowNs` (CLOCK_REALTIME): the RTP time of now on the last access
    /// unit's line; nil before the first access unit.
    public func senderReport(nowNs: UInt64) -> RTCP.SenderReport? {
        guard let last else { return nil }
        let elapsed = Int64(bitPattern: nowNs &- last.wallNs)
        let rtp = last.rtp &+ UInt32(truncatingIfNeeded: elapsed * 9 / 100_000)
        return RTCP.SenderReport(ssrc: ssrc, ntpTime: RTCP.SenderReport.ntpTime(unixSeconds: Double(nowNs) / 1e9),
                                 rtpTimestamp: rtp, packetCount: packetsSent, octetCount: octetsSent)
    }

    /// The abs-capture-time element (one-byte form, 8 bytes of NTP time).
    static func absCaptureTime(id: Int, wallNs: UInt64) -> [UInt8] {
        let ntp = RTCP.SenderReport.ntpTime(unixSeconds: Double(wallNs) / 1e9)
        var out: [UInt8] = [UInt8(id << 4 | 7)]
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: ntp >> UInt64(shift))) }
        return out
    }

    /// The abs-send-time element (one-byte form, 3 bytes: seconds in 6.18 fixed point, 64 s wrap).
    static func absSendTime(id: Int, sendNs: UInt64) -> [UInt8] {
        let value = UInt32(truncatingIfNeeded: ((sendNs % 64_000_000_000) << 18) / 1_000_000_000) & 0xFF_FFFF
        return [UInt8(id << 4 | 2), UInt8(value >> 16), UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]
    }
}

/// Whether an RTP timestamp comes after another, across the 32-bit wrap.
func rtpTimestamp(_ b: UInt32, isAfter a: UInt32) -> Bool {
    let d = b &- a
    return d != 0 && d < 0x8000_0000
}

/// The RTP payloads of one published access unit (`RTPSender.payloads`), made once for every
/// WHEP viewer and carried with the unit in its `WireForms`.
public struct RTPPayloads: Sendable {
    public let payloads: [H264Packetizer.Payload]
    public init(_ nalUnits: [NALUnit]) { payloads = RTPSender.payloads(nalUnits) }
}
