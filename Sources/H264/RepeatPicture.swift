import Media

/// A picture that repeats the one before it, written without an encoder: one P slice in
/// which every macroblock is skipped (P_Skip), so a decoder copies the last reference
/// picture whole. A still screen's keep-alive costs a few dozen bytes and no encoding work
/// (an encoder still loads, predicts and copies every macroblock of a picture it is told did
/// not change: 4-7 ms at 1080p for x264; bench/README).
///
/// The picture is a reference picture, as the encoder's own P pictures are, so the stream's
/// frame_num goes up by one with it; the encoder does not know, and its later slices are
/// renumbered (`renumbered(_:sps:by:)`) until its next IDR. That holds only while the
/// encoder predicts from its last reference picture alone: with one reference frame (the
/// SPS's max_num_ref_frames 1) its list holds that picture and the decoder's holds this one,
/// the same pixels. Pictures numbered by picture order count type 0 would need their
/// pic_order_cnt_lsb moved too, fields their parity: `supports` says which streams qualify.
///
/// The slice follows the active SPS and PPS: CAVLC as one mb_skip_run, or CABAC as one
/// mb_skip_flag and end_of_slice_flag per macroblock; an explicit single reference; a
/// weight table that weights nothing where the PPS asks for one; deblocking off where the
/// PPS lets a slice say so (with every macroblock skipped from one reference at one motion
/// vector there is nothing to filter anyway: 8.7.2.1 gives every edge strength 0).
public enum RepeatPicture {
    /// Whether pictures of this SPS and PPS can be repeated so: frames only, picture order
    /// from frame_num (type 2), one reference frame, one slice group.
    public static func supports(sps: SequenceParameterSet, pps: PictureParameterSet) -> Bool {
        sps.frameMbsOnly && sps.picOrderCntType == 2 && sps.maxNumRefFrames == 1 && pps.numSliceGroups == 1
            && pps.spsId == sps.id && !sps.separateColourPlane
    }

    /// The slice NAL unit (4-byte start code, nal_ref_idc 2, nal_unit_type 1) of the picture
    /// numbered `frameNum` (the last reference picture's frame_num + 1, modulo MaxFrameNum).
    /// `qp`, the slice's QP (nil: the PPS's), quantises nothing here; under CABAC it sets
    /// where the skip flag's probability starts (9.3.1.1).
    public static func slice(sps: SequenceParameterSet, pps: PictureParameterSet, frameNum: Int, qp: Int? = nil) -> NALUnit {
        precondition(supports(sps: sps, pps: pps))
        let sliceQP = Swift.min(51, Swift.max(0, qp ?? pps.picInitQp))
        let macroblocks = sps.widthInMbs * sps.heightInMapUnits
        var w = BitWriter()
        w.ue(0)  // first_mb_in_slice
        w.ue(5)  // slice_type: P, as every slice of the picture
        w.ue(pps.id)
        w.bits(UInt64(frameNum & ((1 << sps.log2MaxFrameNum) - 1)), sps.log2MaxFrameNum)
        if pps.redundantPicCntPresent { w.ue(0) }  // redundant_pic_cnt: the primary picture
        w.bit(true)  // num_ref_idx_active_override_flag
        w.ue(0)  // num_ref_idx_l0_active_minus1: one reference
        w.bit(false)  // ref_pic_list_modification_flag_l0
        if pps.weightedPred {
            w.ue(0)  // luma_log2_weight_denom
            if sps.chromaArrayType != 0 { w.ue(0) }  // chroma_log2_weight_denom
            w.bit(false)  // luma_weight_l0_flag
            if sps.chromaArrayType != 0 { w.bit(false) }  // chroma_weight_l0_flag
        }
        w.bit(false)  // adaptive_ref_pic_marking_mode_flag: sliding window
        if pps.entropyCodingModeCABAC { w.ue(0) }  // cabac_init_idc
        w.se(sliceQP - pps.picInitQp)  // slice_qp_delta
        if pps.deblockingFilterControlPresent { w.ue(1) }  // disable_deblocking_filter_idc
        guard pps.entropyCodingModeCABAC else {
            w.ue(macroblocks)  // mb_skip_run: all of them, and no more data
            return NALUnit(escapedBody: [NALHeader(refIdc: 2, type: .slice).byte] + RBSP.escape(w.rbsp()))
        }
        while !w.isByteAligned { w.bit(true) }  // cabac_alignment_one_bit
        // mb_skip_flag in a P slice: context 11 + the number of neighbours not skipped,
        // here always 0; cabac_init_idc 0 gives it (m, n) = (23, 33) (Table 9-13).
        var skip = CABACWriter.Context(m: 23, n: 33, sliceQP: sliceQP)
        var coder = CABACWriter(w)
        for mb in 0..<macroblocks {
            coder.decision(1, &skip)
            coder.terminate(mb == macroblocks - 1)  // end_of_slice_flag
        }
        return NALUnit(escapedBody: [NALHeader(refIdc: 2, type: .slice).byte] + RBSP.escape(coder.writer.zeroAligned()))
    }

    /// `nal` (a non-IDR slice) with its frame_num moved up by `shift`, modulo MaxFrameNum:
    /// the encoder's slices after repeat pictures it did not write. Everything else in the
    /// slice is kept bit for bit; emulation prevention is worked out again.
    public static func renumbered(_ nal: NALUnit, sps: SequenceParameterSet, by shift: Int) throws -> NALUnit {
        var rbsp = nal.rbsp()
        var r = BitReader(rbsp)
        try skipToFrameNum(&r, sps: sps)
        let at = r.position
        let frameNum = Int(try r.bits(sps.log2MaxFrameNum, "frame_num"))
        let moved = (frameNum + shift) & ((1 << sps.log2MaxFrameNum) - 1)
        for i in 0..<sps.log2MaxFrameNum {
            let bit = at + i
            let mask = UInt8(0x80) >> UInt8(bit & 7)
            if (moved >> (sps.log2MaxFrameNum - 1 - i)) & 1 == 1 { rbsp[bit >> 3] |= mask } else { rbsp[bit >> 3] &= ~mask }
        }
        return NALUnit(escapedBody: [nal.header.byte] + RBSP.escape(rbsp))
    }

    /// The frame_num of a slice.
    public static func frameNum(of nal: NALUnit, sps: SequenceParameterSet) throws -> Int {
        var r = BitReader(nal.rbspPrefix(16))
        try skipToFrameNum(&r, sps: sps)
        return Int(try r.bits(sps.log2MaxFrameNum, "frame_num"))
    }

    /// Reads a slice header up to its frame_num (7.3.3).
    private static func skipToFrameNum(_ r: inout BitReader, sps: SequenceParameterSet) throws {
        _ = try r.ue("first_mb_in_slice")
        _ = try r.ue("slice_type")
        _ = try r.ue("pic_parameter_set_id")
        if sps.separateColourPlane { try r.skip(2, "colour_plane_id") }
    }
}
