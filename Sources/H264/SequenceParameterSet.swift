import Media

/// The fields of a sequence parameter set (H.264 7.3.2.1.1) that nalcast needs: what the
/// picture is (profile, level, size, chroma, bit depth, interlacing), what slice headers
/// look like (frame_num and picture order count sizes), and the nominal frame rate.
public struct SequenceParameterSet: Sendable, Hashable {
    public var profileIdc: UInt8
    /// constraint_set0_flag .. constraint_set5_flag in the top six bits.
    public var constraintFlags: UInt8
    public var levelIdc: UInt8
    public var id: Int
    public var chromaFormatIdc: Int = 1
    public var separateColourPlane = false
    public var bitDepthLuma = 8
    public var bitDepthChroma = 8
    public var qpprimeYZeroTransformBypass = false
    /// seq_scaling_matrix_present_flag; the lists themselves are read and checked, not kept.
    public var scalingMatrixPresent = false
    public var log2MaxFrameNum: Int
    public var picOrderCntType: Int
    public var log2MaxPicOrderCntLsb = 0
    public var deltaPicOrderAlwaysZero = false
    /// pic_order_cnt_type 1: offset_for_non_ref_pic, offset_for_top_to_bottom_field and the
    /// expected deltas of one cycle of reference frames (8.2.1.2).
    public var offsetForNonRefPic: Int32 = 0
    public var offsetForTopToBottomField: Int32 = 0
    public var offsetsForRefFrame: [Int32] = []
    public var maxNumRefFrames: Int
    public var gapsInFrameNumAllowed: Bool
    public var widthInMbs: Int
    public var heightInMapUnits: Int
    public var frameMbsOnly: Bool
    public var mbAdaptiveFrameField = false
    public var direct8x8Inference: Bool
    public var crop: (left: Int, right: Int, top: Int, bottom: Int) = (0, 0, 0, 0)
    public var timing: Timing?

    /// VUI timing_info: the frame rate is time_scale / (2 × num_units_in_tick).
    public struct Timing: Sendable, Hashable {
        public var numUnitsInTick: UInt32
        public var timeScale: UInt32
        public var fixedFrameRate: Bool
        public var frameRate: Double? {
            numUnitsInTick == 0 ? nil : Double(timeScale) / (2 * Double(numUnitsInTick))
        }
    }

    /// Profiles whose SPS carries chroma_format_idc, bit depths and scaling lists.
    static let highProfiles: Set<UInt8> = [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135]

    /// ChromaArrayType (7.4.2.1.1).
    public var chromaArrayType: Int { separateColourPlane ? 0 : chromaFormatIdc }

    /// Width in luma samples after the cropping window.
    public var width: Int {
        let cropUnitX = chromaArrayType == 0 ? 1 : (chromaFormatIdc == 3 ? 1 : 2)
        return widthInMbs * 16 - cropUnitX * (crop.left + crop.right)
    }

    /// Height in luma samples after the cropping window (frames, not fields).
    public var height: Int {
        let subHeightC = chromaArrayType == 0 ? 1 : (chromaFormatIdc == 1 ? 2 : 1)
        let cropUnitY = subHeightC * (frameMbsOnly ? 1 : 2)
        let frameHeightInMbs = (frameMbsOnly ? 1 : 2) * heightInMapUnits
        return frameHeightInMbs * 16 - cropUnitY * (crop.top + crop.bottom)
    }

    public var resolution: Resolution { Resolution(width: width, height: height) }
    public var frameRate: Double? { timing?.frameRate }

    public static func == (a: Self, b: Self) -> Bool {
        a.profileIdc == b.profileIdc && a.constraintFlags == b.constraintFlags && a.levelIdc == b.levelIdc
            && a.id == b.id && a.chromaFormatIdc == b.chromaFormatIdc && a.width == b.width && a.height == b.height
            && a.log2MaxFrameNum == b.log2MaxFrameNum && a.picOrderCntType == b.picOrderCntType
            && a.log2MaxPicOrderCntLsb == b.log2MaxPicOrderCntLsb && a.frameMbsOnly == b.frameMbsOnly
            && a.timing == b.timing && a.bitDepthLuma == b.bitDepthLuma
    }

    public func hash(into h: inout Hasher) {
        h.combine(id)
        h.combine(width)
        h.combine(height)
    }

    /// Parses an SPS NAL unit.
    public init(_ nal: NALUnit) throws {
        guard nal.type == .sps else { throw BitstreamError.outOfRange(field: "nal_unit_type", value: Int64(nal.type.rawValue)) }
        try self.init(rbsp: nal.rbsp())
    }

    /// Parses the RBSP of an SPS (the bytes after the NAL header, unescaped).
    public init(rbsp: [UInt8]) throws {
        var r = BitReader(rbsp)
        profileIdc = UInt8(try r.bits(8, "profile_idc"))
        constraintFlags = UInt8(try r.bits(8, "constraint_set_flags"))
        levelIdc = UInt8(try r.bits(8, "level_idc"))
        id = try r.ue("seq_parameter_set_id", max: 31)
        if Self.highProfiles.contains(profileIdc) {
            chromaFormatIdc = try r.ue("chroma_format_idc", max: 3)
            if chromaFormatIdc == 3 { separateColourPlane = try r.flag("separate_colour_plane_flag") }
            bitDepthLuma = 8 + (try r.ue("bit_depth_luma_minus8", max: 6))
            bitDepthChroma = 8 + (try r.ue("bit_depth_chroma_minus8", max: 6))
            qpprimeYZeroTransformBypass = try r.flag("qpprime_y_zero_transform_bypass_flag")
            scalingMatrixPresent = try r.flag("seq_scaling_matrix_present_flag")
            if scalingMatrixPresent {
                for i in 0..<(chromaFormatIdc != 3 ? 8 : 12) where try r.flag("seq_scaling_list_present_flag") {
                    try Self.skipScalingList(&r, size: i < 6 ? 16 : 64)
                }
            }
        }
        log2MaxFrameNum = 4 + (try r.ue("log2_max_frame_num_minus4", max: 12))
        picOrderCntType = try r.ue("pic_order_cnt_type", max: 2)
        if picOrderCntType == 0 {
            log2MaxPicOrderCntLsb = 4 + (try r.ue("log2_max_pic_order_cnt_lsb_minus4", max: 12))
        } else if picOrderCntType == 1 {
            deltaPicOrderAlwaysZero = try r.flag("delta_pic_order_always_zero_flag")
            offsetForNonRefPic = try r.se("offset_for_non_ref_pic")
            offsetForTopToBottomField = try r.se("offset_for_top_to_bottom_field")
            let cycle = try r.ue("num_ref_frames_in_pic_order_cnt_cycle", max: 255)
            for _ in 0..<cycle { offsetsForRefFrame.append(try r.se("offset_for_ref_frame")) }
        }
        maxNumRefFrames = try r.ue("max_num_ref_frames", max: 16)
        gapsInFrameNumAllowed = try r.flag("gaps_in_frame_num_value_allowed_flag")
        widthInMbs = 1 + (try r.ue("pic_width_in_mbs_minus1", max: 1 << 16))
        heightInMapUnits = 1 + (try r.ue("pic_height_in_map_units_minus1", max: 1 << 16))
        frameMbsOnly = try r.flag("frame_mbs_only_flag")
        if !frameMbsOnly { mbAdaptiveFrameField = try r.flag("mb_adaptive_frame_field_flag") }
        direct8x8Inference = try r.flag("direct_8x8_inference_flag")
        if try r.flag("frame_cropping_flag") {
            crop = (
                try r.ue("frame_crop_left_offset", max: 1 << 20), try r.ue("frame_crop_right_offset", max: 1 << 20),
                try r.ue("frame_crop_top_offset", max: 1 << 20), try r.ue("frame_crop_bottom_offset", max: 1 << 20)
            )
        }
        guard width > 0 && height > 0 else { throw BitstreamError.outOfRange(field: "frame_crop_offset", value: Int64(width)) }
        if try r.flag("vui_parameters_present_flag") {
            // The VUI is optional to us: a damaged one costs the frame rate, not the SPS.
            timing = try? Self.readTiming(&r)
        }
    }

    /// scaling_list() (7.3.2.1.1.1): only the delta_scale values are coded; read to skip.
    private static func skipScalingList(_ r: inout BitReader, size: Int) throws {
        var last: Int32 = 8
        var next: Int32 = 8
        for _ in 0..<size where next != 0 {
            let delta = try r.se("delta_scale")
            guard delta >= -128 && delta <= 127 else { throw BitstreamError.outOfRange(field: "delta_scale", value: Int64(delta)) }
            next = (last + delta + 256) % 256
            if next != 0 { last = next }
        }
    }

    /// vui_parameters() (E.1.1) up to timing_info.
    private static func readTiming(_ r: inout BitReader) throws -> Timing? {
        if try r.flag("aspect_ratio_info_present_flag") {
            if try r.bits(8, "aspect_ratio_idc") == 255 { try r.skip(32, "sar_width/sar_height") }
        }
        if try r.flag("overscan_info_present_flag") { try r.skip(1, "overscan_appropriate_flag") }
        if try r.flag("video_signal_type_present_flag") {
            try r.skip(4, "video_format/video_full_range_flag")
            if try r.flag("colour_description_present_flag") { try r.skip(24, "colour_description") }
        }
        if try r.flag("chroma_loc_info_present_flag") {
            _ = try r.ue("chroma_sample_loc_type_top_field")
            _ = try r.ue("chroma_sample_loc_type_bottom_field")
        }
        guard try r.flag("timing_info_present_flag") else { return nil }
        return Timing(
            numUnitsInTick: try r.bits(32, "num_units_in_tick"),
            timeScale: try r.bits(32, "time_scale"),
            fixedFrameRate: try r.flag("fixed_frame_rate_flag"))
    }
}
