import TestSupport
import Capture
import Foundation
import Testing

@Suite struct RawSourceTests {
    @Test func regularFileOfPartialFramesIsRefusedUpFront() throws {
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("cut.nv12")
        try Data(count: 16 * 8 * 3 / 2 * 3 + 10).write(to: url)
        let expected = CaptureError.rawSizeNotWholeFrames(path: url.path, fileSize: 586, frameSize: 192)
        #expect(throws: expected) {
            try RawSource(path: url.path, width: 16, height: 8, pixelFormat: .nv12, frameRate: FrameRate(30))
        }
        #expect(expected.description.contains("586") && expected.description.contains("192"))
    }

    @Test func readsWholeFramesWithTimes() throws {
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("ok.bgra")
        var bytes: [UInt8] = []
        for i in 0..<3 { bytes += [UInt8](repeating: UInt8(i + 1), count: 4 * 2 * 4) }
        try Data(bytes).write(to: url)
        let source = try RawSource(path: url.path, width: 4, height: 2, pixelFormat: .bgra, frameRate: FrameRate(25))
        var seen: [(UInt64, UInt64, UInt8)] = []
        while let frame = try source.nextFrame() { seen.append((frame.sequence, frame.pts90k, frame.byte(plane: 0, x: 15, y: 1))) }
        #expect(seen.map(\.0) == [0, 1, 2])
        #expect(seen.map(\.1) == [0, 3600, 7200])
        #expect(seen.map(\.2) == [1, 2, 3])
    }

    @Test func truncatedFrameFromAPipeIsAnErrorAfterTheGoodFrames() throws {
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let fifo = dir.appendingPathComponent("pipe").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let frameSize = 16 * 8 * 3 / 2
        // A writer that sends two frames and a half.
        let writer = Process()
        writer.executableURL = URL(fileURLWithPath: "/bin/sh")
        writer.arguments = ["-c", "head -c \(frameSize * 2 + 50) /dev/zero > '\(fifo)'"]
        try writer.run()
        defer { writer.waitUntilExit() }
        let source = try RawSource(path: fifo, width: 16, height: 8, pixelFormat: .i420, frameRate: FrameRate(30))
        #expect(try source.nextFrame()?.sequence == 0)
        #expect(try source.nextFrame()?.sequence == 1)
        #expect(throws: CaptureError.truncatedFrame(source: "raw", frame: 2, got: 50, expected: frameSize)) { try source.nextFrame() }
    }

    @Test func pipeInputGetsABufferOfAFrameUpTo256KiB() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let getPipeSize: Int32 = 1032  // F_GETPIPE_SZ
        let before = fcntl(fds[1], getPipeSize)
        // The kernel allows up to pipe-max-size (1 MiB by default) without privilege.
        let maxSize = (try? String(contentsOfFile: "/proc/sys/fs/pipe-max-size", encoding: .utf8))
            .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0
        _ = try RawSource(path: "/dev/fd/\(fds[0])", width: 1920, height: 1080, pixelFormat: .i420, frameRate: FrameRate(30))
        if maxSize >= 256 << 10 || getuid() == 0 {
            #expect(before < 256 << 10)
            #expect(fcntl(fds[1], getPipeSize) == 256 << 10)
        }
        // A small frame asks for no more than the default.
        var small: [Int32] = [0, 0]
        #expect(pipe(&small) == 0)
        defer { close(small[0]); close(small[1]) }
        _ = try RawSource(path: "/dev/fd/\(small[0])", width: 16, height: 8, pixelFormat: .i420, frameRate: FrameRate(30))
        #expect(fcntl(small[1], getPipeSize) == 64 << 10)
    }

    @Test func missingFileIsNamed() {
        #expect(throws: CaptureError.system(function: "open", path: "/nonexistent/x.raw", errno: ENOENT)) {
            try RawSource(path: "/nonexistent/x.raw", width: 16, height: 8, pixelFormat: .i420, frameRate: FrameRate(30))
        }
    }
}
