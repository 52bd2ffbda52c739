import Foundation
import Testing

/// The segment disk filling up, as `ulimit -f` (RLIMIT_FSIZE: writes past it fail with EFBIG
/// and raise SIGXFSZ, which kills by default). Mounting a small tmpfs needs privileges the CI
/// may not have; the file-size limit gives the same error path to every machine.
@Suite(.serialized) struct ReliabilityDiskTests {
    /// 90 frames at 150 kb/s (three small 1 s segments), then 90 frames at 3 Mb/s (segments
    /// larger than the limit).
    static func input(_ dir: URL) throws -> URL {
        let small = try Streams.ffmpeg(frames: 90, keyint: 30, bitrate: "150k")
        let large = try Streams.ffmpeg(frames: 90, keyint: 30, bitrate: "3M")
        return try inputFile(small + large, in: dir)
    }

    /// One clear error (exit 74 naming EFBIG's "File too large"); the segments finished before
    /// are intact; the one being written is cut back to its last whole access unit (or removed
    /// when nothing in it was whole), never left as `.part`; stdout gets the whole stream.
    /// For MP4 segments (the default: the muxer holds a fragment until it closes, so the
    /// failure often comes as the segment ends) and Annex-B ones (`.h264`).
    @Test(arguments: [("100", ["--sink-queue", "8k"]), ("64", [])], [[], ["--segment-name", "%n.h264"]])
    func segmentDiskFullIsOneErrorAndStdoutGoesOn(limit: (kb: String, extra: [String]), name: [String]) throws {
        let (limitKB, extra) = (limit.kb, limit.extra + name)
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try Self.input(dir)
        let segs = dir.appendingPathComponent("segs").path
        let command = ["ulimit -f \(limitKB) && exec \"$0\" \"$@\"", Run.nalcast, "consume", "--from", input.path, "--segments", segs,
                       "--segment-duration", "1s", "-o", "-"] + extra
        let r = try Run.program("/bin/sh", ["-c"] + command, timeout: 60)
        #expect(r.status == 74, "exit \(r.status): \(r.stderr)")  // not 128+SIGXFSZ
        #expect(r.stderr.split(separator: "\n").filter { $0.contains("File too large") }.count == 1, "\(r.stderr)")
        #expect(r.stdout == (try Data(contentsOf: input)), "stdout did not get the whole stream")
        let names = try FileManager.default.contentsOfDirectory(atPath: segs).sorted()
        #expect(!names.contains { $0.hasSuffix(".part") || $0.hasSuffix(".idx") }, "\(names)")
        #expect(names.count >= 3, "\(names)")
        let limit = (Int(limitKB) ?? 0) * 1024
        for name in names {
            let path = segs + "/" + name
            let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            #expect(size > 0 && size < limit, "\(name): \(size) bytes")
            try ConsumeProducerTests.checkSegment(path)
        }
    }

    /// `produce -o FILE` on a full disk: the failed write is one error line, even with `-q`,
    /// and the exit code is 74 (operations.md), not 0.
    @Test func produceOutputDiskFullIsOneErrorAndExit74() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out.h264").path
        let command = ["ulimit -f 8 && exec \"$0\" \"$@\"", Run.nalcast, "produce", "--frames", "60", "--no-realtime", "--size", "320x240",
                       "-o", out, "-q"]
        let r = try Run.program("/bin/sh", ["-c"] + command, timeout: 60)
        #expect(r.status == 74, "exit \(r.status): \(r.stderr)")
        #expect(r.stderr.split(separator: "\n").filter { $0.contains("File too large") }.count == 1, "\(r.stderr)")
    }
}
