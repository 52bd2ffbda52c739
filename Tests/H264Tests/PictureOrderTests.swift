import Foundation
@testable import H264
import Media
import Testing
import TestSupport

/// Picture order counts and presentation times: what a container writer needs for streams
/// with B-frames and fields (the conformance streams).
@Suite struct PictureOrderTests {
    /// The picture types in presentation order, as FFmpeg 5.1 decodes each stream
    /// (`ffprobe -f h264 -show_frames -show_entries frame=pict_type`): one per frame, a
    /// field pair being one frame.
    static let presentationTypes: [String: String] = [
        "FREXT01_JVC_D.264": "IBBPBBPBBPBBPBBI",
        "FRExt1_Panasonic.avc": "IBBPBBIP",
        "FRExt3_Panasonic.avc": "IBBPBBIBBPP",
        "HCAFF1_HHI.264": "IBBPBBPBBP",
        "HCAFR1_HHI.264": "IBBPBBPBBP",
        "HCAMFF1_HHI.264": "IBBPBBPBBP",
    ]

    static func sliceType(_ unit: AccessUnit) -> Character {
        guard let slice = unit.nalUnits.first(where: { $0.type.isVCL }),
              let peek = try? SliceHeader.peekPPSId(rbsp: slice.rbspPrefix(64)) else { return "?" }
        let types: [Character] = ["P", "B", "I", "P", "I"]
        return types[peek.sliceType % 5]
    }

    /// Sorting each run by key (dropping second fields, which go with their first) gives
    /// the order FFmpeg presents the pictures in.
    @Test(arguments: ConformanceStream.all)
    func keysGivePresentationOrder(_ stream: ConformanceStream) throws {
        let units = parse(try stream.load(), chunks: [4096]).units
        var order = AccessUnitOrder()
        var runs: [[(key: Int, type: Character)]] = []
        for unit in units {
            guard let info = order.info(for: unit) else {
                Issue.record("no order for an access unit of \(stream)")
                return
            }
            if info.startsOver || runs.isEmpty { runs.append([]) }
            if info.structure != .secondField { runs[runs.count - 1].append((info.key, Self.sliceType(unit))) }
        }
        var presented = ""
        for run in runs {
            for picture in run.sorted(by: { a, b in a.key < b.key }) { presented.append(picture.type) }
        }
        #expect(presented == Self.presentationTypes[stream.file])
    }

    @Test func fieldPairsAreMarked() throws {
        let units = parse(try ConformanceStream.named("HCAFF1_HHI.264").load(), chunks: [4096]).units
        var order = AccessUnitOrder()
        let structures = units.compactMap { order.info(for: $0)?.structure }
        #expect(structures.count == 14)
        #expect(structures.filter { $0 == .firstField }.count == 4)
        #expect(structures.filter { $0 == .secondField }.count == 4)
        #expect(structures.filter { $0 == .frame }.count == 6)
    }

    @Test func withoutKeysPresentationIsDecodeTime() {
        var t = PresentationTimeline(window: 4)
        for i in 0..<10 { t.push(dts: Int64(i) * 3000, key: nil, startsRun: i == 0) }
        var out: [PresentationTimeline.Times] = []
        while let times = t.pop() { out.append(times) }
        #expect(out == (0..<10).map { .init(dts: Int64($0) * 3000, pts: Int64($0) * 3000) })
    }

    @Test func inOrderKeysGiveNoDelay() {
        var t = PresentationTimeline(window: 4)
        for i in 0..<10 { t.push(dts: Int64(i) * 3000, key: i * 2, startsRun: i == 0) }
        var out: [PresentationTimeline.Times] = []
        while let times = t.pop(finishing: true) { out.append(times) }
        #expect(out.map(\.pts) == out.map(\.dts))
        #expect(t.delay == 0)
    }

    /// I P B B P B B in decode order: presented I B B P B B P, one frame late.
    @Test func bFramesArePresentedInOrder() {
        var t = PresentationTimeline(window: 4)
        let keys = [0, 6, 2, 4, 12, 8, 10]
        for (i, k) in keys.enumerated() { t.push(dts: Int64(i) * 3000, key: k, startsRun: i == 0) }
        #expect(t.pop() != nil)  // the first is settled once `window` more came
        var out: [PresentationTimeline.Times] = []
        while let times = t.pop(finishing: true) { out.append(times) }
        #expect(t.delay == 1)
        #expect(out.map(\.pts) == [12000, 6000, 9000, 21000, 15000, 18000])
        #expect(out.allSatisfy { $0.pts >= $0.dts })
    }

    /// A jump in decode time (dropped frames) stays a jump in presentation time.
    @Test func gapsStayGaps() {
        var t = PresentationTimeline(window: 2)
        let dts: [Int64] = [0, 3000, 6000, 36000, 39000]
        for (i, d) in dts.enumerated() { t.push(dts: d, key: 2 * i, startsRun: i == 0) }
        var out: [PresentationTimeline.Times] = []
        while let times = t.pop(finishing: true) { out.append(times) }
        #expect(out.map(\.pts) == dts)
    }

    /// A second IDR starts a new run: its pictures come after all of the first run's.
    @Test func runsFollowEachOther() {
        var t = PresentationTimeline(window: 8)
        let keys = [0, 6, 2, 4, 0, 6, 2, 4]
        for (i, k) in keys.enumerated() { t.push(dts: Int64(i) * 3000, key: k, startsRun: i == 0 || i == 4) }
        var out: [PresentationTimeline.Times] = []
        while let times = t.pop(finishing: true) { out.append(times) }
        #expect(out.count == 8)
        let presented = out.map(\.pts).sorted()
        #expect(Set(presented).count == 8)
        // The first run's pictures all come before the second's.
        #expect(out[0..<4].map(\.pts).max()! < out[4..<8].map(\.pts).min()!)
    }

    /// A slice header written in full up to dec_ref_pic_marking() (for `sps1080p`/`pps`:
    /// P or I slices, pic_order_cnt_type 0 with 6-bit lsb, 4-bit frame_num).
    static func sliceHeader(idr: Bool, frameNum: UInt64, poc: UInt64, refIdc: UInt8 = 2, reset: Bool = false) throws -> SliceHeader {
        var w = BitWriter()
        w.ue(0)                 // first_mb_in_slice
        w.ue(idr ? 7 : 5)       // slice_type
        w.ue(0)                 // pic_parameter_set_id
        w.bits(frameNum, 4)     // frame_num
        if idr { w.ue(0) }      // idr_pic_id
        w.bits(poc, 6)          // pic_order_cnt_lsb
        if !idr {
            w.flag(false)       // num_ref_idx_active_override_flag
            w.flag(false)       // ref_pic_list_modification_flag_l0
        }
        if refIdc != 0 {
            if idr {
                w.flag(false)   // no_output_of_prior_pics_flag
                w.flag(false)   // long_term_reference_flag
            } else {
                w.flag(reset)   // adaptive_ref_pic_marking_mode_flag
                if reset {
                    w.ue(5)     // memory_management_control_operation 5
                    w.ue(0)     // end
                }
            }
        }
        w.se(0)                 // slice_qp_delta (not read)
        w.trailing()
        let sequence = try SequenceParameterSet(rbsp: RBSP.unescape(sps1080p().dropFirst()))
        let picture = try PictureParameterSet(rbsp: RBSP.unescape(pps().dropFirst()))
        return try SliceHeader(rbsp: w.bytes[...], header: NALHeader(refIdc: refIdc, type: idr ? .idrSlice : .slice), sps: sequence, pps: picture)
    }

    /// pic_order_cnt_lsb wraps (6 bits: 64); the count goes on rising.
    @Test func lsbWrapsIntoTheMostSignificantPart() throws {
        let sps = try SequenceParameterSet(rbsp: RBSP.unescape(sps1080p().dropFirst()))
        var counter = PictureOrderCounter()
        var values: [Int] = []
        for (i, lsb) in [0, 20, 40, 60, 16, 36].enumerated() {
            let h = try Self.sliceHeader(idr: i == 0, frameNum: UInt64(i), poc: UInt64(lsb))
            values.append(counter.next(h, sps: sps).value)
        }
        #expect(values == [0, 20, 40, 60, 80, 100])
    }

    /// MMCO 5 is read from dec_ref_pic_marking(); the counts start over after it, as after an IDR.
    @Test func memoryManagementResetStartsOver() throws {
        let sps = try SequenceParameterSet(rbsp: RBSP.unescape(sps1080p().dropFirst()))
        let resetting = try Self.sliceHeader(idr: false, frameNum: 2, poc: 10, reset: true)
        #expect(resetting.memoryManagementReset)
        #expect(try !Self.sliceHeader(idr: false, frameNum: 2, poc: 10).memoryManagementReset)
        var counter = PictureOrderCounter()
        #expect(counter.next(try Self.sliceHeader(idr: true, frameNum: 0, poc: 0), sps: sps).startsOver)
        #expect(!counter.next(try Self.sliceHeader(idr: false, frameNum: 1, poc: 50), sps: sps).startsOver)
        #expect(counter.next(resetting, sps: sps).startsOver)
        // After the reset, lsb 4 is 4 (not 4 + 64 because of the 50 before).
        #expect(counter.next(try Self.sliceHeader(idr: false, frameNum: 1, poc: 4), sps: sps).value == 4)
    }
}
