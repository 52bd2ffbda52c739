import Media

/// Picture order counts (H.264 8.2.1): the order in which a decoder outputs pictures that
/// were coded out of it (B-frames), read from slice headers. nalcast's own streams need
/// none of this (no B-frames: the timestamp SEI's time is both decode and presentation
/// time); other encoders' streams (the conformance streams) do, to give a container the
/// presentation time of each picture.
///
/// Feed it the first slice header of each primary picture (frame or field), in decode
/// order, with its SPS. Pure.
public struct PictureOrderCounter: Sendable {
    /// One picture's counts.
    public struct Picture: Sendable, Equatable {
        /// TopFieldOrderCnt and BottomFieldOrderCnt; a field has only its own.
        public var top: Int?
        public var bottom: Int?
        /// True for an IDR picture or one with memory_management_control_operation 5:
        /// the counts start over after it, and every earlier picture is output before it.
        public var startsOver: Bool

        /// PicOrderCnt(): the smaller of a frame's two, a field's own.
        public var value: Int { min(top ?? .max, bottom ?? .max) }
    }

    // pic_order_cnt_type 0: the previous reference picture's counts.
    private var prevMsb = 0
    private var prevLsb = 0
    private var prevRefReset = false
    private var prevRefBottomField = false
    private var prevRefTopAfterReset = 0
    // pic_order_cnt_type 1 and 2: the previous picture's frame numbers.
    private var prevFrameNumOffset = 0
    private var prevFrameNum = 0
    private var prevReset = false

    public init() {}

    public mutating func next(_ h: SliceHeader, sps: SequenceParameterSet) -> Picture {
        let counts = sps.picOrderCntType == 0 ? type0(h, sps: sps) : fromFrameNumbers(h, sps: sps)
        return Picture(top: counts.top, bottom: counts.bottom, startsOver: h.isIDR || h.memoryManagementReset)
    }

    /// A frame's two counts from one value each, a field's own (8.2.1.1 to 8.2.1.3 end so).
    private static func place(_ h: SliceHeader, top: Int, bottom: Int) -> (top: Int?, bottom: Int?) {
        if !h.fieldPic { return (top, bottom) }
        return h.bottomField == true ? (nil, bottom) : (top, nil)
    }

    /// pic_order_cnt_type 0 (8.2.1.1): the counts' low bits are in the slice header, the
    /// high bits follow from the previous reference picture's.
    private mutating func type0(_ h: SliceHeader, sps: SequenceParameterSet) -> (top: Int?, bottom: Int?) {
        let maxLsb = 1 << sps.log2MaxPicOrderCntLsb
        if h.isIDR {
            prevMsb = 0
            prevLsb = 0
        } else if prevRefReset {
            prevMsb = 0
            prevLsb = prevRefBottomField ? 0 : prevRefTopAfterReset
        }
        let lsb = Int(h.picOrderCntLsb ?? 0)
        let msb: Int
        if lsb < prevLsb && prevLsb - lsb >= maxLsb / 2 {
            msb = prevMsb + maxLsb
        } else if lsb > prevLsb && lsb - prevLsb > maxLsb / 2 {
            msb = prevMsb - maxLsb
        } else {
            msb = prevMsb
        }
        let counts = Self.place(h, top: msb + lsb, bottom: msb + lsb + (h.fieldPic ? 0 : Int(h.deltaPicOrderCntBottom ?? 0)))
        if h.nalRefIdc != 0 {
            let reset = h.memoryManagementReset
            prevRefReset = reset
            prevRefBottomField = h.fieldPic && h.bottomField == true
            if reset {
                let t = counts.top ?? 0
                prevRefTopAfterReset = h.fieldPic ? 0 : t - min(t, counts.bottom ?? t)
            } else {
                prevMsb = msb
                prevLsb = lsb
            }
        }
        return counts
    }

    /// pic_order_cnt_type 1 and 2 (8.2.1.2, 8.2.1.3): the counts follow from frame numbers.
    private mutating func fromFrameNumbers(_ h: SliceHeader, sps: SequenceParameterSet) -> (top: Int?, bottom: Int?) {
        let maxFrameNum = 1 << sps.log2MaxFrameNum
        let frameNum = Int(h.frameNum)
        let frameNumOffset: Int
        if h.isIDR {
            frameNumOffset = 0
        } else {
            let previous = prevReset ? 0 : prevFrameNumOffset
            frameNumOffset = prevFrameNum > frameNum ? previous + maxFrameNum : previous
        }
        let counts = sps.picOrderCntType == 1 ? Self.type1(h, sps: sps, frameNumOffset: frameNumOffset)
                                               : Self.type2(h, frameNumOffset: frameNumOffset)
        let reset = h.memoryManagementReset
        prevFrameNumOffset = frameNumOffset
        prevFrameNum = reset ? 0 : frameNum
        prevReset = reset
        return counts
    }

    /// pic_order_cnt_type 1: an expected count from the SPS's cycle of offsets, and the
    /// slice header's deltas from it.
    private static func type1(_ h: SliceHeader, sps: SequenceParameterSet, frameNumOffset: Int) -> (top: Int?, bottom: Int?) {
        let isRef = h.nalRefIdc != 0
        let cycle = sps.offsetsForRefFrame.count
        var absFrameNum = cycle != 0 ? frameNumOffset + Int(h.frameNum) : 0
        if !isRef && absFrameNum > 0 { absFrameNum -= 1 }
        var expected = 0
        if absFrameNum > 0 {
            let perCycle = sps.offsetsForRefFrame.reduce(0) { $0 + Int($1) }
            let cycles = (absFrameNum - 1) / cycle
            let inCycle = (absFrameNum - 1) % cycle
            expected = cycles * perCycle
            for i in 0...inCycle { expected += Int(sps.offsetsForRefFrame[i]) }
        }
        if !isRef { expected += Int(sps.offsetForNonRefPic) }
        let d0 = Int(h.deltaPicOrderCnt.0 ?? 0)
        let d1 = Int(h.deltaPicOrderCnt.1 ?? 0)
        let toBottom = Int(sps.offsetForTopToBottomField)
        if h.fieldPic { return place(h, top: expected + d0, bottom: expected + toBottom + d0) }
        return (expected + d0, expected + d0 + toBottom + d1)
    }

    /// pic_order_cnt_type 2: output order is decode order.
    private static func type2(_ h: SliceHeader, frameNumOffset: Int) -> (top: Int?, bottom: Int?) {
        let temp = h.isIDR ? 0 : 2 * (frameNumOffset + Int(h.frameNum)) - (h.nalRefIdc != 0 ? 0 : 1)
        return place(h, top: temp, bottom: temp)
    }
}

/// The order facts of each access unit, for a container writer: where it goes in
/// presentation order (`key`, comparable within one run of pictures between two
/// `startsOver`), and whether it is a field (a complementary field pair is two access
/// units, presented as one frame).
///
/// Keeps the parameter sets it has seen (carried in the access units, or in
/// `AccessUnit.parameterSets`). Used by one thread; pure.
public struct AccessUnitOrder: PictureOrder {
    public typealias Info = PictureOrderInfo

    private var spsById: [Int: SequenceParameterSet] = [:]
    private var ppsById: [Int: PictureParameterSet] = [:]
    private var counter = PictureOrderCounter()
    /// The first field waiting for its second: frame_num, parity, its key.
    private var openField: (frameNum: UInt32, bottom: Bool, key: Int)?

    public init() {}

    /// Keeps the SPS and PPS among `nalUnits`.
    private mutating func remember(_ nalUnits: [NALUnit]) {
        for nal in nalUnits {
            if nal.type == .sps, let sps = try? SequenceParameterSet(nal) {
                spsById[sps.id] = sps
            } else if nal.type == .pps, let pps = try? PictureParameterSet(nal) {
                ppsById[pps.id] = pps
            }
        }
    }

    /// The order facts of the next access unit in decode order; nil when its slice header
    /// cannot be read (no parameter sets yet, a damaged header).
    public mutating func info(for unit: AccessUnit) -> Info? {
        remember(unit.nalUnits)
        guard let slice = unit.nalUnits.first(where: { $0.type == .slice || $0.type == .idrSlice }) else { return nil }
        let rbsp = slice.rbspPrefix(512)
        guard let peek = try? SliceHeader.peekPPSId(rbsp: rbsp) else { return nil }
        if ppsById[peek.ppsId].flatMap({ spsById[$0.spsId] }) == nil { remember(unit.parameterSets) }
        guard let pps = ppsById[peek.ppsId], let sps = spsById[pps.spsId],
              let header = try? SliceHeader(rbsp: rbsp, header: slice.header, sps: sps, pps: pps)
        else { return nil }
        let picture = counter.next(header, sps: sps)
        if !header.fieldPic {
            openField = nil
            return Info(key: 2 * picture.value, startsOver: picture.startsOver, structure: .frame)
        }
        let bottom = header.bottomField == true
        if let first = openField, first.frameNum == header.frameNum, first.bottom != bottom {
            // The second field of a pair (even if coded as an IDR field: one picture).
            openField = nil
            return Info(key: first.key + 1, startsOver: false, structure: .secondField)
        }
        let key = 2 * picture.value
        openField = (header.frameNum, bottom, key)
        return Info(key: key, startsOver: picture.startsOver, structure: .firstField)
    }
}
