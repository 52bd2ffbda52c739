import Media

/// The fields of a picture parameter set (H.264 7.3.2.2) that slice headers depend on.
public struct PictureParameterSet: Sendable, Hashable {
    public var id: Int
    public var spsId: Int
    public var entropyCodingModeCABAC: Bool
    /// bottom_field_pic_order_in_frame_present_flag: slice headers carry delta_pic_order_cnt_bottom.
    public var bottomFieldPicOrderInFramePresent: Bool
    public var numSliceGroups: Int
    public var numRefIdxL0DefaultActive: Int
    public var numRefIdxL1DefaultActive: Int
    public var weightedPred: Bool
    public var weightedBipredIdc: Int
    public var picInitQp: Int
    public var deblockingFilterControlPresent: Bool
    public var constrainedIntraPred: Bool
    /// redundant_pic_cnt_present_flag: slice headers carry redundant_pic_cnt.
    public var redundantPicCntPresent: Bool

    public init(_ nal: NALUnit) throws {
        guard nal.type == .pps else { throw BitstreamError.outOfRange(field: "nal_unit_type", value: Int64(nal.type.rawValue)) }
        try self.init(rbsp: nal.rbsp())
    }

    /// The pic_parameter_set_id alone, from the first bytes of a PPS NAL unit.
    public static func peekId(_ nal: NALUnit) throws -> Int {
        var r = BitReader(nal.rbspPrefix(8))
        return try r.ue("pic_parameter_set_id", max: 255)
    }

    public init(rbsp: [UInt8]) throws {
        var r = BitReader(rbsp)
        id = try r.ue("pic_parameter_set_id", max: 255)
        spsId = try r.ue("seq_parameter_set_id", max: 31)
        entropyCodingModeCABAC = try r.flag("entropy_coding_mode_flag")
        bottomFieldPicOrderInFramePresent = try r.flag("bottom_field_pic_order_in_frame_present_flag")
        numSliceGroups = 1 + (try r.ue("num_slice_groups_minus1", max: 7))
        if numSliceGroups > 1 {
            let mapType = try r.ue("slice_group_map_type", max: 6)
            switch mapType {
            case 0:
                for _ in 0..<numSliceGroups { _ = try r.ue("run_length_minus1") }
            case 2:
                for _ in 0..<(numSliceGroups - 1) {
                    _ = try r.ue("top_left")
                    _ = try r.ue("bottom_right")
                }
            case 3, 4, 5:
                try r.skip(1, "slice_group_change_direction_flag")
                _ = try r.ue("slice_group_change_rate_minus1")
            case 6:
                let units = 1 + (try r.ue("pic_size_in_map_units_minus1", max: 1 << 20))
                let bitsPerId = Int.bitWidth - (numSliceGroups - 1).leadingZeroBitCount
                try r.skip(units * bitsPerId, "slice_group_id")
            default:
                break
            }
        }
        numRefIdxL0DefaultActive = 1 + (try r.ue("num_ref_idx_l0_default_active_minus1", max: 31))
        numRefIdxL1DefaultActive = 1 + (try r.ue("num_ref_idx_l1_default_active_minus1", max: 31))
        weightedPred = try r.flag("weighted_pred_flag")
        weightedBipredIdc = Int(try r.bits(2, "weighted_bipred_idc"))
        picInitQp = 26 + Int(try r.se("pic_init_qp_minus26"))
        _ = try r.se("pic_init_qs_minus26")
        _ = try r.se("chroma_qp_index_offset")
        deblockingFilterControlPresent = try r.flag("deblocking_filter_control_present_flag")
        constrainedIntraPred = try r.flag("constrained_intra_pred_flag")
        redundantPicCntPresent = try r.flag("redundant_pic_cnt_present_flag")
    }
}
