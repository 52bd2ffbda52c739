import Foundation
import Media
import TestSupport
import Testing
@testable import H264

@Suite struct InputSnifferTests {
    /// Files FFmpeg writes from one second of test pattern, in each container it knows.
    static func made(_ format: String, ext: String, extra: [String] = []) throws -> [UInt8] {
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("clip.\(ext)")
        let r = try Tool.run(["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=10", "-t", "1"]
                             + extra + ["-f", format, out.path])
        #expect(r.status == 0, "\(r.stderr)")
        return [UInt8](try Data(contentsOf: out))
    }

    @Test func containersAndRawVideoFromFFmpegAreNamed() throws {
        let h264 = ["-c:v", "libx264", "-preset", "ultrafast"]
        let cases: [(String, String, [String], InputSniffer.Format)] = [
            ("mp4", "mp4", h264, .mp4),
            ("mov", "mov", h264, .mp4),
            ("matroska", "mkv", h264, .matroska),
            ("webm", "webm", ["-c:v", "libvpx", "-deadline", "realtime"], .matroska),
            ("mpegts", "ts", h264, .mpegTS),
            ("flv", "flv", h264, .flv),
            ("avi", "avi", h264, .avi),
            ("yuv4mpegpipe", "y4m", [], .y4m),
        ]
        for (format, ext, extra, expected) in cases {
            let bytes = try Self.made(format, ext: ext, extra: extra)
            #expect(InputSniffer.identify(bytes, atEnd: true) == .notAnnexB(expected), "\(format)")
            // The verdict never needs more than the window, and not the end of the input.
            #expect(InputSniffer.identify(bytes.prefix(InputSniffer.window), atEnd: false) == .notAnnexB(expected), "\(format)")
        }
    }

    @Test func annexBStreamsPass() throws {
        for stream in ConformanceStream.all {
            #expect(InputSniffer.identify(try stream.load(), atEnd: true) == .annexB, "\(stream)")
        }
        let fromFFmpeg = try Self.made("h264", ext: "h264", extra: ["-c:v", "libx264", "-preset", "ultrafast"])
        #expect(InputSniffer.identify(fromFFmpeg.prefix(4), atEnd: false) == .annexB)
        // Garbage before the first start code is the scanner's business, not a wrong format.
        #expect(InputSniffer.identify([0x12, 0x34, 0x56] + fromFFmpeg, atEnd: true) == .annexB)
        // An empty input is an empty stream.
        #expect(InputSniffer.identify([UInt8](), atEnd: true) == .annexB)
    }

    @Test func wavAndNoiseAreNotH264() throws {
        let wav = try Self.made("wav", ext: "wav", extra: ["-f", "lavfi", "-i", "sine=duration=1", "-map", "1:a"])
        #expect(InputSniffer.identify(wav, atEnd: true) == .notAnnexB(.riff))
        // Text with no start code: decided at the window, or at the end of a shorter input.
        let text = [UInt8](repeating: UInt8(ascii: "x"), count: InputSniffer.window + 10)
        #expect(InputSniffer.identify(text.prefix(1000), atEnd: false) == .needMore)
        #expect(InputSniffer.identify(text.prefix(1000), atEnd: true) == .notAnnexB(.noStartCode))
        #expect(InputSniffer.identify(text, atEnd: false) == .notAnnexB(.noStartCode))
    }

    @Test func aShortPrefixWaitsForMore() {
        // 'Y' could begin YUV4MPEG2, a lone 00 a start code, 0x47 a transport stream.
        #expect(InputSniffer.identify(Array("YUV".utf8), atEnd: false) == .needMore)
        #expect(InputSniffer.identify([0], atEnd: false) == .needMore)
        #expect(InputSniffer.identify([0x47] + [UInt8](repeating: 0xff, count: 200), atEnd: false) == .needMore)
        #expect(InputSniffer.identify(Array("YUV".utf8), atEnd: true) == .notAnnexB(.noStartCode))
    }

    @Test func theLineSaysWhatItIsAndWhatToDo() {
        #expect(InputSniffer.explain(.mp4, name: "in.mp4")
            == "in.mp4 is an MP4 file, not an Annex-B H.264 stream: extract its video with ffmpeg -i in.mp4 -c:v copy -bsf:v h264_mp4toannexb -f h264 OUT.h264 (or -c:v libx264 if it is not H.264)")
        #expect(InputSniffer.explain(.mpegTS, name: "my clip.ts").contains("ffmpeg -i 'my clip.ts' -c:v copy -f h264 OUT.h264"))
        #expect(InputSniffer.explain(.y4m, name: "stdin").hasSuffix("nalcast produce --source y4m:- -o OUT.h264"))
        #expect(InputSniffer.explain(.noStartCode, name: "x.bin") == "x.bin is not an Annex-B H.264 stream: no start code (00 00 01) in its first 64 KiB")
    }

    /// Fed a byte at a time (a pipe may give that little), the verdict is "more" until it
    /// is the final one, never a wrong one on the way; random bytes never trap.
    @Test func growingPrefixesOnlyEverSayMoreOrTheAnswer() throws {
        let files: [([UInt8], InputSniffer.Verdict)] = [
            (try Self.made("mp4", ext: "mp4", extra: ["-c:v", "libx264", "-preset", "ultrafast"]), .notAnnexB(.mp4)),
            (try Self.made("mpegts", ext: "ts", extra: ["-c:v", "libx264", "-preset", "ultrafast"]), .notAnnexB(.mpegTS)),
            (try Self.made("yuv4mpegpipe", ext: "y4m"), .notAnnexB(.y4m)),
            (try ConformanceStream.all[0].load(), .annexB),
        ]
        for (bytes, final) in files {
            for n in 0..<600 {
                let v = InputSniffer.identify(bytes.prefix(n), atEnd: false)
                #expect(v == .needMore || v == final, "\(final) at \(n) bytes: \(v)")
            }
        }
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let count = Int.random(in: 0..<600, using: &rng)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
            // Often start like something it knows.
            let heads: [[UInt8]] = [[0x47], Array("RIFF".utf8), Array("YUV4".utf8), [0, 0], [0x1a, 0x45], Array("FLV".utf8), []]
            bytes = heads.randomElement(using: &rng)! + bytes
            _ = InputSniffer.identify(bytes, atEnd: Bool.random(using: &rng))
        }
    }
}

