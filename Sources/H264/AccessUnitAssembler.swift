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
/// The assembler keeps the parameter sets it has seen, so it can parse slice headers and
/// hand each access unit the SPS and PPS that are active for it.
public struct AccessUnitAssembler {
    /// Parameter sets by id (SPS 0...31, PPS 0...255): the NAL unit (to resend) and its fields.
    private var spsById = [(nal: NALUnit, sps: SequenceParameterSet)?](repeating: nil, count: 32)
    private var ppsById = [(nal: NALUnit, pps: PictureParameterSet)?](repeating: nil, count: 256)

    /// The last SPS seen with this id.
    public func sps(id: Int) -> SequenceParameterSet? { spsById.indices.contains(id) ? spsById[id]?.sps : nil }
    /// The last PPS seen with this id.
    public func pps(id: Int) -> PictureParameterSet? { ppsById.indices.contains(id) ? ppsById[id]?.pps : nil }
    /// The SPS of the last picture (for the resolution and the frame rate).
    public private(set) var activeSPS: SequenceParameterSet?
    /// SPS, PPS and slice headers that could not be parsed (the NAL units still pass through).
    public private(set) var parseErrors = 0
    /// The last parse error, for a log line.
    public private(set) var lastParseError: BitstreamError?

    private var current: [NALUnit] = []
    private var sawVCL = false
    private var isIDR = false
    private var timestamp: StreamTimestamp?
    private var lastSlice: SliceHeader?
    private var activePPSId: Int?
    /// Set by end of sequence / end of stream: whatever comes next opens a new access unit.
    private var closeBeforeNext = false

    public init() {}

    /// Adds the next NAL unit; returns the access unit it completed, if any.
    public mutating func push(_ nal: NALUnit) -> AccessUnit? {
        let type = nal.type
        var completed: AccessUnit? = nil
        if closeBeforeNext && type != .endOfSequence && type != .endOfStream {
            completed = close()
            closeBeforeNext = false
        }
        switch type.rawValue {
        case 6, 7, 8, 9, 14...18:
            if sawVCL { completed = close() }
            switch type {
            case .sps: store(sps: nal)
            case .pps: store(pps: nal)
            case .sei: if timestamp == nil, let ts = StreamTimestamp(sei: nal) { timestamp = ts }
            default: break
            }
            current.append(nal)
        case 1, 2, 5:
            var startsPicture = false
            switch readSlice(nal) {
            case .header(let slice):
                if let last = lastSlice {
                    startsPicture = slice.startsNewPicture(after: last)
                } else {
                    startsPicture = slice.firstMbInSlice == 0
                }
                lastSlice = slice
                if !sawVCL || startsPicture { activePPSId = slice.ppsId }
            case .firstMacroblock(let firstMb, let ppsId):
                // Parameter sets missing (joined mid-stream): a picture starts at macroblock 0.
                startsPicture = firstMb == 0
                lastSlice = nil
                if !sawVCL || startsPicture { activePPSId = ppsId }
            case .unreadable:
                break
            }
            if sawVCL && startsPicture { completed = close() }
            if type == .idrSlice { isIDR = true }
            sawVCL = true
            current.append(nal)
        case 10, 11:
            current.append(nal)
            closeBeforeNext = true
        default:
            // Slice data partitions B and C, filler data, extensions, unspecified types:
            // they belong to the picture they follow.
            current.append(nal)
        }
        return completed
    }

    /// The access unit in progress at the end of the stream, if any.
    public mutating func finish() -> AccessUnit? {
        closeBeforeNext = false
        return close()
    }

    /// The SPS and PPS NAL units a decoder needs to start at a picture using PPS `ppsId`.
    public func parameterSets(forPPS ppsId: Int) -> [NALUnit] {
        guard let pps = ppsById[ppsId] else { return [] }
        guard let sps = spsById[pps.pps.spsId] else { return [pps.nal] }
        return [sps.nal, pps.nal]
    }

    private mutating func close() -> AccessUnit? {
        guard !current.isEmpty else { return nil }
        var resolution: Resolution? = nil
        var sets: [NALUnit] = []
        if let ppsId = activePPSId, let pps = ppsById[ppsId] {
            if let sps = spsById[pps.pps.spsId] {
                activeSPS = sps.sps
                resolution = sps.sps.resolution
            }
            sets = parameterSets(forPPS: ppsId)
        } else if let sps = activeSPS {
            resolution = sps.resolution
        }
        let unit = AccessUnit(nalUnits: current, isIDR: isIDR, resolution: resolution, timestamp: timestamp, parameterSets: sets)
        current = []
        sawVCL = false
        isIDR = false
        timestamp = nil
        activePPSId = nil
        return unit
    }

    private mutating func store(sps nal: NALUnit) {
        do {
            let sps = try SequenceParameterSet(nal)
            spsById[sps.id] = (nal, sps)
        } catch {
            noteError(error)
        }
    }

    private mutating func store(pps nal: NALUnit) {
        do {
            let pps = try PictureParameterSet(nal)
            ppsById[pps.id] = (nal, pps)
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
        case unreadable
    }

    /// Reads a slice header: whole when its parameter sets are known, else only its first
    /// fields. A slice header fits in the first few dozen bytes: the rest stays escaped.
    private mutating func readSlice(_ nal: NALUnit) -> SliceInfo {
        let rbsp = nal.rbspPrefix(48)
        do {
            let peek = try SliceHeader.peekPPSId(rbsp: rbsp)
            guard let pps = ppsById[peek.ppsId], let sps = spsById[pps.pps.spsId] else {
                return .firstMacroblock(peek.firstMb, ppsId: peek.ppsId)
            }
            return .header(try SliceHeader(rbsp: rbsp, header: nal.header, sps: sps.sps, pps: pps.pps))
        } catch {
            noteError(error)
            return .unreadable
        }
    }
}
