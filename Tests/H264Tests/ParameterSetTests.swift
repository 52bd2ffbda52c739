import Media
import TestSupport
import Testing
@testable import H264

/// Writes bits MSB first, for building slice headers and parameter sets field by field.
struct BitWriter {
    var bytes: [UInt8] = []
    var bitCount = 0
    mutating func bits(_ value: UInt64, _ count: Int) {
        for i in stride(from: count - 1, through: 0, by: -1) {
            if bitCount % 8 == 0 { bytes.append(0) }
            if (value >> UInt64(i)) & 1 == 1 { bytes[bytes.count - 1] |= 0x80 >> UInt8(bitCount % 8) }
            bitCount += 1
        }
    }
    mutating func flag(_ v: Bool) { bits(v ? 1 : 0, 1) }
    mutating func ue(_ v: UInt64) {
        let code = v + 1
        let length = 64 - code.leadingZeroBitCount
        bits(0, length - 1)
        bits(code, length)
    }
    mutating func se(_ v: Int64) { ue(v > 0 ? UInt64(2 * v - 1) : UInt64(-2 * v)) }
    /// rbsp_trailing_bits: a stop bit, then zeros to the byte boundary.
    mutating func trailing() {
        bits(1, 1)
        while bitCount % 8 != 0 { bits(0, 1) }
    }
}

/// A Main-profile SPS for 1920x1080 at 30 fps, field by field.
func sps1080p(id: UInt64 = 0, timing: Bool = true) -> [UInt8] {
    var w = BitWriter()
    w.bits(77, 8)      // profile_idc: Main
    w.bits(0x40, 8)    // constraint_set1_flag
    w.bits(40, 8)      // level_idc 4.0
    w.ue(id)           // seq_parameter_set_id
    w.ue(0)            // log2_max_frame_num_minus4 → 4 bits of frame_num
    w.ue(0)            // pic_order_cnt_type 0
    w.ue(2)            // log2_max_pic_order_cnt_lsb_minus4 → 6 bits
    w.ue(1)            // max_num_ref_frames
    w.flag(false)      // gaps_in_frame_num_value_allowed_flag
    w.ue(119)          // pic_width_in_mbs_minus1 → 120 MBs = 1920
    w.ue(67)           // pic_height_in_map_units_minus1 → 68 MBs = 1088
    w.flag(true)       // frame_mbs_only_flag
    w.flag(true)       // direct_8x8_inference_flag
    w.flag(true)       // frame_cropping_flag
    w.ue(0); w.ue(0)   // crop left, right
    w.ue(0); w.ue(4)   // crop top, bottom: 4 × 2 rows → 1080
    w.flag(timing)     // vui_parameters_present_flag
    if timing {
        w.flag(false)  // aspect_ratio_info_present_flag
        w.flag(false)  // overscan_info_present_flag
        w.flag(false)  // video_signal_type_present_flag
        w.flag(false)  // chroma_loc_info_present_flag
        w.flag(true)   // timing_info_present_flag
        w.bits(1, 32)  // num_units_in_tick
        w.bits(60, 32) // time_scale → 60 / (2 × 1) = 30 fps
        w.flag(true)   // fixed_frame_rate_flag
        w.flag(false); w.flag(false); w.flag(false); w.flag(false)  // HRD, pic_struct, restriction
    }
    w.trailing()
    return [0x67] + RBSP.escape(w.bytes)  // NAL header: nal_ref_idc 3, type 7
}

func pps(id: UInt64 = 0, sps: UInt64 = 0) -> [UInt8] {
    var w = BitWriter()
    w.ue(id)           // pic_parameter_set_id
    w.ue(sps)          // seq_parameter_set_id
    w.flag(true)       // entropy_coding_mode_flag (CABAC)
    w.flag(false)      // bottom_field_pic_order_in_frame_present_flag
    w.ue(0)            // num_slice_groups_minus1
    w.ue(0); w.ue(0)   // num_ref_idx_l0/l1_default_active_minus1
    w.flag(false)      // weighted_pred_flag
    w.bits(0, 2)       // weighted_bipred_idc
    w.se(0); w.se(0); w.se(0)  // pic_init_qp/qs_minus26, chroma_qp_index_offset
    w.flag(true)       // deblocking_filter_control_present_flag
    w.flag(false)      // constrained_intra_pred_flag
    w.flag(false)      // redundant_pic_cnt_present_flag
    w.trailing()
    return [0x68] + RBSP.escape(w.bytes)
}

/// A slice NAL unit whose header carries the fields 7.4.1.2.4 compares (for sps1080p/pps).
func slice(idr: Bool, frameNum: UInt64, poc: UInt64, firstMb: UInt64 = 0, idrPicId: UInt64 = 0, refIdc: UInt8 = 3) -> [UInt8] {
    var w = BitWriter()
    w.ue(firstMb)      // first_mb_in_slice
    w.ue(idr ? 7 : 5)  // slice_type: I or P (all slices of the picture alike)
    w.ue(0)            // pic_parameter_set_id
    w.bits(frameNum, 4)  // frame_num: log2_max_frame_num = 4
    if idr { w.ue(idrPicId) }  // idr_pic_id
    w.bits(poc, 6)     // pic_order_cnt_lsb: 6 bits
    w.bits(0xab, 8)    // (rest of the header and slice data: not read)
    w.trailing()
    return [NALHeader(refIdc: refIdc, type: idr ? .idrSlice : .slice).byte] + RBSP.escape(w.bytes)
}

func annexB(_ bodies: [[UInt8]]) -> [UInt8] { bodies.flatMap { [0, 0, 0, 1] + $0 } }

@Suite struct ParameterSetTests {
    @Test func spsFields() throws {
        let sps = try SequenceParameterSet(rbsp: RBSP.unescape(sps1080p().dropFirst()))
        #expect(sps.profileIdc == 77)
        #expect(sps.levelIdc == 40)
        #expect(sps.constraintFlags == 0x40)
        #expect(sps.chromaFormatIdc == 1)
        #expect(sps.log2MaxFrameNum == 4)
        #expect(sps.log2MaxPicOrderCntLsb == 6)
        #expect(sps.frameMbsOnly)
        #expect(sps.resolution == Resolution(width: 1920, height: 1080))
        #expect(sps.frameRate == 30)
    }

    @Test func conformanceSPSHighProfileFields() throws {
        let stream = ConformanceStream.all.first { $0.file == "FRExt1_Panasonic.avc" }!
        let (nals, _) = scan(try stream.load(), chunks: [Int.max])
        let sps = try SequenceParameterSet(nals.first { $0.type == .sps }!)
        #expect(sps.profileIdc == 100)
        #expect(sps.chromaFormatIdc == 1)
        #expect(sps.bitDepthLuma == 8)
        #expect(sps.width == 352 && sps.height == 288)
        let jvc = ConformanceStream.all.first { $0.file == "FREXT01_JVC_D.264" }!
        let jvcSPS = try SequenceParameterSet(scan(try jvc.load(), chunks: [Int.max]).nals.first { $0.type == .sps }!)
        #expect(!jvcSPS.frameMbsOnly)
        #expect(jvcSPS.width == 352 && jvcSPS.height == 288)
    }

    @Test func truncatedSPSThrowsEveryWay() {
        let full = RBSP.unescape(sps1080p(timing: false).dropFirst())
        // Cutting anywhere before the VUI flag loses a mandatory field: always an error.
        for length in 0..<(full.count - 1) {
            #expect(throws: BitstreamError.self) { try SequenceParameterSet(rbsp: Array(full.prefix(length))) }
        }
    }

    @Test func damagedVUICostsOnlyTheFrameRate() throws {
        let full = RBSP.unescape(sps1080p().dropFirst())
        let sps = try SequenceParameterSet(rbsp: Array(full.prefix(full.count - 8)))
        #expect(sps.resolution == Resolution(width: 1920, height: 1080))
        #expect(sps.frameRate == nil)
    }

    @Test func ueOverflowInSPSIsAnError() {
        // profile, constraints, level, then 40 zero bits: an exp-Golomb code that cannot fit.
        #expect(throws: BitstreamError.overflow(field: "seq_parameter_set_id")) {
            try SequenceParameterSet(rbsp: [66, 0, 30, 0, 0, 0, 0, 0, 0x80])
        }
    }

    @Test func ppsFields() throws {
        let p = try PictureParameterSet(rbsp: RBSP.unescape(pps(id: 3, sps: 1).dropFirst()))
        #expect(p.id == 3)
        #expect(p.spsId == 1)
        #expect(p.entropyCodingModeCABAC)
        #expect(!p.redundantPicCntPresent)
    }
}

@Suite struct AccessUnitAssemblerTests {
    @Test func picturesSplitOnSliceHeaderFields() {
        let stream = annexB([
            [0x09, 0x10], sps1080p(), pps(),                       // AU 0: AUD SPS PPS
            slice(idr: true, frameNum: 0, poc: 0),                 //   IDR, two slices
            slice(idr: true, frameNum: 0, poc: 0, firstMb: 4000),
            slice(idr: false, frameNum: 1, poc: 2),                // AU 1: no AUD, frame_num changes
            slice(idr: false, frameNum: 1, poc: 2, firstMb: 100),
            slice(idr: false, frameNum: 2, poc: 4, refIdc: 0),     // AU 2: non-reference
            slice(idr: false, frameNum: 2, poc: 6, refIdc: 0),     // AU 3: only the POC differs
            slice(idr: true, frameNum: 0, poc: 0, idrPicId: 1),    // AU 4: IDR, idr_pic_id changes
            slice(idr: true, frameNum: 0, poc: 0, idrPicId: 2),    // AU 5: consecutive IDRs
            [0x0a],                                                //   end of sequence joins AU 5
        ])
        for chunks in [[Int.max], [1], [5, 3]] {
            let (units, parser) = parse(stream, chunks: chunks)
            #expect(units.map(\.nalUnits.count) == [5, 2, 1, 1, 1, 2], "chunks \(chunks)")
            #expect(units.map(\.isIDR) == [true, false, false, false, true, true])
            #expect(units.allSatisfy { $0.resolution == Resolution(width: 1920, height: 1080) })
            #expect(parser.assembler.parseErrors == 0)
            // The IDRs without their own SPS/PPS get them in front, after nothing (no AUD).
            #expect(units[4].nalUnitsForEntry.map(\.type) == [.sps, .pps, .idrSlice])
            #expect(units[0].nalUnitsForEntry.map(\.type) == [.accessUnitDelimiter, .sps, .pps, .idrSlice, .idrSlice])
        }
    }

    @Test func seiAndAUDOpenANewAccessUnit() {
        let ts = StreamTimestamp(sequence: 7, captureTimeNs: 1, pts90k: 3000, isKeyframe: false)
        let stream = annexB([
            sps1080p(), pps(), slice(idr: true, frameNum: 0, poc: 0),
            Array(ts.seiNALUnit.body), slice(idr: false, frameNum: 1, poc: 2),
            [0x09, 0x30], slice(idr: false, frameNum: 1, poc: 2),  // same fields, but the AUD says new
        ])
        let (units, _) = parse(stream, chunks: [Int.max])
        #expect(units.count == 3)
        #expect(units[1].timestamp == ts)
        #expect(units[0].timestamp == nil)
    }

    @Test func garbageBetweenAccessUnitsResyncsAndKeepsTheGoodOnes() {
        var rng = SplitMix(state: 11)
        let good = annexB([[0x09, 0x10], sps1080p(), pps(), slice(idr: true, frameNum: 0, poc: 0)])
        let next = annexB([[0x09, 0x30], slice(idr: false, frameNum: 1, poc: 2)])
        // Garbage with no start code in it (bytes 4...255 never form 00 00 01).
        let garbage = (0..<5000).map { _ in UInt8.random(in: 4...255, using: &rng) }
        let stream = good + garbage + next + next.map { $0 } + garbage + good
        let (units, _) = parse(stream, chunks: [97])
        // The garbage rides with the NAL unit before it (a scanner cannot tell), but every
        // access unit still comes out, in order, with the right type.
        #expect(units.map(\.isIDR) == [true, false, false, true])
    }

    @Test func missingParameterSetsFallBackToFirstMacroblock() {
        // Joined mid-stream: no SPS/PPS yet, so slice headers can only be peeked.
        let stream = annexB([
            slice(idr: false, frameNum: 1, poc: 2), slice(idr: false, frameNum: 1, poc: 2, firstMb: 50),
            slice(idr: false, frameNum: 2, poc: 4),
            sps1080p(), pps(), slice(idr: true, frameNum: 0, poc: 0),
        ])
        let (units, _) = parse(stream, chunks: [Int.max])
        #expect(units.map(\.nalUnits.count) == [2, 1, 3])
        #expect(units.map { $0.resolution == nil } == [true, true, false])
    }

    @Test func randomBytesNeverCrash() {
        var rng = SplitMix(state: 99)
        for _ in 0..<30 {
            // Biased towards zeros and small values so start codes and headers appear often.
            let bytes = (0..<4000).map { _ in UInt8.random(in: 0...9, using: &rng) == 0 ? UInt8.random(in: 0...255, using: &rng) : UInt8.random(in: 0...3, using: &rng) }
            let (units, parser) = parse(bytes, chunks: [Int.random(in: 1...500, using: &rng)])
            let inUnits = units.reduce(0) { $0 + $1.byteCount }
            #expect(inUnits + parser.scanner.skippedBytes == bytes.count)
        }
    }
}

@Suite struct StreamTimestampTests {
    @Test func payloadIsByteForByteAsDrawn() {
        let ts = StreamTimestamp(sequence: 0x0102_0304_0506_0708, captureTimeNs: 0x1122_3344_5566_7788, pts90k: 0xa0b0_c0d0_e0f0_0001, isKeyframe: true)
        #expect(ts.payload == StreamTimestamp.uuid + [
            0x01,                                            // version 1
            0x01,                                            // flags: keyframe
            0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,  // sequence
            0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,  // capture_time_ns
            0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0, 0x00, 0x01,  // pts_90k
        ])
        #expect(ts.payload.count == 42)
    }

    @Test func roundTripThroughAnSEINALUnit() throws {
        // Values full of zero bytes force emulation prevention inside the SEI.
        for ts in [
            StreamTimestamp(sequence: 0, captureTimeNs: 0, pts90k: 0, isKeyframe: false),
            StreamTimestamp(sequence: 1, captureTimeNs: 0x0000_0001_0000_0002, pts90k: 0x0000_0000_0000_0300, isKeyframe: true),
            StreamTimestamp(sequence: .max, captureTimeNs: .max, pts90k: 90_000, isKeyframe: false),
        ] {
            let nal = ts.seiNALUnit
            #expect(nal.type == .sei)
            // No start code may appear inside the NAL unit.
            let body = Array(nal.body)
            for i in 0..<(body.count - 2) { #expect(!(body[i] == 0 && body[i + 1] == 0 && body[i + 2] <= 2)) }
            // Through the scanner and back.
            var scanner = AnnexBScanner()
            var nals = scanner.push(Array(nal.wire))
            if let last = scanner.finish() { nals.append(last) }
            #expect(nals.count == 1)
            #expect(StreamTimestamp(sei: nals[0]) == ts)
        }
    }

    @Test func foreignUUIDAndShortPayloadAreIgnored() {
        var other = StreamTimestamp(sequence: 1, captureTimeNs: 2, pts90k: 3, isKeyframe: false).payload
        other[0] ^= 0xff
        #expect(StreamTimestamp(payload: other) == nil)
        #expect(StreamTimestamp(payload: StreamTimestamp.uuid + [1, 0]) == nil)
    }

    @Test func findsOurMessageAfterOthers() throws {
        let ts = StreamTimestamp(sequence: 5, captureTimeNs: 6, pts90k: 7, isKeyframe: false)
        var rbsp: [UInt8] = [0x01, 0x01, 0x00]       // message 1: pic_timing, 1 byte
        rbsp += [0x05, 42] + ts.payload              // message 2: ours
        rbsp += [0x80]                               // rbsp trailing bits
        let nal = NALUnit(escapedBody: [0x06] + RBSP.escape(rbsp))
        #expect(StreamTimestamp(sei: nal) == ts)
    }

    /// The timestamp is read from the escaped bytes as they lie: the same answer as the
    /// messages of the unescaped RBSP give, past another user_data_unregistered message
    /// (x264's, a foreign UUID, longer than ours), and none from a message cut short.
    @Test func readInTheEscapedBytesAsFromTheRBSP() throws {
        let ts = StreamTimestamp(sequence: 0x100, captureTimeNs: 0, pts90k: 3, isKeyframe: true)
        var foreign = StreamTimestamp(sequence: 0, captureTimeNs: 0, pts90k: 0, isKeyframe: false).payload + [0, 0, 0, 1]
        foreign[0] ^= 0xff
        let whole: [UInt8] = [0x05, UInt8(foreign.count)] + foreign + [0x05, 42] + ts.payload + [0x80]
        func fromRBSP(_ rbsp: [UInt8]) -> StreamTimestamp? {
            SEI.messages(rbsp: rbsp).filter { $0.type == 5 }.compactMap { StreamTimestamp(payload: $0.payload) }.first
        }
        let nal = NALUnit(escapedBody: [0x06] + RBSP.escape(whole))
        #expect(nal.escapedPayload.count > whole.count, "the escaped bytes hold emulation prevention bytes")
        #expect(StreamTimestamp(sei: nal) == ts)
        #expect(fromRBSP(whole) == ts)
        for cut in [whole.count - 2, whole.count - 20, foreign.count + 1] {
            let short = Array(whole[..<cut])
            let cutNAL = NALUnit(escapedBody: [0x06] + RBSP.escape(short))
            #expect(StreamTimestamp(sei: cutNAL) == fromRBSP(short))
            #expect(StreamTimestamp(sei: cutNAL) == nil)
        }
    }
}
