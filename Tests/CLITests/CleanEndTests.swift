import Foundation
import TestSupport
import Testing

/// Every way a stream ends leaves its readers nothing dangling: `ffprobe -v error` and
/// GStreamer (`h264parse ! avdec_h264`) read it to its end without a word, and count the
/// pictures nalcast sent. A delimited stream (`-o -` into a pipe, TCP readers, a relay's
/// readers) has sent the next access unit's AUD behind each picture; where the end was known
/// before the last picture went out (`--duration`, `--frames`, a file's end, a relay whose
/// source ended so) that picture goes out with an end of sequence instead, and where it was
/// not (a signal) the closing picture completes the opened access unit
/// (`AccessUnitDelimiting`, docs/architecture.md).
@Suite(.serialized) struct CleanEndTests {
    /// The README's first command, `produce --duration … -o - | ffprobe …`: ffprobe prints its
    /// result and nothing else, and counts every picture the producer encoded.
    @Test func readmeCommandPrintsOnlyItsResult() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let events = dir.appendingPathComponent("events.jsonl").path
        let stream = dir.appendingPathComponent("stream.h264").path
        let command = "'\(Run.nalcast)' produce --duration 1s --events '\(events)' -o - 2>/dev/null | tee '\(stream)' | "
            + "ffprobe -v error -f h264 -count_frames -show_entries stream=codec_name,profile,width,height,nb_read_frames -of default=nw=1 -"
        let r = try Run.program("bash", ["-o", "pipefail", "-c", command], timeout: 60)
        #expect(r.status == 0)
        #expect(r.stderr.isEmpty, "ffprobe said: \(r.stderr)")
        let encoded = try Self.framesEncoded(events)
        #expect(encoded > 0)
        #expect(r.text == "codec_name=h264\nprofile=High\nwidth=1280\nheight=720\nnb_read_frames=\(encoded)\n")
        try Self.expectGStreamerQuiet(Data(contentsOf: URL(fileURLWithPath: stream)), frames: encoded)
    }

    /// `--duration` when the capture was held up near the end (stopped by the test for 600 ms
    /// once its 18th picture of 30 was taken): the test pattern skips the slots it missed, the next
    /// frame it gives lies past the end, and the picture before it, held until then, still
    /// ends the stream with its end of sequence, not with an AUD that a closing picture must
    /// complete (which GStreamer's decoder notes as "no frame!").
    @Test func durationEndHeldUpStillKnown() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let events = dir.appendingPathComponent("events.jsonl").path
        let producer = try PipedProducer(["produce", "-q", "--size", "320x240", "--duration", "1s", "--events", events, "-o", "-"])
        // 17 access units out with the delimiter of the 18th behind them: in the last half
        // second the producer holds each picture until the next frame is taken, so the 17th
        // (0.53 s) comes out as the 18th is taken, which is then held in turn. Stopped from
        // there (0.57 s) to past the end; a stop that comes up to 0.4 s late still spans it.
        #expect(producer.waitForDelimiters(18), "the producer wrote too little")
        producer.signal(SIGSTOP)
        usleep(600_000)
        producer.signal(SIGCONT)
        let (status, stream) = producer.finish()
        #expect(status == 0)
        let finished = try Self.finishedEvent(events)
        #expect(finished["framesDropped"] as? Int ?? 0 > 0, "the stall skipped no slot: \(finished)")
        #expect(stream.suffix(4) == Data([0, 0, 1, 0x0a]), "the stream does not end with its end of sequence")
        let frames = try Self.accessUnits(stream)
        #expect(frames == finished["framesEncoded"] as? Int)
        let probe = try Self.ffprobe(stream)
        #expect(probe.stderr.isEmpty, "ffprobe said: \(probe.stderr)")
        #expect(probe.frames == frames)
        try Self.expectGStreamerQuiet(stream, frames: frames)
    }

    /// `--frames` into a pipe, and a Y4M file's end (`--realtime`: a live run, delimited).
    @Test(arguments: ["frames", "y4m"]) func knownEndIntoAPipe(_ end: String) throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var args = ["produce", "-q", "--size", "320x240", "--frames", "20", "-o", "-"]
        if end == "y4m" {
            let y4m = dir.appendingPathComponent("in.y4m").path
            _ = try Run.program("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-frames:v", "12", "-f", "yuv4mpegpipe", y4m])
            args = ["produce", "-q", "--source", "y4m:\(y4m)", "--realtime", "-o", "-"]
        }
        let r = try Run.nalcast(args, timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        try Self.expectReadersQuiet(r.stdout, frames: end == "y4m" ? 12 : 20)
    }

    /// SIGINT and SIGTERM: the end was not known when the last picture went out; the
    /// closing picture completes the access unit its AUD opened. FFmpeg says nothing;
    /// GStreamer's gst-launch says nothing either (its libav decoder's debug log notes the
    /// access unit without a picture: docs/architecture.md).
    @Test(arguments: [SIGINT, SIGTERM]) func signalIntoAPipe(_ signal: Int32) throws {
        let producer = try PipedProducer(["produce", "-q", "--size", "320x240", "-o", "-"])
        #expect(producer.waitForBytes(20_000), "the producer wrote nothing")
        producer.signal(signal)
        let (status, stream) = producer.finish()
        #expect(status == 0)
        let frames = try Self.accessUnits(stream)
        #expect(frames > 0)
        let probe = try Self.ffprobe(stream)
        #expect(probe.stderr.isEmpty, "ffprobe said: \(probe.stderr)")
        #expect(probe.frames == frames)
        let gst = try Self.gstreamer(stream, debug: false)
        #expect(gst.status == 0 && gst.output.isEmpty, "\(gst.output)")
    }

    /// A TCP Annex-B reader and a TS reader of a producer that ends at `--frames`; its frames
    /// come from the test once both readers are in.
    @Test func listenersEndQuietly() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (header, frames) = try Self.y4mFrames(10, in: dir)
        let events = dir.appendingPathComponent("events.jsonl").path
        let ports = (try freePort(), try freePort())
        let producer = try FedProducer(["produce", "--source", "y4m:-", "--frames", "\(frames.count)", "--listen", "tcp://127.0.0.1:\(ports.0)",
                                        "--listen", "ts:tcp://127.0.0.1:\(ports.1)", "--events", events, "-q"])
        producer.write(header + frames[0])
        var raw: StreamReaderClient?, muxed: StreamReaderClient?
        #expect(Self.waitFor {
            raw = raw ?? (try? StreamReaderClient("tcp://127.0.0.1:\(ports.0)"))
            muxed = muxed ?? (try? StreamReaderClient("tcp://127.0.0.1:\(ports.1)"))
            return raw != nil && muxed != nil
        }, "the producer did not listen")
        #expect(Self.waitFor { ((try? String(contentsOfFile: events, encoding: .utf8)) ?? "").components(separatedBy: "\"reader-joined\"").count == 3 })
        producer.write(frames[1...].reduce(Data(), +))
        producer.finish()
        guard let raw, let muxed else { return }
        let stream = raw.finish(), transport = muxed.finish()
        try Self.expectReadersQuiet(stream, frames: try Self.accessUnits(stream))
        let file = dir.appendingPathComponent("s.ts")
        try transport.write(to: file)
        let probe = try Run.program("ffprobe", ["-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", file.path])
        #expect(probe.stderr.isEmpty, "ffprobe said: \(probe.stderr)")
        // One line for the stream in its program, one for the stream itself.
        #expect((probe.text.split(separator: "\n").compactMap { Int($0) }.first ?? 0) > 0, "\(probe.text)")
        let gst = try Self.gstreamer(Data(transport), debug: true, demux: "tsdemux")
        #expect(gst.status == 0 && gst.output.isEmpty, "\(gst.output)")
    }

    /// A relay's readers: the source ended with `--frames`, and the relay, told not to wait
    /// for it (`--reconnect-timeout 0`), ends with it; then a relay stopped by SIGTERM. The
    /// source's frames come from the test (Y4M on its standard input), the last ones once
    /// the relay and its reader are in: no race with the source's end.
    @Test(arguments: ["source ended", "SIGTERM"]) func relayEndsQuietly(_ end: String) throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let socket = dir.appendingPathComponent("source.sock").path
        let (header, frames) = try Self.y4mFrames(10, in: dir)
        let events = (source: dir.appendingPathComponent("source.jsonl").path, relay: dir.appendingPathComponent("relay.jsonl").path)
        let producer = try FedProducer(["produce", "--source", "y4m:-", "--frames", "\(frames.count)", "--listen", "unix:\(socket)",
                                        "--events", events.source, "-q"])
        producer.write(header + frames[0])
        #expect(Self.waitFor { FileManager.default.fileExists(atPath: socket) }, "the source did not listen")
        let relay = try Background(Run.nalcast, ["consume", "--from", "unix:\(socket)", "--listen", "tcp://127.0.0.1:0", "--reconnect-timeout", "0",
                                                 "--events", events.relay])
        let endpoint = try #require(relay.servingEndpoint(), "\(relay.stderr)")
        #expect(Self.waitFor { Self.has(events.source, "reader-joined") }, "the relay did not join the source")
        let reader = try StreamReaderClient(endpoint)
        #expect(Self.waitFor { Self.has(events.relay, "reader-joined") }, "the reader did not join the relay")
        if end == "SIGTERM" {
            producer.write(frames[1])
            #expect(Self.waitFor { reader.received.count > 0 }, "the relay sent nothing")
            relay.signal(SIGTERM)
        } else {
            producer.write(frames[1...].reduce(Data(), +))
        }
        #expect(relay.wait(timeout: 30) == 0, "\(relay.stderr)")
        producer.finish()
        let stream = reader.finish()
        let pictures = try Self.accessUnits(stream)
        #expect(pictures > 0)
        if end == "SIGTERM" {
            let probe = try Self.ffprobe(stream)
            #expect(probe.stderr.isEmpty, "ffprobe said: \(probe.stderr)")
            #expect(probe.frames == pictures)
        } else {
            try Self.expectReadersQuiet(stream, frames: pictures)
        }
    }

    /// `count` frames of a 160x120 test pattern as Y4M: the stream header, and each frame
    /// (its `FRAME` line and picture).
    static func y4mFrames(_ count: Int, in dir: URL) throws -> (header: Data, frames: [Data]) {
        let file = dir.appendingPathComponent("in.y4m")
        _ = try Run.program("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=30", "-frames:v", "\(count)",
                                       "-pix_fmt", "yuv420p", "-f", "yuv4mpegpipe", file.path])
        let bytes = try Data(contentsOf: file)
        let headerEnd = try #require(bytes.firstIndex(of: UInt8(ascii: "\n"))) + 1
        let frameSize = 6 + 160 * 120 * 3 / 2
        let frames = stride(from: headerEnd, to: bytes.count, by: frameSize).map { bytes[$0..<min($0 + frameSize, bytes.count)] }
        #expect(frames.count == count)
        return (bytes[..<headerEnd], frames.map { Data($0) })
    }

    /// Polls `condition` until it holds or 20 s passed.
    static func waitFor(_ condition: () -> Bool) -> Bool {
        let deadline = Moment.now.addingTimeInterval(20)
        while !condition() {
            if Moment.now > deadline { return false }
            usleep(10_000)
        }
        return true
    }

    /// True when the `--events` file at `path` has an event named `event`.
    static func has(_ path: String, _ event: String) -> Bool {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").contains("\"event\":\"\(event)\"")
    }

    // MARK: - Readers

    /// FFmpeg and GStreamer read `stream` without a word (GStreamer's parser and decoder
    /// logging warnings and errors too), and FFmpeg decodes `frames` pictures.
    static func expectReadersQuiet(_ stream: Data, frames: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let probe = try ffprobe(stream)
        #expect(probe.stderr.isEmpty, "ffprobe said: \(probe.stderr)", sourceLocation: sourceLocation)
        #expect(probe.frames == frames, sourceLocation: sourceLocation)
        try expectGStreamerQuiet(stream, frames: frames, sourceLocation: sourceLocation)
    }

    static func expectGStreamerQuiet(_ stream: Data, frames: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let gst = try gstreamer(stream, debug: true)
        #expect(gst.status == 0, sourceLocation: sourceLocation)
        #expect(gst.output.isEmpty, "GStreamer said: \(gst.output)", sourceLocation: sourceLocation)
    }

    static func ffprobe(_ stream: Data) throws -> (frames: Int, stderr: String) {
        let r = try Run.program("ffprobe", ["-v", "error", "-f", "h264", "-count_frames", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", "-"], stdin: stream)
        return (Int(r.text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1, r.stderr)
    }

    /// `gst-launch-1.0 -q fdsrc ! [demux !] h264parse ! avdec_h264 ! fakesink` on `stream`:
    /// its exit status and what it printed; with `debug`, also the warnings and errors the
    /// stream's readers log (parser, decoder, demuxer: not the source's own).
    static func gstreamer(_ stream: Data, debug: Bool, demux: String? = nil) throws -> (status: Int32, output: String) {
        var environment = ProcessInfo.processInfo.environment
        if debug {
            environment["GST_DEBUG"] = "h264parse:2,baseparse:2,libav:2,videodecoder:2,tsdemux:2"
            environment["GST_DEBUG_NO_COLOR"] = "1"
        }
        let pipeline = ["fdsrc", "fd=0", "!"] + (demux.map { [$0, "!"] } ?? []) + ["h264parse", "!", "avdec_h264", "!", "fakesink"]
        let r = try Run.program("gst-launch-1.0", ["-q"] + pipeline, stdin: stream, environment: environment, timeout: 60)
        return (r.status, (r.text + r.stderr).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Pictures in an Annex-B stream by nalcast's own parser (the closing picture is none).
    static func accessUnits(_ stream: Data) throws -> Int {
        (try inspect(stream)["units"] as? [Any])?.count ?? -1
    }

    /// `framesEncoded` of the `finished` event in a `--events` file.
    static func framesEncoded(_ path: String) throws -> Int {
        try finishedEvent(path)["framesEncoded"] as? Int ?? -1
    }

    /// The `finished` event of a `--events` file (empty when there is none).
    static func finishedEvent(_ path: String) throws -> [String: Any] {
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        for line in lines.reversed() {
            guard let json = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  json["event"] as? String == "finished" else { continue }
            return json
        }
        return [:]
    }
}

/// `nalcast produce … -o -` with its standard output a pipe (so the stream is delimited, as
/// for any live reader), read on a thread of its own.
final class PipedProducer: @unchecked Sendable {
    // The process and pipe are touched by the test thread only; `data` is guarded by `lock`.
    private let process = Process()
    private let out = Pipe()
    private let lock = NSLock()
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)

    init(_ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: Run.nalcast)
        process.arguments = arguments
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let handle = out.fileHandleForReading
        Thread { [self] in
            while case let chunk = handle.availableData, !chunk.isEmpty {
                lock.lock()
                data.append(chunk)
                lock.unlock()
            }
            done.signal()
        }.start()
    }

    /// Waits until `count` bytes have come (or the process ended, or 20 s passed).
    func waitForBytes(_ count: Int) -> Bool {
        let deadline = Moment.now.addingTimeInterval(20)
        while Moment.now < deadline && process.isRunning {
            lock.lock()
            let have = data.count
            lock.unlock()
            if have >= count { return true }
            usleep(10_000)
        }
        return false
    }

    /// Waits until `count` access unit delimiters (00 00 01 09) have come (or the process
    /// ended, or 20 s passed): a delimited stream has written one access unit fewer.
    func waitForDelimiters(_ count: Int) -> Bool {
        var seen = 0, searched = 0
        Wait.until(timeout: 20, every: 0.005) {
            lock.lock()
            let have = data
            lock.unlock()
            seen += accessUnitDelimiters(in: have, from: searched - 3)
            searched = have.count
            return seen >= count || !process.isRunning
        }
        return seen >= count
    }

    func signal(_ sig: Int32) { kill(process.processIdentifier, sig) }

    /// Waits for the exit (killing it after 30 s) and for the last bytes.
    func finish() -> (status: Int32, stream: Data) {
        Wait.until(timeout: 30, every: 0.01) { !process.isRunning }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        done.wait()
        lock.lock()
        defer { lock.unlock() }
        return (process.terminationStatus, data)
    }
}

/// `nalcast produce --source y4m:-`, its standard input written by the test (on a thread of
/// its own, so that a full pipe never blocks the test).
final class FedProducer: @unchecked Sendable {
    // Touched by the test thread only; the writes run in order on `queue`.
    private let process = Process()
    private let input = Pipe()
    private let queue = DispatchQueue(label: "nalcast-test-feed")

    init(_ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: Run.nalcast)
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    func write(_ data: Data) {
        let handle = input.fileHandleForWriting
        queue.async { try? handle.write(contentsOf: data) }
    }

    /// Closes the input and waits for the exit (killing it after 30 s).
    func finish() {
        let handle = input.fileHandleForWriting
        queue.sync { try? handle.close() }
        Wait.until(timeout: 30, every: 0.01) { !process.isRunning }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}
