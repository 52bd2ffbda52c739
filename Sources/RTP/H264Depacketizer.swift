import Media

/// Puts H.264 NAL units back together from RTP packets (RFC 6184: single NAL unit packets,
/// STAP-A, FU-A) and ends an access unit at the marker bit, as soon as its last packet is in,
/// rather than when the next one begins (or at a change of timestamp, for senders that set
/// no marker). Packets are taken in arrival order; a gap in the sequence numbers loses the
/// fragmented NAL unit it cuts (counted), never the ones around it.
public struct H264Depacketizer: Sendable {
    /// An access unit's NAL units (each with a 4-byte start code) and its RTP timestamp.
    public struct Unit: Sendable {
        public let nalUnits: [NALUnit]
        public let rtpTimestamp: UInt32
        /// A packet of this access unit was lost (the unit may not decode cleanly).
        public let damaged: Bool
    }

    /// Packets that carried nothing usable (unknown or malformed payloads), counted.
    public private(set) var malformedPackets = 0
    /// Packets missing from the sequence.
    public private(set) var lostPackets = 0
    /// NAL units dropped because a fragment of theirs was lost.
    public private(set) var droppedFragmentedUnits = 0

    private var nalUnits: [NALUnit] = []
    private var timestamp: UInt32?
    private var damaged = false
    private var lastSequence: UInt16?
    private var fragment: [UInt8]?  // a FU-A being put together, start code and header included

    public init() {}

    /// Takes one packet; returns the access units it completed (at most two: the one a change
    /// of timestamp ended, and this one when its marker bit is set).
    public mutating func take(_ packet: RTPPacket) -> [Unit] {
        var done: [Unit] = []
        if let last = lastSequence {
            guard rtpSequence(packet.sequenceNumber, isAfter: last) else { return [] }  // late or repeated
            let gap = Int(packet.sequenceNumber &- last) - 1
            if gap > 0 { noteLoss(gap) }
        }
        lastSequence = packet.sequenceNumber
        if let timestamp, timestamp != packet.timestamp, let unit = finish() { done.append(unit) }
        timestamp = packet.timestamp
        read(packet.payload)
        if packet.marker, let unit = finish() { done.append(unit) }
        return done
    }

    /// Ends the access unit in progress (the stream ended, or the caller gave up waiting).
    public mutating func flush() -> Unit? { finish() }

    private mutating func noteLoss(_ count: Int) {
        lostPackets += count
        damaged = true
        if fragment != nil {
            fragment = nil
            droppedFragmentedUnits += 1
        }
    }

    private mutating func finish() -> Unit? {
        if fragment != nil {  // its end never came
            fragment = nil
            droppedFragmentedUnits += 1
            damaged = true
        }
        defer { nalUnits = []; timestamp = nil; damaged = false }
        guard let timestamp, !nalUnits.isEmpty else { return nil }
        return Unit(nalUnits: nalUnits, rtpTimestamp: timestamp, damaged: damaged)
    }

    private mutating func read(_ payload: ArraySlice<UInt8>) {
        guard let header = payload.first else { malformedPackets += 1; return }
        switch header & 0x1F {
        case 1...23: nalUnits.append(NALUnit(escapedBody: payload))
        case 24: readSTAPA(payload.dropFirst())
        case 28: readFUA(payload)
        default: malformedPackets += 1  // STAP-B, MTAPs, FU-B: interleaved mode, not offered
        }
    }

    private mutating func readSTAPA(_ body: ArraySlice<UInt8>) {
        var at = body.startIndex
        while at + 2 <= body.endIndex {
            let size = Int(body[at]) << 8 | Int(body[at + 1])
            at += 2
            guard size > 0, at + size <= body.endIndex else { malformedPackets += 1; return }
            nalUnits.append(NALUnit(escapedBody: body[at..<(at + size)]))
            at += size
        }
    }

    private mutating func readFUA(_ payload: ArraySlice<UInt8>) {
        guard payload.count > 2 else { malformedPackets += 1; return }
        let indicator = payload[payload.startIndex]
        let fuHeader = payload[payload.startIndex + 1]
        let data = payload.dropFirst(2)
        if fuHeader & 0x80 != 0 {
            if fragment != nil { droppedFragmentedUnits += 1 }  // a start before the last one ended
            fragment = [0, 0, 0, 1, indicator & 0xE0 | fuHeader & 0x1F]
        }
        guard fragment != nil else { return }  // its start was lost: counted with the loss
        fragment!.append(contentsOf: data)
        if fuHeader & 0x40 != 0, let bytes = fragment {
            nalUnits.append(NALUnit(wire: bytes[...], headerIndex: 4, payloadEnd: bytes.count))
            fragment = nil
        }
    }
}
