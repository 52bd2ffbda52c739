import H264
import Media

/// A demuxed H.264 packet back to nalcast's wire form, without re-encoding: one packet is one
/// access unit, made here directly (no scan for start codes across packets, no waiting for
/// the next picture to know this one ended).
///
/// - Length-prefixed packets (MP4, Matroska, FLV, RTMP: the stream's extradata is an avcC
///   record) have each length field turned into a start code; with 4-byte lengths, in place
///   in the packet's own copy.
/// - Annex-B packets (MPEG-TS, SRT, UDP, most RTSP) are cut at their start codes, bytes kept.
/// - An access unit delimiter goes first when the packet has none: nalcast's stream begins
///   every access unit with one.
/// - An IDR that lacks its SPS or PPS gets them after the AUD: the latest seen in the stream,
///   else the extradata's. A new SPS/PPS (a resolution change) passes through and is the one
///   put in front of later IDRs.
/// - A packet with no picture in it (parameter sets alone) joins the next packet's access
///   unit. A caller whose pictures may span packets (RTSP) gathers their NAL units itself
///   (`nalUnits(packet:)`, `beginsPicture`) and hands them to `assemble` together.
///
/// The NAL units go through an `AccessUnitAssembler` (`append`, then `endAccessUnit`) for
/// what the rest of nalcast reads off an access unit: IDR or not, the active parameter sets,
/// the picture size, a nalcast timestamp SEI. Pure; used by one thread.
public struct AnnexBPackager {
    /// Bytes in each NAL unit's length field (1, 2 or 4); nil: packets are Annex-B.
    public private(set) var lengthSize: Int?
    /// The extradata's SPS and PPS, start codes in front.
    public private(set) var extradataSets: [NALUnit] = []
    /// The last SPS and PPS seen in a packet (in-band), which win over the extradata's.
    private var inBandSPS: NALUnit?
    private var inBandPPS: NALUnit?
    private var assembler = AccessUnitAssembler()
    /// NAL units of packets that held no picture, for the next packet's access unit.
    private var held: [NALUnit] = []
    /// Packets that held no NAL unit at all, or a length field running past the end
    /// (what was whole before it is kept).
    public private(set) var malformedPackets = 0

    /// The access unit delimiter put in front: any slice type.
    static let aud = NALUnit.accessUnitDelimiter(primaryPicType: 7)

    /// Set up from the stream's extradata: an avcC record (first byte 1), Annex-B parameter
    /// sets (a start code first), or nothing (the parameter sets come in-band).
    public init(extradata: [UInt8]) throws(PackagerError) {
        try setExtradata(extradata)
    }

    /// New extradata mid-stream (FLV/RTMP send a new sequence header when the encoder's
    /// parameters change): its parameter sets are the ones put in front of later IDRs.
    public mutating func setExtradata(_ extradata: [UInt8]) throws(PackagerError) {
        if extradata.first == 1 {
            let record = try Self.parseAVCC(extradata)
            lengthSize = record.lengthSize
            extradataSets = record.parameterSets
        } else {
            lengthSize = nil
            extradataSets = Self.splitAnnexB(extradata[...]).filter { $0.type == .sps || $0.type == .pps }
        }
        inBandSPS = nil
        inBandPPS = nil
    }

    /// Counts one more malformed input (new extradata that could not be read).
    public mutating func noteMalformed() { malformedPackets += 1 }

    /// The avcC record (ISO/IEC 14496-15 5.2.4.1): NAL length size and SPS/PPS, each turned
    /// into an Annex-B NAL unit.
    public static func parseAVCC(_ data: [UInt8]) throws(PackagerError) -> (lengthSize: Int, parameterSets: [NALUnit]) {
        guard data.count >= 7, data[0] == 1 else { throw PackagerError("avcC record too short or not version 1 (\(data.count) bytes)") }
        let lengthSize = Int(data[4] & 3) + 1
        guard lengthSize != 3 else { throw PackagerError("avcC NAL length size 3 is not allowed") }
        var sets: [NALUnit] = []
        var at = 6  // after the SPS count (low 5 bits of byte 5)
        func take(_ count: Int) throws(PackagerError) {
            for _ in 0..<count {
                guard at + 2 <= data.count else { throw PackagerError("avcC record cut short") }
                let n = Int(data[at]) << 8 | Int(data[at + 1])
                at += 2
                guard n > 0, at + n <= data.count else { throw PackagerError("avcC parameter set runs past the record") }
                sets.append(NALUnit(escapedBody: data[at..<(at + n)]))
                at += n
            }
        }
        try take(Int(data[5] & 0x1f))
        guard at < data.count else { throw PackagerError("avcC record has no PPS count") }
        let ppsCount = Int(data[at])
        at += 1
        try take(ppsCount)
        return (lengthSize, sets)
    }

    /// One demuxed packet (its bytes, owned) to one access unit; nil when it holds no NAL
    /// unit (counted in `malformedPackets`) or no picture (held for the next one).
    public mutating func accessUnit(packet: [UInt8]) -> AccessUnit? {
        let nals = nalUnits(packet: packet)
        guard !nals.isEmpty else { return nil }
        return assemble(nals)
    }

    /// The NAL units of one packet, start codes in front; none (counted) when it holds none.
    public mutating func nalUnits(packet: [UInt8]) -> [NALUnit] {
        var bytes = packet
        return nalUnits(taking: &bytes)
    }

    /// The same for a packet the caller hands over: 4-byte length fields become start codes in
    /// `packet` itself, which the NAL units then share (the bytes are not copied again: when
    /// the caller still held them, that was a second copy of every MP4 packet).
    public mutating func nalUnits(taking packet: inout [UInt8]) -> [NALUnit] {
        let nals: [NALUnit]
        var truncated = false
        if let lengthSize {
            (nals, truncated) = Self.splitLengthPrefixed(&packet, lengthSize: lengthSize)
        } else if extradataSets.isEmpty && Self.isWholeLengthPrefixed(packet) {
            // No extradata yet and no start code, but whole 4-byte length-prefixed NAL units:
            // an FLV/RTMP stream whose sequence header had not come when it was opened.
            (nals, truncated) = Self.splitLengthPrefixed(&packet, lengthSize: 4)
        } else {
            nals = Self.splitAnnexB(packet[...])
        }
        if truncated || nals.isEmpty { malformedPackets += 1 }
        return nals
    }

    /// False when the first slice among `nals` continues a picture (first_mb_in_slice is
    /// not 0): RTSP's depacketizer can hand out one picture's slices in two packets.
    public static func beginsPicture(_ nals: [NALUnit]) -> Bool {
        guard let slice = nals.first(where: { $0.type.isVCL }), let first = slice.escapedPayload.first else { return true }
        return first & 0x80 != 0  // ue(v) 0 is the single bit 1
    }

    /// `nals` without the SPS and PPS that repeat, byte for byte, one already in `kept` or
    /// earlier in `nals`: a payloader that repeats the sets before every IDR slice
    /// (GStreamer's rtph264pay config-interval=-1) puts copies between one picture's slices,
    /// which would end the picture there.
    public static func droppingRepeatedParameterSets(_ nals: [NALUnit], after kept: [NALUnit] = []) -> [NALUnit] {
        var out: [NALUnit] = []
        out.reserveCapacity(nals.count)
        func repeats(_ nal: NALUnit, in list: [NALUnit]) -> Bool {
            list.contains { $0.type == nal.type && $0.body.elementsEqual(nal.body) }
        }
        for nal in nals {
            if (nal.type == .sps || nal.type == .pps) && (repeats(nal, in: out) || repeats(nal, in: kept)) { continue }
            out.append(nal)
        }
        return out
    }

    /// The NAL units of one picture (one packet, or several that continue it): AUD first,
    /// SPS/PPS before an IDR that lacks them, then through the assembler.
    public mutating func assemble(_ packetNALs: [NALUnit]) -> AccessUnit? {
        // A packet with no picture in it (parameter sets, SEI: RTSP's depacketizer hands
        // them out apart from the IDR that follows with the same time) goes in front of the
        // next packet's NAL units; an end of stream is handed on at once.
        if !packetNALs.contains(where: { $0.type.isVCL || $0.type == .endOfStream || $0.type == .endOfSequence }) {
            for nal in packetNALs {
                if nal.type == .sps { inBandSPS = nal }
                if nal.type == .pps { inBandPPS = nal }
            }
            held += packetNALs.filter { $0.type != .accessUnitDelimiter }
            return nil
        }
        var nals = packetNALs
        if !held.isEmpty {
            let insertAt = nals[0].type == .accessUnitDelimiter ? 1 : 0
            nals.insert(contentsOf: held, at: insertAt)
            held.removeAll()
        }
        var hasSPS = false, hasPPS = false, isIDR = false
        for nal in nals {
            switch nal.type {
            case .sps: hasSPS = true; inBandSPS = nal
            case .pps: hasPPS = true; inBandPPS = nal
            case .idrSlice: isIDR = true
            default: break
            }
        }
        var out: [NALUnit] = []
        out.reserveCapacity(nals.count + 3)
        var rest = nals[...]
        if nals[0].type == .accessUnitDelimiter {
            out.append(nals[0])
            rest = nals.dropFirst()
        } else {
            out.append(Self.aud)
        }
        if isIDR && !(hasSPS && hasPPS) {
            if !hasSPS, let sps = inBandSPS ?? extradataSets.first(where: { $0.type == .sps }) { out.append(sps) }
            if !hasPPS {
                if let pps = inBandPPS { out.append(pps) } else { out.append(contentsOf: extradataSets.filter { $0.type == .pps }) }
            }
        }
        out.append(contentsOf: rest)
        for nal in out { assembler.append(nal) }
        return assembler.endAccessUnit()
    }

    /// True when `packet` does not begin with a start code and is exactly a run of 4-byte
    /// length-prefixed NAL units (each header's forbidden bit clear).
    static func isWholeLengthPrefixed(_ packet: [UInt8]) -> Bool {
        guard packet.count > 4, !(packet[0] == 0 && packet[1] == 0 && (packet[2] == 1 || packet[2] == 0 && packet[3] == 1)) else { return false }
        var at = 0
        while at + 4 < packet.count {
            let n = Int(packet[at]) << 24 | Int(packet[at + 1]) << 16 | Int(packet[at + 2]) << 8 | Int(packet[at + 3])
            guard n > 0, n <= packet.count - at - 4, packet[at + 4] & 0x80 == 0 else { return false }
            at += 4 + n
        }
        return at == packet.count
    }

    /// Length-prefixed NAL units to start-code ones. 4-byte lengths become `00 00 00 01` in
    /// the packet itself (same size); 1 and 2 make a new buffer. `truncated` when a length
    /// ran past the end (the NAL units before it are kept).
    static func splitLengthPrefixed(_ packet: inout [UInt8], lengthSize: Int) -> (nals: [NALUnit], truncated: Bool) {
        var ranges: [(header: Int, end: Int)] = []
        var truncated = false
        var at = 0
        var outSize = 0
        while at + lengthSize <= packet.count {
            var n = 0
            for i in 0..<lengthSize { n = n << 8 | Int(packet[at + i]) }
            let body = at + lengthSize
            guard n <= packet.count - body else {
                truncated = true
                break
            }
            if n > 0 { ranges.append((body, body + n)) }
            outSize += 4 + n
            at = body + n
        }
        if at < packet.count { truncated = true }  // bytes after the last whole NAL unit
        var wire: [UInt8]
        var headers: [Int] = []
        if lengthSize == 4 {
            for r in ranges {
                packet[r.header - 4] = 0; packet[r.header - 3] = 0; packet[r.header - 2] = 0; packet[r.header - 1] = 1
                headers.append(r.header)
            }
            wire = packet
        } else {
            wire = []
            wire.reserveCapacity(outSize)
            for r in ranges {
                wire.append(contentsOf: [0, 0, 0, 1])
                headers.append(wire.count)
                wire.append(contentsOf: packet[r.header..<r.end])
            }
        }
        // Each NAL unit's wire runs from its start code to the next one's.
        var nals: [NALUnit] = []
        nals.reserveCapacity(ranges.count)
        for (i, header) in headers.enumerated() {
            let start = header - 4
            let end = i + 1 < headers.count ? headers[i + 1] - 4 : (lengthSize == 4 ? ranges[i].end : wire.count)
            var payloadEnd = end
            while payloadEnd > header + 1 && wire[payloadEnd - 1] == 0 { payloadEnd -= 1 }
            nals.append(NALUnit(wire: wire[start..<end], headerIndex: header, payloadEnd: payloadEnd))
        }
        return (nals, truncated)
    }

    /// NAL units of an Annex-B buffer, cut at each start code (`00 00 01`, after any zeros),
    /// bytes shared. Anything before the first start code is not a NAL unit and is left out.
    /// Start codes are found by their pairs of zeros (`StartCodeSearch`, as `AnnexBScanner`
    /// finds them): a byte loop in Swift was a quarter of the CPU of demuxing an MPEG-TS file,
    /// a `memchr` for their 01 bytes a tenth.
    static func splitAnnexB(_ bytes: ArraySlice<UInt8>) -> [NALUnit] {
        let origin = bytes.startIndex
        var starts: [Int] = []  // index of the first zero of each start code
        var headers: [Int] = []
        bytes.withUnsafeBufferPointer { buf in
            guard let base = buf.baseAddress, buf.count >= 3 else { return }
            var from = 2
            while let one = StartCodeSearch.next(in: base, from: from, count: buf.count) {
                var first = one - 2
                let floor = (headers.last ?? origin) - origin
                while first > floor && buf[first - 1] == 0 { first -= 1 }
                starts.append(origin + first)
                headers.append(origin + one + 1)
                from = one + 1
            }
        }
        let end = bytes.endIndex
        var nals: [NALUnit] = []
        nals.reserveCapacity(headers.count)
        for (k, header) in headers.enumerated() where header < end {
            let stop = k + 1 < starts.count ? starts[k + 1] : end
            guard header < stop else { continue }
            var payloadEnd = stop
            while payloadEnd > header + 1 && bytes[payloadEnd - 1] == 0 { payloadEnd -= 1 }
            // A header byte of zero is no NAL unit (padding between start codes).
            guard bytes[header] != 0 || payloadEnd > header + 1 else { continue }
            nals.append(NALUnit(wire: bytes[starts[k]..<stop], headerIndex: header, payloadEnd: payloadEnd))
        }
        return nals
    }
}

/// Extradata or a packet that cannot be made Annex-B, in one line.
public struct PackagerError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
