import Capture
import Encoder
import Foundation
import H264
import Media
import TestSupport
import Testing

/// Pictures that changed nothing written by nalcast (`RepeatPicture`, `H264Encoder.Parameters
/// .writesRepeats`): P pictures of skipped macroblocks, x264's later slices renumbered. Decoded
/// by FFmpeg: every repeat is the picture before it exactly, every picture x264 coded after
/// repeats is the picture it was given, and frame_num runs on by one from each IDR.
@Suite struct RepeatPictureTests {
    typealias Pictures = UnchangedMacroblockTests

    static func encoder(preset: String = "veryfast", profile: String = "high", writesRepeats: Bool = true) throws -> H264Encoder {
        var parameters = H264Encoder.Parameters(width: Pictures.width, height: Pictures.height, frameRate: FrameRate(30))
        parameters.bitrate = 8_000_000
        parameters.keyint = 1000
        parameters.preset = preset
        parameters.profile = profile
        parameters.writesRepeats = writesRepeats
        return try H264Encoder(parameters: parameters)
    }

    /// The frame_num of each access unit's slices (all the same within one), from nalcast's
    /// slice header parser.
    static func frameNumbers(_ units: [AccessUnit]) throws -> [(frameNum: Int, isIDR: Bool, maxFrameNum: Int)] {
        var sps: SequenceParameterSet?, pps: PictureParameterSet?
        return try units.map { unit in
            var numbers: Set<UInt32> = []
            for nal in unit.nalUnits {
                if nal.type == .sps { sps = try SequenceParameterSet(nal) }
                if nal.type == .pps { pps = try PictureParameterSet(nal) }
                if nal.type == .slice || nal.type == .idrSlice {
                    let header = try SliceHeader(rbsp: nal.rbspPrefix(64), header: nal.header, sps: sps!, pps: pps!)
                    numbers.insert(header.frameNum)
                }
            }
            #expect(numbers.count == 1, "slices of one picture numbered \(numbers)")
            return (Int(numbers.first ?? 0), unit.isIDR, 1 << sps!.log2MaxFrameNum)
        }
    }

    /// A picture, repeats of it, a window changing, repeats, an IDR asked for at a repeat,
    /// repeats and changes after it: decoded, each picture the one it should be.
    @Test(arguments: [("ultrafast", "high"), ("veryfast", "high"), ("superfast", "main"), ("veryfast", "baseline")])
    func repeatsDecodeToThePictureBeforeAndX264PicturesAfterThemToTheirs(preset: String, profile: String) throws {
        let encoder = try Self.encoder(preset: preset, profile: profile)
        let plain = try Self.encoder(preset: preset, profile: profile, writesRepeats: false)
        var units: [AccessUnit] = [], plainUnits: [AccessUnit] = [], sources: [[UInt8]] = [], repeats: [Bool] = []
        var previous: FrameDamage.Rect?
        var last = Pictures.picture(0)
        // r: a repeat of the picture before; c: a window moved; i: an IDR asked for, then a repeat.
        let script = "crrrcrrcccrrircrrrrcrc"
        for (index, step) in Array(script).enumerated() {
            var changes: PictureChanges = .none
            if step == "c" {
                let rect = FrameDamage.Rect(x: 7 + 11 * index, y: 5 + 7 * index, width: 45, height: 33)
                last = Pictures.picture(index, rects: [rect], fill: UInt8(40 + (index % 5) * 45))
                changes = index == 0 ? .unknown : .rects([previous, rect].compactMap { $0 })
                previous = rect
            } else {
                last.sequence = UInt64(index)
                last.pts90k = UInt64(index) * 3000
            }
            if step == "i" {
                encoder.requestIDR()
                plain.requestIDR()
            }
            units.append(try #require(try encoder.encode(last, changes: changes)))
            plainUnits.append(try #require(try plain.encode(last, changes: changes)))
            sources.append(Pictures.luma(last))
            repeats.append(step == "r")
        }
        #expect(encoder.repeatPictures == UInt64(repeats.filter { $0 }.count), "preset \(preset)")
        // A repeat: an AUD, the timestamp SEI and one slice of a few dozen bytes.
        for (unit, isRepeat) in zip(units, repeats) where isRepeat {
            #expect(unit.nalUnits.map(\.type) == [.accessUnitDelimiter, .sei, .slice])
            #expect(unit.nalUnits.last!.wire.count <= 64, "repeat slice of \(unit.nalUnits.last!.wire.count) bytes")
        }
        let idrs: [Bool] = Array(script).enumerated().map { (offset: Int, step: Character) -> Bool in offset == 0 || step == "i" }
        #expect(units.map(\.isIDR) == idrs)

        // frame_num: 0 at each IDR, then one more for every picture (all are references).
        let numbers = try Self.frameNumbers(units)
        for i in 1..<numbers.count where !numbers[i].isIDR {
            #expect(numbers[i].frameNum == (numbers[i - 1].frameNum + 1) % numbers[i].maxFrameNum,
                    "picture \(i): frame_num \(numbers[i].frameNum) after \(numbers[i - 1].frameNum)")
        }
        #expect(numbers.filter(\.isIDR).allSatisfy { $0.frameNum == 0 })

        let decoded = try Pictures.decodeLuma(units), decodedPlain = try Pictures.decodeLuma(plainUnits)
        #expect(decoded.errors.isEmpty, "\(decoded.errors)")
        try #require(decoded.pictures.count == units.count && decodedPlain.pictures.count == units.count)
        for index in decoded.pictures.indices where repeats[index] {
            #expect(decoded.pictures[index] == decoded.pictures[index - 1], "repeat \(index) is not the picture before it")
        }
        // Each picture as close to its source as when x264 codes the repeats itself (told they
        // changed nothing): a macroblock predicted from the wrong reference would keep the
        // window's old place or fill, 40 to 200 luma away.
        let worst = Pictures.worstMacroblock(decoded.pictures, sources), usual = Pictures.worstMacroblock(decodedPlain.pictures, sources)
        for index in worst.indices {
            #expect(worst[index] <= usual[index] + 4, "picture \(index): worst macroblock's mean luma error \(worst[index]), x264's repeats \(usual[index])")
        }
    }

    /// A decoder that is not FFmpeg's: Cisco's OpenH264 (GStreamer's openh264dec) decodes a
    /// stream with repeats, CABAC and CAVLC, to the very pixels FFmpeg does.
    @Test(arguments: [("veryfast", "high"), ("ultrafast", "baseline")])
    func openH264DecodesTheRepeatsAsFFmpegDoes(preset: String, profile: String) throws {
        let encoder = try Self.encoder(preset: preset, profile: profile)
        var units: [AccessUnit] = []
        var last = Pictures.picture(0)
        for index in 0..<12 {
            let moved = index % 4 == 0
            if moved {
                last = Pictures.picture(index, rects: [.init(x: 10 + 20 * index, y: 8 + 12 * index, width: 40, height: 30)])
            }
            units.append(try #require(try encoder.encode(last, changes: moved ? .unknown : .none)))
        }
        #expect(encoder.repeatPictures == 9)
        var byOpenH264 = Data()
        let byFFmpeg = try Pictures.decode(units, pixelFormat: "yuv420p") { stream in
            let raw = stream.deletingLastPathComponent().appendingPathComponent("openh264.yuv")
            let gst = try Tool.run(["gst-launch-1.0", "-q", "filesrc", "location=\(stream.path)", "!", "h264parse", "!", "openh264dec", "!",
                                    "video/x-raw,format=I420", "!", "filesink", "location=\(raw.path)"])
            #expect(gst.status == 0, "\(gst.stderr)")
            byOpenH264 = try Data(contentsOf: raw)
        }
        #expect(byFFmpeg.errors.isEmpty, "\(byFFmpeg.errors)")
        let (a, b) = (byFFmpeg.bytes, byOpenH264)
        let pictureBytes = Pictures.width * Pictures.height * 3 / 2
        #expect(a.count == 12 * pictureBytes && b.count == a.count, "FFmpeg \(a.count / pictureBytes), OpenH264 \(b.count / pictureBytes) pictures")
        let differing = zip(a, b).reduce(0) { $0 + ($1.0 == $1.1 ? 0 : 1) }
        #expect(differing == 0, "OpenH264 and FFmpeg differ in \(differing) bytes (\(preset), \(profile))")
    }

    /// CABAC: the skip flag's context starts where the slice's QP puts it, the less probable
    /// value first at low QPs, so the coder's every path is taken; FFmpeg decodes each repeat
    /// to the IDR's pixels.
    @Test(arguments: [0, 4, 12, 20, 26, 33, 45, 51])
    func aCABACRepeatDecodesAtAnyQP(qp: Int) throws {
        let encoder = try Self.encoder(preset: "veryfast")
        let first = try #require(try encoder.encode(Pictures.picture(0)))
        let sps = try SequenceParameterSet(try #require(first.nalUnits.first { $0.type == .sps }))
        let pps = try PictureParameterSet(try #require(first.nalUnits.first { $0.type == .pps }))
        #expect(pps.entropyCodingModeCABAC)
        #expect(RepeatPicture.supports(sps: sps, pps: pps))
        var units = [first]
        for frameNum in 1...3 {
            let slice = RepeatPicture.slice(sps: sps, pps: pps, frameNum: frameNum, qp: (qp + 17 * (frameNum - 1)) % 52)
            units.append(AccessUnit(codec: H264Codec(), nalUnits: [slice], isIDR: false, resolution: nil, timestamp: nil))
        }
        let decoded = try Pictures.decodeLuma(units)
        #expect(decoded.errors.isEmpty, "QP \(qp): \(decoded.errors)")
        try #require(decoded.pictures.count == 4)
        #expect(decoded.pictures.dropFirst().allSatisfy { $0 == decoded.pictures[0] }, "QP \(qp)")
    }

    /// More than one reference frame (preset faster: two): x264's list would no longer be the
    /// decoder's, so x264 codes the repeats itself, and the stream decodes as before.
    @Test func withMoreReferencesX264CodesTheRepeats() throws {
        let encoder = try Self.encoder(preset: "faster")
        var units = [try #require(try encoder.encode(Pictures.picture(0)))]
        let sps = try SequenceParameterSet(try #require(units[0].nalUnits.first { $0.type == .sps }))
        #expect(sps.maxNumRefFrames > 1)
        for index in 1...4 {
            var again = Pictures.picture(0)
            again.sequence = UInt64(index)
            units.append(try #require(try encoder.encode(again, changes: .none)))
        }
        #expect(encoder.repeatPictures == 0)
        #expect(units.dropFirst().allSatisfy { !$0.isIDR })
        let decoded = try Pictures.decodeLuma(units)
        #expect(decoded.errors.isEmpty, "\(decoded.errors)")
        #expect(decoded.pictures.count == 5)
    }

    /// Renumbering moves frame_num and nothing else: the header read back is the same but for
    /// it, and the slice's data after the header is bit for bit what it was.
    @Test func renumberingChangesFrameNumOnly() throws {
        let encoder = try Self.encoder(preset: "veryfast")
        let first = try #require(try encoder.encode(Pictures.picture(0)))
        let sps = try SequenceParameterSet(try #require(first.nalUnits.first { $0.type == .sps }))
        let pps = try PictureParameterSet(try #require(first.nalUnits.first { $0.type == .pps }))
        let second = try #require(try encoder.encode(Pictures.picture(1, rects: [.init(x: 0, y: 0, width: 99, height: 77)]), changes: .unknown))
        let slices = second.nalUnits.filter { $0.type == .slice }
        try #require(!slices.isEmpty)
        let maxFrameNum = 1 << sps.log2MaxFrameNum
        for slice in slices {
            let before = try SliceHeader(rbsp: slice.rbspPrefix(64), header: slice.header, sps: sps, pps: pps)
            for shift in [1, 2, 7, maxFrameNum - 1, maxFrameNum + 3] {
                let moved = try RepeatPicture.renumbered(slice, sps: sps, by: shift)
                var after = try SliceHeader(rbsp: moved.rbspPrefix(64), header: moved.header, sps: sps, pps: pps)
                #expect(Int(after.frameNum) == (Int(before.frameNum) + shift) % maxFrameNum)
                after.frameNum = before.frameNum
                #expect(after == before)
                // The RBSPs differ in frame_num's bits only: the same length, and no byte past the
                // header's first few changed.
                let (a, b) = (slice.rbsp(), moved.rbsp())
                #expect(a.count == b.count)
                #expect(a.dropFirst(8) == b.dropFirst(8))
                // Escaped again: no start code inside.
                #expect(!moved.escapedPayload.indices.dropLast(2).contains { i in
                    moved.escapedPayload[i] == 0 && moved.escapedPayload[i + 1] == 0 && moved.escapedPayload[i + 2] <= 2 })
            }
        }
    }
}
