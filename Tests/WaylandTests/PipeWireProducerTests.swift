import Foundation
import TestSupport
import Testing

/// The part of `MutterCaptureTests` that needs a PipeWire source doing what headless mutter 43
/// does not (its window casts keep their first size, its pointer moves come with pixels):
/// `Tests/Fixtures/wayland/pw-video-src.c`, built here, on the session's PipeWire.
extension MutterCaptureTests {
    func checkProducer(_ session: MutterSession, _ dir: URL) throws {
        let source = try buildProducer(dir)
        try checkSizeChangeAndPointerAlone(session, dir, source)
        try checkResizesWhileReading(session, dir, source)
        try checkDMABUFOnly(session, dir, source)
        try checkDamage(session, dir, source)
    }

    /// The node's damage metadata (SPA_META_VideoDamage, as mutter 44 and later send it; mutter
    /// 43 here sends none): a picture read in place has only its damaged rectangles converted
    /// into the picture before. A rectangle with its damage is in the picture; one whose
    /// damage says less than changed (no compositor should) shows only the part it says, the
    /// rest kept from the picture before, which is what shows that the damage was used; a
    /// whole new colour (all damage) is all of it again.
    private func checkDamage(_ session: MutterSession, _ dir: URL, _ source: String) throws {
        let (producer, control, _) = try startSource("nalcast-test-damage", session, dir, source)
        defer { producer.signal(SIGTERM); producer.wait() }
        let file = dir.appendingPathComponent("damage.h264")
        let produce = try Background(Self.nalcast, ["produce", "--source", "pipewire:nalcast-test-damage", "--no-cursor", "--idle-fps", "0",
                                                    "-o", file.path], environment: session.environment)
        #expect(produce.waitFor("320x240 bgra, on change"), "\(produce.stderr)")
        let red: RGB = (255, 0, 0), blue: RGB = (0, 0, 255), green: RGB = (0, 255, 0), yellow: RGB = (255, 255, 0)
        try #require(try waitForPicture(file, left: red, right: red, width: 320, height: 240), "\(produce.stderr)")
        // Inside each box, away from its edges (x264 blurs them).
        let topLeft = (x: 8, y: 8, w: 140, h: 100), bottomRight = (x: 172, y: 132, w: 140, h: 100), saidCorner = (x: 164, y: 4, w: 24, h: 24)
        try send("rect 0 0 160 120 0000ff", to: control)
        #expect(try waitForLastPicture(file, width: 320, height: 240) {
            pixelsOff($0, width: 320, box: topLeft, from: blue) == 0 && pixelsOff($0, width: 320, box: bottomRight, from: red) == 0
        }, "\(produce.stderr)")
        // The right half green, its damage the 32x32 at its top-left corner alone.
        try send("rect 160 0 160 240 00ff00 160 0 32 32", to: control)
        #expect(try waitForLastPicture(file, width: 320, height: 240) {
            pixelsOff($0, width: 320, box: saidCorner, from: green) == 0 && pixelsOff($0, width: 320, box: bottomRight, from: red) == 0
                && pixelsOff($0, width: 320, box: topLeft, from: blue) == 0
        }, "\(produce.stderr)")
        try send("color ffff00", to: control)
        #expect(try waitForLastPicture(file, width: 320, height: 240) {
            pixelsOff($0, width: 320, box: bottomRight, from: yellow) == 0 && pixelsOff($0, width: 320, box: topLeft, from: yellow) == 0
        }, "\(produce.stderr)")
        produce.signal(SIGINT)
        #expect(produce.wait(timeout: 20) == 0, "\(produce.stderr)")
    }

    /// Sizes one after another while the frames are read where PipeWire put them (no pointer
    /// drawn, so no copy): each new size frees the stream's buffers, and one a frame still
    /// reads is freed only once that frame is released. The pictures go on, the last has the
    /// last size and colour, and `produce` ends cleanly.
    private func checkResizesWhileReading(_ session: MutterSession, _ dir: URL, _ source: String) throws {
        let (producer, control, events) = try startSource("nalcast-test-resizes", session, dir, source)
        defer { producer.signal(SIGTERM); producer.wait() }
        let file = dir.appendingPathComponent("resizes.h264")
        let produce = try Background(Self.nalcast, ["produce", "--source", "pipewire:nalcast-test-resizes", "--no-cursor", "--idle-fps", "0",
                                                    "-o", file.path], environment: session.environment)
        #expect(produce.waitFor("320x240 bgra, on change"), "\(produce.stderr)")
        // The first picture, red at 320x240, before any new size: FFmpeg scales every picture
        // of the file to the first one's size, and the checks below decode at 320x240. The line
        // above says nalcast has the format, not a picture: the source streams only after it
        // (on a loaded machine, after the first sizes below had come), and a picture it queued
        // is freed by the next renegotiation unless nalcast took it first, so the file could
        // begin at 336x248, where no decode at 320x240 ever showed the green.
        try #require(try waitForPicture(file, left: (255, 0, 0), right: (255, 0, 0), width: 320, height: 240), "\(produce.stderr)")
        // Each size once it is the stream's (the source's "format W H"), not on a clock: sizes
        // sent faster than the source reads them would be one renegotiation, not forty.
        for step in 0..<40 {
            let size = "\(320 + step % 4 * 16) \(240 + step % 3 * 8)"
            try send("size \(size)", to: control)
            try send("color \(step % 2 == 0 ? "ff0000" : "0000ff")", to: control)
            try #require(waitForFormat(size, in: events), "\(producer.stderr)")
        }
        // The last colour once the last size is the stream's, so that no buffer of the size
        // before carries it.
        try send("size 368 256", to: control)
        try #require(waitForFormat("368 256", in: events), "\(producer.stderr)")
        try send("color 00ff00", to: control)
        // FFmpeg scales every picture to the first one's size: a flat colour stays itself.
        #expect(try waitForPicture(file, left: (0, 255, 0), right: (0, 255, 0), width: 320, height: 240),
                "\(produce.stderr)\npictures: \((try? pictureSizes(file)) ?? [])")
        #expect(try pictureSizes(file).last == "368x256", "\(produce.stderr)")
        produce.signal(SIGINT)
        #expect(produce.wait(timeout: 20) == 0, "\(produce.stderr)")
        let resized = produce.stderr.split(separator: "\n").filter { $0.hasPrefix("nalcast: pipewire: the stream is now ") }
        #expect(resized.count >= 2, "\(produce.stderr)")
        // Every picture the source sent is accounted for: taken, replaced by a newer one, or
        // unread (the next size took its buffer back before nalcast took it; or the end).
        let report = produce.stderr.firstMatch(of: /(\d+) pictures from node \d+: (\d+) taken, (\d+) replaced by a newer one first(?:, (\d+) unread)?/)
        #expect(report.map { Int($0.1)! == Int($0.2)! + Int($0.3)! + ($0.4.map { Int($0)! } ?? 0) } == true, "\(produce.stderr)")
    }

    /// A new size: the next picture has it and is an IDR with a new SPS. A pointer move alone
    /// (a buffer without pixels): a frame of its own, the pointer where it went and the
    /// picture back where it was.
    private func checkSizeChangeAndPointerAlone(_ session: MutterSession, _ dir: URL, _ source: String) throws {
        let (producer, control, _) = try startSource("nalcast-test-source", session, dir, source)
        defer { producer.signal(SIGTERM); producer.wait() }
        let file = dir.appendingPathComponent("source.h264")
        let produce = try Background(Self.nalcast, ["produce", "--source", "pipewire:nalcast-test-source", "--idle-fps", "5", "-o", file.path],
                                     environment: session.environment)
        #expect(produce.waitFor("320x240 bgra, on change"), "\(produce.stderr)")
        try send("color 0000ff", to: control)
        #expect(try waitForPicture(file, left: (0, 0, 255), right: (0, 0, 255), width: 320, height: 240), "\(produce.stderr)")
        let black: RGB = (0, 0, 0), blue: RGB = (0, 0, 255)
        // The pointer is a 16x16 black square from its hotspot; its inside (x264 blurs edges).
        let first = (x: 102, y: 102, w: 12, h: 12), second = (x: 202, y: 52, w: 12, h: 12), firstWhole = (x: 100, y: 100, w: 16, h: 16)
        try send("pointer 100 100", to: control)
        #expect(try waitForLastPicture(file, width: 320, height: 240) { pixelsOff($0, width: 320, box: first, from: black) == 0 }, "\(produce.stderr)")
        try send("pointer 200 50", to: control)
        #expect(try waitForLastPicture(file, width: 320, height: 240) {
            pixelsOff($0, width: 320, box: second, from: black) == 0 && pixelsOff($0, width: 320, box: firstWhole, from: blue) == 0
        }, "\(produce.stderr)")

        try send("size 400 300", to: control)
        #expect(produce.waitFor("pipewire: the stream is now 400x300 bgra"), "\(produce.stderr)")
        try Wait.until(timeout: 20, every: 0.2) { try pictureSizes(file).last == "400x300" }
        produce.signal(SIGINT)
        #expect(produce.wait(timeout: 20) == 0, "\(produce.stderr)")
        let units = try inspect(file)
        let resized = units.firstIndex { $0.size == "400x300" }
        #expect(units.first?.size == "320x240" && resized != nil, "\(units.map(\.size))")
        if let resized {
            #expect(units[resized].idr && units[resized].nalTypes.contains(7), "\(units[resized])")
            #expect(units[resized...].allSatisfy { $0.size == "400x300" }, "\(units.map(\.size))")
        }
        // The two moves came as buffers without pixels, each drawn in a frame of its own.
        let report = produce.stderr.firstMatch(of: /(\d+) buffers without pixels, (\d+) pointer changes drawn \((\d+) frames for the pointer alone\)/)
        #expect(report.map { Int($0.1)! >= 2 && Int($0.2)! >= 2 && Int($0.3)! >= 2 } == true, "\(produce.stderr)")
    }

    /// A node that offers DMA-BUF buffers only: the link fails on the server, and nalcast
    /// says so in one line and exits 69 instead of waiting for frames.
    private func checkDMABUFOnly(_ session: MutterSession, _ dir: URL, _ source: String) throws {
        let (producer, _, _) = try startSource("nalcast-test-dmabuf", session, dir, source, extra: ["dmabuf"])
        defer { producer.signal(SIGTERM); producer.wait() }
        let produce = try Background(Self.nalcast, ["produce", "--source", "pipewire:nalcast-test-dmabuf", "-o", "/dev/null"],
                                     environment: session.environment)
        #expect(produce.wait(timeout: 20) == 69, "\(produce.stderr)")
        let lines = produce.stderr.split(separator: "\n").map(String.init)
        #expect(lines.last?.hasPrefix("nalcast: pipewire: PipeWire could not link node ") == true
                && lines.last?.hasSuffix("(error alloc buffers: Invalid argument): the node offers no buffers nalcast can map (DMA-BUF only?); "
                                         + "it needs a source that offers shared memory (memfd)") == true, "\(produce.stderr)")
        #expect(lines.dropLast().allSatisfy { $0.hasPrefix("nalcast: capturing PipeWire node ") }, "\(produce.stderr)")
    }

    private func buildProducer(_ dir: URL) throws -> String {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/wayland/pw-video-src.c")
        let flags = try Tool.run(["pkg-config", "--cflags", "--libs", "libpipewire-0.3"]).stdout.split(whereSeparator: { $0 == " " || $0 == "\n" })
            .map(String.init)
        let binary = dir.appendingPathComponent("pw-video-src").path
        let built = try Tool.run(["cc", "-O1", "-o", binary, source.path] + flags)
        guard built.status == 0 else { throw MediaServerError("building pw-video-src: \(built.stderr)") }
        return binary
    }

    /// pw-video-src as node `name`, 320x240, once its node is there: the process, its control
    /// FIFO and the file of what it prints.
    private func startSource(_ name: String, _ session: MutterSession, _ dir: URL, _ source: String,
                             extra: [String] = []) throws -> (Background, control: URL, events: URL) {
        let control = dir.appendingPathComponent("\(name).control"), events = dir.appendingPathComponent("\(name).out")
        let producer = try Background(source, [name, "320", "240", control.path] + extra, stdoutTo: events, environment: session.environment)
        #expect(waitForLine("node ", in: events), "\(producer.stderr)")
        return (producer, control, events)
    }

    private func send(_ line: String, to control: URL) throws {
        let fd = open(control.path, O_WRONLY | O_NONBLOCK)
        guard fd >= 0 else { throw MediaServerError("pw-video-src's control FIFO: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let bytes = Array((line + "\n").utf8)
        guard write(fd, bytes, bytes.count) == bytes.count else { throw MediaServerError("writing to pw-video-src failed") }
    }

    /// Waits for a line of the producer's output starting with `prefix` (20 s at most).
    private func waitForLine(_ prefix: String, in file: URL) -> Bool {
        Wait.until(timeout: 20, every: 0.02) { lines(file).contains { $0.hasPrefix(prefix) } }
    }

    /// Waits until the producer's last format is `W H` (20 s at most): the stream has that size.
    private func waitForFormat(_ size: String, in file: URL) -> Bool {
        Wait.until(timeout: 20, every: 0.01) { lines(file).last { $0.hasPrefix("format ") } == "format \(size)" }
    }

    private func lines(_ file: URL) -> [Substring] { ((try? String(contentsOf: file, encoding: .utf8)) ?? "").split(separator: "\n") }
}
