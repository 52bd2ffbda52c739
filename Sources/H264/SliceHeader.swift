/// A slice header (H.264 7.3.3) read up to the fields that decide where one primary coded
/// picture ends and the next begins (7.4.1.2.4).
public struct SliceHeader: Sendable, Hashable {
    public var nalType: NALType
    public var nalRefIdc: UInt8
    public var firstMbInSlice: Int
    public var sliceType: Int
    public var ppsId: Int
    public var frameNum: UInt32
    public var fieldPic = false
    /// nil when the slice is not a field (the flag is absent).
    public var bottomField: Bool?
    public var idrPicId: Int?
    public var picOrderCntLsb: UInt32?
    public var deltaPicOrderCntBottom: Int32?
    public var deltaPicOrderCnt: (Int32?, Int32?) = (nil, nil)
    public var redundantPicCnt = 0

    public var isIDR: Bool { nalType == .idrSlice }

    public static func == (a: Self, b: Self) -> Bool {
        a.nalType == b.nalType && a.nalRefIdc == b.nalRefIdc && a.firstMbInSlice == b.firstMbInSlice
            && a.sliceType == b.sliceType && a.ppsId == b.ppsId && a.frameNum == b.frameNum && a.fieldPic == b.fieldPic
            && a.bottomField == b.bottomField && a.idrPicId == b.idrPicId && a.picOrderCntLsb == b.picOrderCntLsb
            && a.deltaPicOrderCntBottom == b.deltaPicOrderCntBottom && a.deltaPicOrderCnt.0 == b.deltaPicOrderCnt.0
            && a.deltaPicOrderCnt.1 == b.deltaPicOrderCnt.1 && a.redundantPicCnt == b.redundantPicCnt
    }

    public func hash(into h: inout Hasher) {
        h.combine(frameNum)
        h.combine(ppsId)
        h.combine(firstMbInSlice)
    }

    /// Reads only first_mb_in_slice, slice_type and pic_parameter_set_id: enough to find
    /// which PPS (and so which SPS) the rest of the header needs.
    public static func peekPPSId(rbsp: ArraySlice<UInt8>) throws -> (firstMb: Int, sliceType: Int, ppsId: Int) {
        var r = BitReader(rbsp)
        let firstMb = Int(try r.ue("first_mb_in_slice"))
        let sliceType = try r.ue("slice_type", max: 9)
        let ppsId = try r.ue("pic_parameter_set_id", max: 255)
        return (firstMb, sliceType, ppsId)
    }

    /// Parses a slice header from the slice NAL unit's RBSP (types 1, 2 and 5).
    public init(rbsp: ArraySlice<UInt8>, header: NALHeader, sps: SequenceParameterSet, pps: PictureParameterSet) throws {
        var r = BitReader(rbsp)
        nalType = header.type
        nalRefIdc = header.refIdc
        firstMbInSlice = Int(try r.ue("first_mb_in_slice"))
        sliceType = try r.ue("slice_type", max: 9)
        ppsId = try r.ue("pic_parameter_set_id", max: 255)
        if sps.separateColourPlane { try r.skip(2, "colour_plane_id") }
        frameNum = try r.bits(sps.log2MaxFrameNum, "frame_num")
        if !sps.frameMbsOnly {
            fieldPic = try r.flag("field_pic_flag")
            if fieldPic { bottomField = try r.flag("bottom_field_flag") }
        }
        if header.type == .idrSlice { idrPicId = try r.ue("idr_pic_id", max: 65535) }
        if sps.picOrderCntType == 0 {
            picOrderCntLsb = try r.bits(sps.log2MaxPicOrderCntLsb, "pic_order_cnt_lsb")
            if pps.bottomFieldPicOrderInFramePresent && !fieldPic {
                deltaPicOrderCntBottom = try r.se("delta_pic_order_cnt_bottom")
            }
        }
        if sps.picOrderCntType == 1 && !sps.deltaPicOrderAlwaysZero {
            deltaPicOrderCnt.0 = try r.se("delta_pic_order_cnt[0]")
            if pps.bottomFieldPicOrderInFramePresent && !fieldPic {
                deltaPicOrderCnt.1 = try r.se("delta_pic_order_cnt[1]")
            }
        }
        if pps.redundantPicCntPresent { redundantPicCnt = try r.ue("redundant_pic_cnt", max: 127) }
    }

    /// True when `self` is the first VCL NAL unit of a new primary coded picture, given the
    /// previous VCL NAL unit's header (H.264 7.4.1.2.4).
    public func startsNewPicture(after previous: SliceHeader) -> Bool {
        if redundantPicCnt > 0 { return false }  // redundant pictures belong to the primary one
        if frameNum != previous.frameNum { return true }
        if ppsId != previous.ppsId { return true }
        if fieldPic != previous.fieldPic { return true }
        if let a = bottomField, let b = previous.bottomField, a != b { return true }
        if nalRefIdc != previous.nalRefIdc && (nalRefIdc == 0 || previous.nalRefIdc == 0) { return true }
        if picOrderCntLsb != previous.picOrderCntLsb || deltaPicOrderCntBottom != previous.deltaPicOrderCntBottom { return true }
        if deltaPicOrderCnt.0 != previous.deltaPicOrderCnt.0 || deltaPicOrderCnt.1 != previous.deltaPicOrderCnt.1 { return true }
        if isIDR != previous.isIDR { return true }
        if isIDR && previous.isIDR && idrPicId != previous.idrPicId { return true }
        return false
    }
}
