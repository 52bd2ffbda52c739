/// AAC frames out of RTP packets in RFC 3640's MPEG4-GENERIC format, mode AAC-hbr (what
/// cameras and RTSP servers send): a 16-bit AU-headers-length, the AU headers (each an AU
/// size of `sizeLength` bits and an index or index delta of `indexLength` bits), then the
/// frames one after the other. A frame larger than one packet comes in fragments, the last
/// with the marker bit. Interleaving (index deltas other than 0) is not offered by the
/// senders nalcast reads and is taken in order.
public struct AACDepacketizer: Sendable {
    /// One raw AAC frame (no ADTS header) and its RTP timestamp.
    public struct Frame: Sendable {
        public let data: [UInt8]
        public let rtpTimestamp: UInt32
    }

    public let sizeLength: Int
    public let indexLength: Int
    public let indexDeltaLength: Int
    /// Samples per frame, the timestamp step between a packet's frames (1024 for AAC-LC).
    public let samplesPerFrame: UInt32

    public private(set) var malformedPackets = 0
    public private(set) var lostPackets = 0
    /// Frames dropped because a fragment of theirs was lost.
    public private(set) var droppedFrames = 0

    private var lastSequence: UInt16?
    private var fragment: (data: [UInt8], size: Int, timestamp: UInt32)?

    public init(sizeLength: Int = 13, indexLength: Int = 3, indexDeltaLength: Int = 3, samplesPerFrame: UInt32 = 1024) {
        self.sizeLength = sizeLength
        self.indexLength = indexLength
        self.indexDeltaLength = indexDeltaLength
        self.samplesPerFrame = samplesPerFrame
    }

    /// The frames this packet completes, in order.
    public mutating func take(_ packet: RTPPacket) -> [Frame] {
        if let last = lastSequence {
            guard rtpSequence(packet.sequenceNumber, isAfter: last) else { return [] }
            let gap = Int(packet.sequenceNumber &- last) - 1
            if gap > 0 {
                lostPackets += gap
                if fragment != nil { fragment = nil; droppedFrames += 1 }
            }
        }
        lastSequence = packet.sequenceNumber
        let p = packet.payload
        guard p.count >= 2 else { malformedPackets += 1; return [] }
        let headerBits = Int(p[p.startIndex]) << 8 | Int(p[p.startIndex + 1])
        let headerBytes = (headerBits + 7) / 8
        let dataStart = p.startIndex + 2 + headerBytes
        guard sizeLength > 0, dataStart <= p.endIndex else { malformedPackets += 1; return [] }
        var sizes: [Int] = []
        var bit = 0
        while bit + sizeLength <= headerBits {
            sizes.append(Self.bits(p, from: p.startIndex + 2, at: bit, count: sizeLength))
            bit += sizeLength + (sizes.count == 1 ? indexLength : indexDeltaLength)
        }
        let data = p[dataStart...]
        if let f = fragment {  // a frame's continuation: one AU header naming its whole size
            var whole = f.data
            whole.append(contentsOf: data)
            if whole.count >= f.size || packet.marker {
                fragment = nil
                guard whole.count == f.size else { malformedPackets += 1; droppedFrames += 1; return [] }
                return [Frame(data: whole, rtpTimestamp: f.timestamp)]
            }
            fragment = (whole, f.size, f.timestamp)
            return []
        }
        if sizes.count == 1, sizes[0] > data.count {
            fragment = (Array(data), sizes[0], packet.timestamp)
            return []
        }
        var frames: [Frame] = []
        var at = data.startIndex
        for (i, size) in sizes.enumerated() {
            guard at + size <= data.endIndex else { malformedPackets += 1; break }
            frames.append(Frame(data: Array(data[at..<(at + size)]), rtpTimestamp: packet.timestamp &+ UInt32(i) &* samplesPerFrame))
            at += size
        }
        return frames
    }

    /// `count` bits (at most 32) from bit `at` of the bytes from `start` on, most significant first.
    static func bits(_ bytes: ArraySlice<UInt8>, from start: Int, at: Int, count: Int) -> Int {
        var value = 0
        for i in at..<(at + count) {
            let byte = bytes[start + i / 8]
            value = value << 1 | Int(byte >> (7 - UInt8(i % 8)) & 1)
        }
        return value
    }
}
