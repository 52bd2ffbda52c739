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
    /// memory_management_control_operation 5 in dec_ref_pic_marking(): all reference
    /// pictures are dropped and picture order counts start over after this picture, as after
    /// an IDR. False when the header ends before dec_ref_pic_marking() (a truncated read), or
    /// when it was not asked for (`readsMemoryManagement`). Not part of `==`: it does not
    /// decide where a picture begins.
    public var memoryManagementReset = false

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

    /// Parses a slice header from the slice NAL unit's RBSP (types 1, 2 and 5). The parameter
    /// sets are borrowed: an initializer owns its arguments otherwise, and each slice read
    /// copied the assembler's SPS to pass it. `readsMemoryManagement: false` stops after
    /// redundant_pic_cnt, at the fields that decide where a picture begins: the assembler
    /// reads every slice's header for that alone, and the rest of the header up to
    /// dec_ref_pic_marking() (`memoryManagementReset`) is as much code again, run each time.
    public init(rbsp: ArraySlice<UInt8>, header: NALHeader, sps: borrowing SequenceParameterSet, pps: borrowing PictureParameterSet,
                readsMemoryManagement: Bool = true) throws {
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
        guard readsMemoryManagement else { return }
        memoryManagementReset = (try? Self.readMemoryManagementReset(&r, header: header, sliceType: sliceType, sps: sps, pps: pps)) ?? false
    }

    /// Reads on from the end of the fields above through ref_pic_list_modification() and
    /// pred_weight_table() to dec_ref_pic_marking() (7.3.3.1-7.3.3.3): is there an MMCO 5?
    private static func readMemoryManagementReset(
        _ r: inout BitReader, header: NALHeader, sliceType: Int, sps: SequenceParameterSet, pps: PictureParameterSet
    ) throws -> Bool {
        let kind = sliceType % 5  // 0 P, 1 B, 2 I, 3 SP, 4 SI
        let isB = kind == 1
        let isP = kind == 0 || kind == 3
        var refL0 = pps.numRefIdxL0DefaultActive
        var refL1 = pps.numRefIdxL1DefaultActive
        if isB { try r.skip(1, "direct_spatial_mv_pred_flag") }
        if isP || isB {
            if try r.flag("num_ref_idx_active_override_flag") {
                refL0 = 1 + (try r.ue("num_ref_idx_l0_active_minus1", max: 31))
                if isB { refL1 = 1 + (try r.ue("num_ref_idx_l1_active_minus1", max: 31)) }
            }
        }
        // ref_pic_list_modification()
        if kind != 2 && kind != 4 {
            for _ in 0..<(isB ? 2 : 1) where try r.flag("ref_pic_list_modification_flag") {
                var count = 0
                while true {
                    let idc = try r.ue("modification_of_pic_nums_idc", max: 5)
                    if idc == 3 { break }
                    _ = try r.ue("abs_diff_pic_num_minus1 or long_term_pic_num")
                    count += 1
                    guard count <= 66 else { throw BitstreamError.outOfRange(field: "modification_of_pic_nums_idc", value: Int64(count)) }
                }
            }
        }
        // pred_weight_table()
        if (pps.weightedPred && isP) || (pps.weightedBipredIdc == 1 && isB) {
            _ = try r.ue("luma_log2_weight_denom", max: 7)
            let chroma = sps.chromaArrayType != 0
            if chroma { _ = try r.ue("chroma_log2_weight_denom", max: 7) }
            for count in (isB ? [refL0, refL1] : [refL0]) {
                for _ in 0..<count {
                    if try r.flag("luma_weight_flag") {
                        _ = try r.se("luma_weight")
                        _ = try r.se("luma_offset")
                    }
                    if chroma, try r.flag("chroma_weight_flag") {
                        for _ in 0..<4 { _ = try r.se("chroma_weight/offset") }
                    }
                }
            }
        }
        // dec_ref_pic_marking()
        guard header.refIdc != 0 else { return false }
        if header.type == .idrSlice { return false }  // no_output_of_prior_pics_flag, long_term_reference_flag
        guard try r.flag("adaptive_ref_pic_marking_mode_flag") else { return false }
        for _ in 0..<100 {
            let op = try r.ue("memory_management_control_operation", max: 6)
            switch op {
            case 0: return false
            case 5: return true
            case 1, 2, 6: _ = try r.ue("difference_of_pic_nums_minus1 / long_term_pic_num / long_term_frame_idx")
            case 3:
                _ = try r.ue("difference_of_pic_nums_minus1")
                _ = try r.ue("long_term_frame_idx")
            default: _ = try r.ue("max_long_term_frame_idx_plus1")  // 4
            }
        }
        return false
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
