import Media

/// Groups NAL units into access units (H.264 7.4.1.2.3 and 7.4.1.2.4), one call at a time:
/// `push(nal)` returns the access unit that `nal` completed, if any; `finish()` returns the
/// last one.
///
/// - An AUD, SPS, PPS, SEI or a NAL unit of type 14 to 18 after a picture's slices begins a
///   new access unit.
/// - The first VCL NAL unit of a new primary coded picture begins one, found by comparing
///   its slice header with the previous slice's (frame_num, pic_parameter_set_id,
///   field_pic_flag, bottom_field_flag, nal_ref_idc, picture order count, IdrPicFlag,
///   idr_pic_id).
/// - End of sequence and end of stream belong to the access unit before them.
///
/// Whether a NAL unit begins a new access unit shows in its first bytes: its header, and
/// for a slice the start of its slice header. A reader of a live stream need not wait for
/// such a NAL unit to end: it asks `beginsAccessUnit(head:isWhole:)` with the bytes it has,
/// takes the completed access unit with `endAccessUnit()` when the answer is yes, and later
/// adds the whole NAL unit with `append(_:)` (not `push`, which would ask again).
///
/// An access unit with no picture whose NAL units are only AUDs, end of sequence, end of
/// stream, filler data and empty SEIs is not handed out: it is the tail of a delimited
/// stream (the AUD sent behind the last picture with the SEI it began, `AccessUnitDelimiting`,
/// and the end of sequence that ends it, or just the trailer where the stream was cut), with
/// nothing to decode. It is counted in `delimiterOnlyUnits`, and `endedStream` says whether
/// it ended the stream, as for any access unit.
///
/// The assembler keeps the parameter sets it has seen, so it can parse slice headers and
/// hand each access unit the SPS and PPS that are active for it.
public struct AccessUnitAssembler {
    /// Parameter sets by id (SPS 0...31, PPS 0...255): the NAL unit (to resend) and its fields,
    /// in an immutable entry that every slice header read and every access unit shares (one
    /// reference taken, the fields not copied). Each NAL unit is kept in storage of its own
    /// (`NALUnit.detached()`): a parameter set kept for seconds must not keep the whole read
    /// chunk it came in alive with it.
    private var spsById = [StoredSPS?](repeating: nil, count: 32)
    private var ppsById = [StoredPPS?](repeating: nil, count: 256)

    /// The last SPS seen with this id.
    public func sps(id: Int) -> SequenceParameterSet? { spsById.indices.contains(id) ? spsById[id]?.fields : nil }
    /// The last PPS seen with this id.
    public func pps(id: Int) -> PictureParameterSet? { ppsById.indices.contains(id) ? ppsById[id]?.fields : nil }
    /// The SPS of the last picture (for the resolution and the frame rate).
    public var activeSPS: SequenceParameterSet? { activeSPSEntry?.fields }
    private var activeSPSEntry: StoredSPS?
    /// The parameter sets the last access unit was handed (`AccessUnit.parameterSets`), and
    /// the entries they came from: the next access unit with the same ones shares the array.
    private var lastSets: HandedSets?
    /// SPS, PPS and slice headers that could not be parsed (the NAL units still pass through).
    public private(set) var parseErrors = 0
    /// The last parse error, for a log line.
    public private(set) var lastParseError: BitstreamError?
    /// Wire bytes of the NAL units in the access unit in hand (not yet complete).
    public var bytesInHand: Int { current.reduce(0) { $0 + $1.wire.count } }
    /// NAL units in the access unit in hand.
    public var nalUnitsInHand: Int { current.count }
    /// True when the access unit in hand has a NAL unit other than an AUD, end of sequence,
    /// end of stream, filler data or an empty SEI (or, with only redundant slices, a PPS or
    /// such a slice): something that would be lost if the stream stopped here.
    public var hasContentInHand: Bool {
        // A primary picture's slice is content (`isNothingToDecode`): every picture's access
        // unit is answered here, without looking at its SEIs on each close.
        if sawPrimary { return true }
        for nal in current where !isNothingToDecode(nal) { return true }
        return false
    }
    /// Access units closed without handing them out: no picture, only AUDs, end of sequence,
    /// end of stream, filler data or empty SEIs (a delimited stream's tail, or its trailer
    /// where the stream was cut).
    public private(set) var delimiterOnlyUnits = 0
    /// Wire bytes of those access units, so that every byte in is accounted for.
    public private(set) var delimiterOnlyBytes = 0
    /// The last access unit closed (handed out or delimiter-only) ended with an end-of-sequence
    /// or end-of-stream NAL unit: the stream says it ended there.
    public private(set) var endedStream = false

    private var current: [NALUnit] = []
    /// NAL units the last access unit held: the next one's array starts that large, one
    /// allocation rather than one each time appending doubles it (an AUD, a SEI and three
    /// slices made four).
    private var lastCount = 0
    private var sawVCL = false
    /// A slice of a primary picture (redundant_pic_cnt 0, or a header not read) is in hand.
    private var sawPrimary = false
    private var isIDR = false
    private var timestamp: StreamTimestamp?
    private var lastSlice: SliceHeader?
    private var activePPSId: Int?
    /// Set by end of sequence / end of stream: whatever comes next opens a new access unit.
    private var closeBeforeNext = false

    /// RBSP bytes of a slice header read at most: the fields that matter come first.
    static let sliceHeaderBytes = 48

    public init() {}

    /// Adds the next NAL unit; returns the access unit it completed, if any.
    public mutating func push(_ nal: NALUnit) -> AccessUnit? {
        let type = nal.type
        let slice = Self.hasSliceHeader(type) ? readSlice(nal.header, nal.escapedPayload, isWhole: true) : nil
        let completed = begins(type, slice: slice) == true ? endAccessUnit() : nil
        add(nal, slice: slice)
        return completed
    }

    /// Whether the NAL unit whose body starts with `head` (its header byte, then its payload
    /// as escaped on the wire) begins a new access unit, so that the one in hand is complete.
    /// `head` may be the first bytes only: nil means they are too few to tell (a slice
    /// header cut short) and more are needed. `isWhole` says no more will come (the NAL unit
    /// ended there, or was dropped), so a short slice header is unreadable, not pending.
    ///
    /// Gives the same answer for any prefix long enough to answer as `push` would for the
    /// whole NAL unit, provided the bytes in `head` are the NAL unit's own: not zeros that
    /// may yet turn out to begin the next start code.
    public func beginsAccessUnit(head: ArraySlice<UInt8>, isWhole: Bool) -> Bool? {
        guard let first = head.first else { return isWhole ? false : nil }
        let header = NALHeader(first)
        let type = header.type
        var slice: SliceInfo? = nil
        if Self.hasSliceHeader(type) && sawVCL && !closeBeforeNext && !current.isEmpty {
            slice = readSlice(header, head.dropFirst(), isWhole: isWhole)
            if case .needMore = slice { return nil }
        }
        return begins(type, slice: slice)
    }

    /// Ends the access unit in hand and returns it (nil when there is none): after
    /// `beginsAccessUnit` said the next NAL unit begins a new one, or at the end of a stream.
    public mutating func endAccessUnit() -> AccessUnit? {
        closeBeforeNext = false
        return close()
    }

    /// Adds a NAL unit without asking whether it begins a new access unit: that was settled
    /// from its first bytes (`beginsAccessUnit`, then `endAccessUnit` if it did).
    public mutating func append(_ nal: NALUnit) {
        let slice = Self.hasSliceHeader(nal.type) ? readSlice(nal.header, nal.escapedPayload, isWhole: true) : nil
        add(nal, slice: slice)
    }

    /// The access unit in progress at the end of the stream, if any.
    public mutating func finish() -> AccessUnit? {
        endAccessUnit()
    }

    /// Nothing of it is decoded: an AUD, end of sequence, end of stream, filler data, an empty
    /// SEI; in an access unit with no primary picture, a PPS or a redundant slice too (the
    /// closing picture of a delimited stream, `ClosingPicture`).
    private func isNothingToDecode(_ nal: NALUnit) -> Bool {
        if Self.isDelimiting(nal.type) || AccessUnitDelimiting.isEmptySEI(nal) { return true }
        return sawVCL && !sawPrimary && (nal.type == .pps || Self.hasSliceHeader(nal.type))
    }

    /// AUD, end of sequence, end of stream, filler data: NAL units with nothing to decode.
    public static func isDelimiting(_ type: NALType) -> Bool { (9...12).contains(type.rawValue) }

    /// Types 1, 2 and 5: a slice header follows the NAL header.
    private static func hasSliceHeader(_ type: NALType) -> Bool {
        type == .slice || type == .sliceDataA || type == .idrSlice
    }

    /// Whether a NAL unit of `type` (with `slice`, its slice header when it has one) begins a
    /// new access unit. Never nil when `slice` is not `.needMore`.
    private func begins(_ type: NALType, slice: SliceInfo?) -> Bool? {
        guard !current.isEmpty else { return false }
        if closeBeforeNext { return type != .endOfSequence && type != .endOfStream }
        switch type.rawValue {
        case 6, 7, 8, 9, 14...18:
            return sawVCL
        case 1, 2, 5:
            guard sawVCL else { return false }
            switch slice {
            case .header(let header):
                if let last = lastSlice { return header.startsNewPicture(after: last) }
                return header.firstMbInSlice == 0
            case .firstMacroblock(let firstMb, _):
                // Parameter sets missing (joined mid-stream): a picture starts at macroblock 0.
                return firstMb == 0
            case .needMore:
                return nil
            case .unreadable, nil:
                return false
            }
        default:
            // Slice data partitions B and C, filler data, extensions, unspecified types,
            // end of sequence and end of stream: they belong to the picture they follow.
            return false
        }
    }

    /// Adds `nal` to the access unit in hand (its boundary settled already).
    private mutating func add(_ nal: NALUnit, slice: SliceInfo?) {
        let type = nal.type
        switch type.rawValue {
        case 6, 7, 8, 9, 14...18:
            switch type {
            case .sps: store(sps: nal)
            case .pps: store(pps: nal)
            case .sei: if timestamp == nil, let ts = StreamTimestamp(sei: nal) { timestamp = ts }
            default: break
            }
        case 1, 2, 5:
            switch slice {
            case .header(let header):
                lastSlice = header
                if !sawVCL { activePPSId = header.ppsId }
                if header.redundantPicCnt == 0 { sawPrimary = true }
            case .firstMacroblock(_, let ppsId):
                lastSlice = nil
                if !sawVCL { activePPSId = ppsId }
            case .unreadable(let error):
                noteError(error)
            case .needMore, nil:
                break
            }
            if type == .idrSlice { isIDR = true }
            if case .header = slice {} else { sawPrimary = true }
            sawVCL = true
        case 10, 11:
            closeBeforeNext = true
        default:
            break
        }
        if current.isEmpty { current.reserveCapacity(max(lastCount, 4)) }
        current.append(nal)
    }

    /// The SPS and PPS NAL units a decoder needs to start at a picture using PPS `ppsId`.
    public func parameterSets(forPPS ppsId: Int) -> [NALUnit] {
        guard let pps = ppsById[ppsId] else { return [] }
        guard let sps = spsById[pps.fields.spsId] else { return [pps.nal] }
        return [sps.nal, pps.nal]
    }

    /// `parameterSets(forPPS:)` for the entries `pps` and `sps` (the one its `spsId` names
    /// now, if any): the array handed to the last access unit when they are the same entries.
    private mutating func handedSets(pps: StoredPPS, sps: StoredSPS?) -> [NALUnit] {
        if let last = lastSets, last.pps === pps, last.sps === sps { return last.sets }
        let sets = sps.map { [$0.nal, pps.nal] } ?? [pps.nal]
        lastSets = HandedSets(sps: sps, pps: pps, sets: sets)
        return sets
    }

    private mutating func close() -> AccessUnit? {
        guard !current.isEmpty else { return nil }
        endedStream = current.last.map { $0.type == .endOfStream || $0.type == .endOfSequence } ?? false
        if !hasContentInHand {
            delimiterOnlyUnits += 1
            delimiterOnlyBytes += bytesInHand
            current = []
            sawVCL = false
            sawPrimary = false
            isIDR = false
            timestamp = nil
            activePPSId = nil
            lastSlice = nil
            return nil
        }
        var resolution: Resolution? = nil
        var sets: [NALUnit] = []
        if let ppsId = activePPSId, let pps = ppsById[ppsId] {
            let sps = spsById[pps.fields.spsId]
            if let sps {
                activeSPSEntry = sps
                resolution = sps.fields.resolution
            }
            sets = handedSets(pps: pps, sps: sps)
        } else if let sps = activeSPSEntry {
            resolution = sps.fields.resolution
        }
        let unit = AccessUnit(codec: H264Codec(), nalUnits: current, isIDR: isIDR, resolution: resolution, timestamp: timestamp, parameterSets: sets)
        lastCount = current.count
        current = []
        sawVCL = false
        sawPrimary = false
        isIDR = false
        timestamp = nil
        activePPSId = nil
        return unit
    }

    private mutating func store(sps nal: NALUnit) {
        do {
            let sps = try SequenceParameterSet(nal)
            spsById[sps.id] = StoredSPS(nal: nal.detached(), fields: sps)
        } catch {
            noteError(error)
        }
    }

    private mutating func store(pps nal: NALUnit) {
        do {
            let pps = try PictureParameterSet(nal)
            ppsById[pps.id] = StoredPPS(nal: nal.detached(), fields: pps)
        } catch {
            noteError(error)
        }
    }

    private mutating func noteError(_ error: Error) {
        parseErrors += 1
        lastParseError = error as? BitstreamError
    }

    private enum SliceInfo {
        case header(SliceHeader)
        case firstMacroblock(Int, ppsId: Int)
        case unreadable(Error)
        /// Cut short, and more bytes will come.
        case needMore
    }

    /// Reads a slice header from its escaped bytes (all of them or the first ones): whole
    /// when its parameter sets are known, else only its first fields. A slice header fits in
    /// the first few dozen bytes: only those are unescaped. Running out of bytes is
    /// `.needMore` unless `isWhole` or those few dozen bytes were all there.
    private func readSlice(_ header: NALHeader, _ escaped: ArraySlice<UInt8>, isWhole: Bool) -> SliceInfo {
        let rbsp = RBSP.unescapedPrefix(escaped, limit: Self.sliceHeaderBytes)
        let complete = isWhole || rbsp.count >= Self.sliceHeaderBytes
        do {
            let peek = try SliceHeader.peekPPSId(rbsp: rbsp)
            guard let pps = ppsById[peek.ppsId], let sps = spsById[pps.fields.spsId] else {
                return .firstMacroblock(peek.firstMb, ppsId: peek.ppsId)
            }
            return .header(try SliceHeader(rbsp: rbsp, header: header, sps: sps.fields, pps: pps.fields, readsMemoryManagement: false))
        } catch BitstreamError.truncated where !complete {
            return .needMore
        } catch {
            return .unreadable(error)
        }
    }
}

/// A parameter set the assembler keeps: its NAL unit and its fields, never changed (a new set
/// with the same id replaces the entry), so sharing it keeps the assembler a value.
private final class StoredParameterSet<Fields: Sendable>: Sendable {
    let nal: NALUnit
    let fields: Fields
    init(nal: NALUnit, fields: Fields) {
        self.nal = nal
        self.fields = fields
    }
}

private typealias StoredSPS = StoredParameterSet<SequenceParameterSet>
private typealias StoredPPS = StoredParameterSet<PictureParameterSet>

/// The parameter sets handed to an access unit and the entries they were made from.
private struct HandedSets {
    let sps: StoredSPS?
    let pps: StoredPPS
    let sets: [NALUnit]
}
