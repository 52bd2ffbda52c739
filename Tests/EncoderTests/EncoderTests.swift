import Media
import TestSupport
import Capture
import Encoder
import Foundation
import H264
import Synchronization
import Testing

/// Encodes every frame of `source` (converted to I420) and returns the access units.
private func encodeAll(_ source: some FrameSource, encoder: H264Encoder, limit: Int = .max) throws -> [AccessUnit] {
    let converter = ColorConverter()
    var out: [AccessUnit] = []
    while out.count < limit, let frame = try source.nextFrame() {
        if let au = try encoder.encode(try converter.convert(frame)) { out.append(au) }
    }
    out.append(contentsOf: try encoder.flush())
    return out
}

private func write(_ units: [AccessUnit], to url: URL) throws {
    var bytes: [UInt8] = []
    for au in units { for nal in au.nalUnits { bytes.append(contentsOf: nal.wire) } }
    try Data(bytes).write(to: url)
}

/// Average PSNR (all planes) that ffmpeg's `psnr` filter reports between two inputs,
/// compared frame by frame (a raw H.264 stream has no timestamps to pair them by).
private func psnr(decoded: URL, reference: [String]) throws -> Double {
    let result = try Tool.run(["ffmpeg", "-hide_banner", "-nostats", "-f", "h264", "-i", decoded.path] + reference
        + ["-lavfi", "[0:v]settb=1/30,setpts=N[a];[1:v]settb=1/30,setpts=N[b];[a][b]psnr", "-f", "null", "-"])
    #expect(result.status == 0, "\(result.stderr)")
    guard let range = result.stderr.range(of: #"average:([0-9.]+|inf)"#, options: .regularExpression) else {
        Issue.record("no PSNR in ffmpeg output: \(result.stderr)")
        return 0
    }
    let value = result.stderr[range].dropFirst("average:".count)
    return value == "inf" ? 100 : Double(value) ?? 0
}

@Suite struct EncoderTests {
    @Test func testPatternDecodesWithTimestampsAndEntryPoints() throws {
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try TestPatternSource(width: 320, height: 240, frameRate: FrameRate(30), realtime: false, frameLimit: 120)
        let encoder = try H264Encoder(parameters: .init(width: 320, height: 240, frameRate: FrameRate(30)))
        let units = try encodeAll(source, encoder: encoder)
        #expect(units.count == 120)

        var lastSequence: UInt64?
        var lastPTS: UInt64?
        for (index, au) in units.enumerated() {
            #expect(au.nalUnits.first?.type == .accessUnitDelimiter, "AU \(index) starts with \(au.nalTypes)")
            #expect(au.resolution == Resolution(width: 320, height: 240))
            if au.isIDR {
                #expect(au.isEntryPoint, "IDR AU \(index) without SPS+PPS: \(au.nalTypes)")
            }
            let stamps = au.nalUnits.filter { $0.type == .sei }.compactMap { StreamTimestamp(sei: $0) }
            #expect(stamps.count == 1, "AU \(index): \(stamps.count) timestamp SEIs")
            guard let stamp = stamps.first else { continue }
            #expect(stamp == au.timestamp)
            #expect(stamp.isKeyframe == au.isIDR)
            if let lastSequence { #expect(stamp.sequence == lastSequence + 1) }
            if let lastPTS { #expect(stamp.pts90k == lastPTS + 3000) }
            lastSequence = stamp.sequence
            lastPTS = stamp.pts90k
        }
        #expect(units.first?.timestamp?.pts90k == 0)
        // Two seconds per GOP at 30 fps.
        #expect(units.indices.filter { units[$0].isIDR } == [0, 60])
        #expect(units[1].parameterSets.map(\.type) == [.sps, .pps])

        let file = dir.appendingPathComponent("pattern.h264")
        try write(units, to: file)
        let decode = try Tool.run(["ffmpeg", "-v", "error", "-f", "h264", "-i", file.path, "-f", "null", "-"])
        #expect(decode.status == 0)
        #expect(decode.stderr.isEmpty, "ffmpeg: \(decode.stderr)")
        let probe = try Tool.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0",
                                  "-show_entries", "stream=width,height,nb_read_frames,r_frame_rate", "-of", "default=nw=1", file.path])
        #expect(probe.stdout.contains("width=320"))
        #expect(probe.stdout.contains("height=240"))
        #expect(probe.stdout.contains("nb_read_frames=120"), "\(probe.stdout)")
        #expect(probe.stdout.contains("r_frame_rate=30/1"), "\(probe.stdout)")
    }

    @Test func y4mInputKeepsQuality() throws {
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let y4m = dir.appendingPathComponent("in.y4m")
        let gen = try Tool.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30",
                                "-frames:v", "60", "-pix_fmt", "yuv420p", "-f", "yuv4mpegpipe", "-y", y4m.path])
        #expect(gen.status == 0, "\(gen.stderr)")
        let source = try Y4MSource(path: y4m.path)
        let encoder = try H264Encoder(parameters: .init(width: 640, height: 360, frameRate: source.frameRate))
        let units = try encodeAll(source, encoder: encoder)
        #expect(units.count == 60)
        let out = dir.appendingPathComponent("out.h264")
        try write(units, to: out)
        let db = try psnr(decoded: out, reference: ["-i", y4m.path])
        #expect(db >= 35, "PSNR \(db) dB")
    }

    @Test func bgraInputKeepsQuality() throws {
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let raw = dir.appendingPathComponent("in.bgra")
        let gen = try Tool.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30",
                                "-frames:v", "60", "-pix_fmt", "bgra", "-f", "rawvideo", "-y", raw.path])
        #expect(gen.status == 0, "\(gen.stderr)")
        let source = try RawSource(path: raw.path, width: 640, height: 360, pixelFormat: .bgra, frameRate: FrameRate(30))
        let encoder = try H264Encoder(parameters: .init(width: 640, height: 360, frameRate: FrameRate(30)))
        let units = try encodeAll(source, encoder: encoder)
        #expect(units.count == 60)
        let out = dir.appendingPathComponent("out.h264")
        try write(units, to: out)
        let db = try psnr(decoded: out, reference: ["-f", "rawvideo", "-pix_fmt", "bgra", "-s", "640x360", "-framerate", "30", "-i", raw.path])
        #expect(db >= 35, "PSNR \(db) dB")
    }

    @Test func sizeChangeStartsANewStreamAtTheNewSize() throws {
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let small = try TestPatternSource(width: 320, height: 240, realtime: false, frameLimit: 10)
        let large = try TestPatternSource(width: 640, height: 360, realtime: false, frameLimit: 10)
        let encoder = try H264Encoder(parameters: .init(width: 320, height: 240, frameRate: FrameRate(30)))
        let units = try encodeAll(small, encoder: encoder) + encodeAll(large, encoder: encoder)
        #expect(units.count == 20)
        #expect(units[10].isEntryPoint)
        #expect(units[10].resolution == Resolution(width: 640, height: 360))
        #expect(!units[11].isIDR)
        #expect(encoder.parameters.width == 640)
        let out = dir.appendingPathComponent("out.h264")
        try write(units, to: out)
        let probe = try Tool.run(["ffprobe", "-v", "error", "-show_entries", "frame=width,height", "-of", "csv=p=0", out.path])
        let sizes = probe.stdout.split(separator: "\n").map { String($0.trimmingCharacters(in: CharacterSet(charactersIn: ", "))) }
        #expect(sizes.count == 20, "\(probe.stdout)")
        #expect(Set(sizes) == ["320,240", "640,360"])
        #expect(sizes.first == "320,240" && sizes.last == "640,360")
    }

    @Test func requestIDRMakesTheNextFrameAnIDR() throws {
        let source = try TestPatternSource(width: 320, height: 240, realtime: false)
        let encoder = try H264Encoder(parameters: .init(width: 320, height: 240, frameRate: FrameRate(30)))
        var types: [Bool] = []
        for i in 0..<10 {
            if i == 5 { encoder.requestIDR() }
            let frame = try #require(try source.nextFrame())
            let au = try #require(try encoder.encode(frame))
            types.append(au.isIDR)
            if i == 5 { #expect(au.isEntryPoint && au.timestamp?.isKeyframe == true) }
        }
        #expect(types == [true, false, false, false, false, true, false, false, false, false])
    }

    @Test func reconfigureChangesTheBitrate() throws {
        // Noise defeats prediction, so the frame size follows the rate control.
        let width = 320, height = 240
        let layout = PixelFormat.i420.packedLayout(width: width, height: height)
        let size = PixelFormat.i420.frameByteCount(width: width, height: height)
        var seed: UInt64 = 0x9e3779b97f4a7c15
        func noiseFrame(_ index: Int) -> Frame {
            let buffer = FrameBuffer(capacity: size)
            for i in 0..<size {
                seed = seed &* 6364136223846793005 &+ 1442695040888963407
                buffer.base[i] = UInt8(truncatingIfNeeded: seed >> 56)
            }
            return Frame(width: width, height: height, format: .i420, buffer: buffer, planes: layout,
                         sequence: UInt64(index), captureTimeNs: 0, pts90k: UInt64(index) * 3000)
        }
        var parameters = H264Encoder.Parameters(width: width, height: height, frameRate: FrameRate(30))
        parameters.bitrate = 2_000_000
        parameters.keyint = 1000
        let encoder = try H264Encoder(parameters: parameters)
        var before = 0, after = 0
        for i in 0..<40 {
            if i == 20 { try encoder.reconfigure(bitrate: 200_000) }
            let au = try #require(try encoder.encode(noiseFrame(i)))
            if (10..<20).contains(i) { before += au.byteCount }
            if (30..<40).contains(i) { after += au.byteCount }
        }
        #expect(encoder.parameters.bitrate == 200_000)
        #expect(after * 3 < before, "bytes before \(before), after \(after)")
        #expect(throws: EncoderError.badParameter(name: "bitrate", value: "0")) { try encoder.reconfigure(bitrate: 0) }
    }

    @Test func badSettingsAreNamed() throws {
        var p = H264Encoder.Parameters(width: 320, height: 240, frameRate: FrameRate(30))
        p.preset = "warp"
        #expect(throws: EncoderError.badPresetOrTune(preset: "warp", tune: "zerolatency")) { try H264Encoder(parameters: p) }
        p.preset = "veryfast"
        p.profile = "cinema"
        #expect(throws: EncoderError.badProfile("cinema")) { try H264Encoder(parameters: p) }
        p.profile = "high"
        p.width = 321
        #expect(throws: EncoderError.badParameter(name: "size", value: "321x240")) { try H264Encoder(parameters: p) }

        let encoder = try H264Encoder(parameters: .init(width: 64, height: 64, frameRate: FrameRate(30)))
        let layout = PixelFormat.nv12.packedLayout(width: 64, height: 64)
        let frame = Frame(width: 64, height: 64, format: .nv12, buffer: FrameBuffer(capacity: 64 * 96), planes: layout,
                          sequence: 0, captureTimeNs: 0, pts90k: 0)
        #expect(throws: EncoderError.notI420(.nv12)) { try encoder.encode(frame) }
    }

    @Test func logReceivesX264Messages() throws {
        final class Lines: Sendable {
            let lines = Mutex<[String]>([])
        }
        let collected = Lines()
        var p = H264Encoder.Parameters(width: 320, height: 240, frameRate: FrameRate(30))
        p.bitrate = 100_000
        p.vbvMilliseconds = 1  // smaller than one frame: x264 warns and enlarges it
        _ = try H264Encoder(parameters: p) { line in collected.lines.withLock { $0.append(line) } }
        let lines = collected.lines.withLock { $0 }
        #expect(lines.contains { $0.hasPrefix("x264 warning:") && $0.contains("VBV buffer size") }, "\(lines)")
    }
}
