import Media

/// Cuts an H.264 access unit into RTP payloads (RFC 6184, packetization-mode 1): a NAL unit
/// that fits goes alone (single NAL unit packet), small ones in a row are aggregated into one
/// STAP-A (the parameter sets and SEI ahead of a picture), and one too big for a packet is
/// fragmented into FU-As. The last payload of the access unit carries the marker bit.
public struct H264Packetizer: Sendable {
    /// The largest payload a packet may carry (the path's MTU less the IP, UDP, SRTP and RTP
    /// headers: 1,200 bytes is what WebRTC stacks use).
    public let maxPayloadSize: Int

    public init(maxPayloadSize: Int = 1200) {
        precondition(maxPayloadSize >= 3)
        self.maxPayloadSize = maxPayloadSize
    }

    /// One packet's payload and whether it ends the access unit (the marker bit).
    public struct Payload: Sendable, Equatable {
        public let bytes: [UInt8]
        public let marker: Bool
    }

    /// The payloads for an access unit's NAL units (each NAL unit's `body`: header and escaped
    /// payload, no start code), in order.
    public func payloads(for nalUnits: [ArraySlice<UInt8>]) -> [Payload] {
        var out: [[UInt8]] = []
        var pending: [ArraySlice<UInt8>] = []  // small NAL units waiting to be aggregated
        var pendingSize = 1  // the STAP-A header byte
        func flush() {
            if pending.count == 1 {
                out.append(Array(pending[0]))
            } else if pending.count > 1 {
                out.append(stapA(pending))
            }
            pending.removeAll(keepingCapacity: true)
            pendingSize = 1
        }
        for nal in nalUnits where !nal.isEmpty {
            if nal.count > maxPayloadSize {
                flush()
                out.append(contentsOf: fragments(of: nal))
                continue
            }
            if pendingSize + 2 + nal.count > maxPayloadSize { flush() }
            pending.append(nal)
            pendingSize += 2 + nal.count
        }
        flush()
        return out.enumerated().map { Payload(bytes: $1, marker: $0 == out.count - 1) }
    }

    private func stapA(_ nals: [ArraySlice<UInt8>]) -> [UInt8] {
        // The aggregate's F bit is any unit's, its NRI the largest of theirs (RFC 6184 §5.7.1).
        let nri = nals.map { $0[$0.startIndex] & 0x60 }.max() ?? 0
        let forbidden = nals.reduce(UInt8(0)) { $0 | ($1[$1.startIndex] & 0x80) }
        var bytes: [UInt8] = [forbidden | nri | 24]
        for nal in nals {
            bytes.append(UInt8(nal.count >> 8))
            bytes.append(UInt8(truncatingIfNeeded: nal.count))
            bytes.append(contentsOf: nal)
        }
        return bytes
    }

    private func fragments(of nal: ArraySlice<UInt8>) -> [[UInt8]] {
        let header = nal[nal.startIndex]
        let indicator = header & 0xE0 | 28
        let type = header & 0x1F
        var out: [[UInt8]] = []
        var at = nal.startIndex + 1  // the NAL header travels in the FU indicator and header
        let room = maxPayloadSize - 2
        while at < nal.endIndex {
            let end = min(at + room, nal.endIndex)
            let start: UInt8 = at == nal.startIndex + 1 ? 0x80 : 0
            let last: UInt8 = end == nal.endIndex ? 0x40 : 0
            var bytes: [UInt8] = [indicator, start | last | type]
            bytes.append(contentsOf: nal[at..<end])
            out.append(bytes)
            at = end
        }
        return out
    }
}
