import Foundation
import H264
import Media
import Output
import Testing
import TestSupport
@testable import Muxing

/// The MPEG-TS listener's muxer against FFmpeg: H.264 access units and AAC packets (both made
/// by ffmpeg here) in, TS units out that ffprobe and ffmpeg read cleanly, each whole TS
/// packets, each IDR unit an entry point with PAT and PMT first.
@Suite struct TSStreamMuxerTests {
    /// 2 s of 25 fps test pattern, an IDR every 25 frames, no B-frames: nalcast's shape.
    static func accessUnits(in dir: URL) throws -> [AccessUnit] {
        let path = dir.appendingPathComponent("v.h264").path
        let r = try Tool.run(["ffmpeg", "-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25:duration=2",
                              "-c:v", "libx264", "-preset", "ultrafast", "-bf", "0", "-g", "25", "-pix_fmt", "yuv420p", "-y", path])
        try #require(r.status == 0, "\(r.stderr)")
        var parser = AnnexBParser()
        return parser.push(Array(try Data(contentsOf: URL(fileURLWithPath: path)))) + parser.finish()
    }

    /// 2 s of a 440 Hz tone as AAC-LC 48 kHz stereo: raw frames on the 90 kHz line, and the
    /// AudioSpecificConfig.
    static func audio(in dir: URL) throws -> (AudioFormat, [AudioPacket]) {
        let aac = try AACFrames.tone(seconds: 2, in: dir)
        let packets = aac.frames.enumerated().map { i, frame in
            AudioPacket(data: frame, mediaTime: MediaTime(ticks: Int64(i) * 1024 * 90_000 / 48_000))
        }
        return (AudioFormat(extradata: aac.config), packets)
    }

    @Test func videoAndAudioUnitsAreWholePacketsThatFFmpegReadsCleanly() throws {
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let units = try Self.accessUnits(in: dir)
        let (format, packets) = try Self.audio(in: dir)
        try #require(units.count == 50 && packets.count > 90)
        let muxer = try TSStreamMuxer(audio: format)
        var out: [UInt8] = []
        var next = 0
        for (i, unit) in units.enumerated() {
            let pts = UInt64(i * 3600)
            // The sound up to this picture's time, as the stream server gathers it.
            var audio: [AudioPacket] = []
            while next < packets.count, packets[next].mediaTime.ticks <= Int64(pts) {
                audio.append(packets[next])
                next += 1
            }
            let ts = try #require(try muxer.package(unit, pts90k: pts, audio: audio))
            #expect(ts.count % 188 == 0 && !ts.isEmpty)
            #expect(stride(from: 0, to: ts.count, by: 188).allSatisfy { ts[$0] == 0x47 })
            if unit.isIDR {
                // PAT and PMT before the picture: a reader starting here learns the program first.
                let pids = stride(from: 0, to: ts.count, by: 188).map { (Int(ts[$0 + 1] & 0x1F) << 8) | Int(ts[$0 + 2]) }
                let video = try #require(pids.firstIndex(of: 0x100))
                #expect(pids[..<video].contains(0) && pids[..<video].contains(0x1000), "IDR unit \(i): PIDs \(pids.prefix(4))")
            }
            out += ts
        }
        #expect(muxer.droppedAudioPackets == 0 && muxer.droppedAccessUnits == 0)
        let path = dir.appendingPathComponent("out.ts").path
        try Data(out).write(to: URL(fileURLWithPath: path))
        let probe = try Tool.run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_name,sample_rate,channels", "-of", "csv=p=0", path])
        // (ffprobe lists the streams once for the program, once alone.)
        #expect(Set(probe.stdout.split(separator: "\n").map(String.init)) == ["h264", "aac,48000,2"], "\(probe.stdout) \(probe.stderr)")
        #expect(try MediaProbe.decodeErrors(path) == "")
        #expect(try MediaProbe.video(path)?.frames == 50)
    }

    @Test func everyIDRUnitStartsWithPATAndPMTEvenAfterAnotherIDR() throws {
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let units = try Self.accessUnits(in: dir)
        let muxer = try TSStreamMuxer(audio: nil)
        // Two IDRs in a row (a forced IDR right after a natural one, or --keyint 1).
        for (i, unit) in [units[0], units[25], units[1]].enumerated() {
            let ts = try #require(try muxer.package(unit, pts90k: UInt64(i * 3600), audio: []))
            let pids = stride(from: 0, to: ts.count, by: 188).map { (Int(ts[$0 + 1] & 0x1F) << 8) | Int(ts[$0 + 2]) }
            let video = try #require(pids.firstIndex(of: 0x100))
            if unit.isIDR {
                #expect(pids[..<video].contains(0) && pids[..<video].contains(0x1000), "unit \(i): PIDs \(pids.prefix(4))")
            }
        }
    }

    @Test func nothingBeforeTheFirstEntryPoint() throws {
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let units = try Self.accessUnits(in: dir)
        let muxer = try TSStreamMuxer(audio: nil)
        #expect(try muxer.package(units[1], pts90k: 0, audio: []) == nil)
        #expect(muxer.droppedAccessUnits == 1 && !muxer.headerWritten)
        #expect(try muxer.package(units[0], pts90k: 3600, audio: []) != nil)
        // Decode times must rise: a unit not after the last is left out and counted.
        #expect(try muxer.package(units[1], pts90k: 3600, audio: []) == nil)
        #expect(muxer.droppedAccessUnits == 2)
    }
}
