/// The picture that completes the access unit a delimited stream opened behind its last
/// picture (`AccessUnitDelimiting.closing`): a redundant coded picture (redundant_pic_cnt 1),
/// which decoders drop while its primary is intact, with a picture parameter set of its own
/// that allows one.
///
/// FFmpeg's H.264 parser writes "missing picture in access unit" for every access unit it
/// cuts out without a slice, and the AUD sent behind the last picture always opens one. A
/// slice header is all its parser reads; FFmpeg's decoder reads the header, sees the
/// redundant_pic_cnt and discards the slice without a word (`ff_h264_queue_decode_slice`),
/// so the end of sequence behind it is still the last thing it decodes: a flush, no frame.
/// Neither adds a picture to what ffprobe or GStreamer count.
///
/// Main and High profile streams have no redundant pictures (their PPSs must not allow
/// them): this one, in the access unit that ends the stream and that nothing is decoded
/// from, is the single place where the stream steps outside its profile. nalcast's own
/// parser hands out no access unit whose slices are all redundant (`AccessUnitAssembler`).
///
/// The slice is a whole, valid one: I, not a reference (no marking), CAVLC, macroblock 0
/// only (a pair in an MBAFF frame; a redundant picture may cover part of the picture), coded as Intra 16×16 DC
/// prediction with no residual. Its header follows the active SPS (frame_num and picture
/// order count sizes, fields).
public enum ClosingPicture {
    /// The PPS and the slice, each with a 4-byte start code: `ppsId` must be an id the stream
    /// did not use (it would replace that PPS for the readers).
    public static func nalUnits(sps: SequenceParameterSet, ppsId: Int) -> [UInt8] {
        [0, 0, 0, 1, 0x68] + RBSP.escape(pps(spsId: sps.id, ppsId: ppsId))
            + [0, 0, 0, 1, 0x01] + RBSP.escape(slice(sps: sps, ppsId: ppsId))
    }

    /// A PPS with CAVLC, one slice group, one reference each way, no weighting, QP 26, no
    /// deblocking control, and redundant_pic_cnt_present_flag.
    static func pps(spsId: Int, ppsId: Int) -> [UInt8] {
        var w = BitWriter()
        w.ue(ppsId)
        w.ue(spsId)
        w.bit(false)  // entropy_coding_mode_flag: CAVLC
        w.bit(false)  // bottom_field_pic_order_in_frame_present_flag
        w.ue(0)  // num_slice_groups_minus1
        w.ue(0)  // num_ref_idx_l0_default_active_minus1
        w.ue(0)  // num_ref_idx_l1_default_active_minus1
        w.bit(false)  // weighted_pred_flag
        w.bits(0, 2)  // weighted_bipred_idc
        w.se(0)  // pic_init_qp_minus26
        w.se(0)  // pic_init_qs_minus26
        w.se(0)  // chroma_qp_index_offset
        w.bit(false)  // deblocking_filter_control_present_flag
        w.bit(false)  // constrained_intra_pred_flag
        w.bit(true)  // redundant_pic_cnt_present_flag
        return w.rbsp()
    }

    /// A non-reference I slice (nal_unit_type 1) with redundant_pic_cnt 1 and one macroblock.
    static func slice(sps: SequenceParameterSet, ppsId: Int) -> [UInt8] {
        var w = BitWriter()
        w.ue(0)  // first_mb_in_slice
        w.ue(7)  // slice_type: I, as every slice of the picture
        w.ue(ppsId)
        if sps.separateColourPlane { w.bits(0, 2) }  // colour_plane_id
        w.bits(0, sps.log2MaxFrameNum)  // frame_num
        if !sps.frameMbsOnly { w.bit(false) }  // field_pic_flag
        if sps.picOrderCntType == 0 {
            w.bits(0, sps.log2MaxPicOrderCntLsb)  // pic_order_cnt_lsb
        } else if sps.picOrderCntType == 1 && !sps.deltaPicOrderAlwaysZero {
            w.se(0)  // delta_pic_order_cnt[0]
        }
        w.ue(1)  // redundant_pic_cnt
        w.se(0)  // slice_qp_delta
        // slice_data: the first macroblock, or pair of them in an MBAFF frame (the pair's
        // mb_field_decoding_flag first).
        let mbaff = !sps.frameMbsOnly && sps.mbAdaptiveFrameField
        if mbaff { w.bit(false) }
        for _ in 0..<(mbaff ? 2 : 1) {
            w.ue(3)  // mb_type I_16x16_2_0_0: DC prediction, no coded block pattern
            if sps.chromaArrayType == 1 || sps.chromaArrayType == 2 { w.ue(0) }  // intra_chroma_pred_mode: DC
            w.se(0)  // mb_qp_delta
            // The Intra16x16 DC coefficients of each colour component coded like luma: none.
            for _ in 0..<(sps.chromaArrayType == 3 ? 3 : 1) { w.bit(true) }  // coeff_token, TotalCoeff 0
        }
        return w.rbsp()
    }
}
