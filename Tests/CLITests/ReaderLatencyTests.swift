import Foundation
import Testing
import TestSupport

/// No picture waits in a reader's parser for the next one: FFmpeg (ffprobe over TCP, also
/// behind a relay, and reading `produce -o -` from a pipe), GStreamer (`tcpclientsrc !
/// h264parse ! avdec_h264`), `nalcast consume` and a raw reader of `--forward tcp://` each have the first picture of `produce`
/// out of their decoder (or, for consume, written) before the producer has encoded a second.
///
/// The proof is a count, not a clock: the producer makes one picture every 10 s
/// (`--fps 0.1`), the reader joins with the cached GOP (`--join gop`: that picture, at
/// once), and when the reader says it has the picture, `/metrics` must say that one access
/// unit was encoded and sent. A reader whose parser waits for the next access unit to
/// begin would have it only 10 s later, with two encoded. The test takes a second or two.
@Suite(.serialized) struct ReaderLatencyTests {
    struct Producer {
        let process: Background
        let endpoint: String
        let metrics: String

        func counter(_ name: String) throws -> Int { try ReaderLatencyTests.counter(name, at: metrics) }
    }

    /// A counter of a producer's `/metrics` at `address`, -1 when it cannot be read.
    static func counter(_ name: String, at address: String) throws -> Int {
        let text = try Run.program("curl", ["-s", "http://\(address)/metrics"]).text
        let line = text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
        return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? -1
    }

    /// A producer that has encoded its first picture, the next one 10 s away.
    static func producer() throws -> Producer {
        let metricsPort = try FreePort.tcp()
        let p = try Background(Run.nalcast, ["produce", "--size", "320x240", "--fps", "0.1", "--join", "gop", "--listen", "tcp://127.0.0.1:0",
                                             "--metrics", "tcp://127.0.0.1:\(metricsPort)"])
        let endpoint = try #require(p.servingEndpoint(), "producer did not start: \(p.stderr)")
        let producer = Producer(process: p, endpoint: endpoint, metrics: "127.0.0.1:\(metricsPort)")
        try Wait.until(timeout: 10, every: 0.02) { try producer.counter("nalcast_frames_encoded_total") >= 1 }
        return producer
    }

    /// Starts `reader` (its stdout line-buffered into a file), waits until a line of it
    /// satisfies `isPicture` (with `binary`, until it has any bytes), and checks the
    /// producer's counts at that moment.
    /// With `throughRelay`, the reader reads a relay of the producer (`consume --listen`).
    static func check(_ name: String, binary: Bool = false, throughRelay: Bool = false, reader arguments: (String) -> [String],
                      isPicture: (Substring) -> Bool = { _ in true }) throws {
        let producer = try producer()
        defer {
            // Killed: a clean stop would wait for the capture slot 10 s away.
            producer.process.signal(SIGKILL)
            producer.process.wait()
        }
        #expect(try producer.counter("nalcast_frames_encoded_total") == 1, "\(name): the producer has not encoded its first picture yet")
        var endpoint = producer.endpoint
        var relay: Background? = nil
        defer {
            relay?.signal(SIGKILL)
            relay?.wait()
        }
        if throughRelay {
            let (process, served) = try RelayServeTests.relay(from: producer.endpoint, ["--join", "gop"])
            relay = process
            endpoint = served
            // The relay has the picture once it has read it: its cached GOP.
            #expect(process.waitFor("connected to"), "\(process.stderr)")
        }
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("reader.out")
        let reader = try Background("stdbuf", ["-oL"] + arguments(endpoint), stdoutTo: out)
        defer {
            reader.signal(SIGKILL)  // nothing is asked of its end
            reader.wait()
        }
        let deadline = Moment.now.addingTimeInterval(30)
        var seen = false
        while !seen && Moment.now < deadline && reader.process.isRunning {
            let bytes = (try? Data(contentsOf: out)) ?? Data()
            seen = binary ? !bytes.isEmpty : String(decoding: bytes, as: UTF8.self).split(separator: "\n").contains(where: isPicture)
            if !seen { usleep(10_000) }
        }
        #expect(seen, "\(name) decoded nothing: \(reader.stderr.suffix(800))")
        guard seen else { return }
        let encoded = try producer.counter("nalcast_frames_encoded_total")
        let sent = try producer.counter("nalcast_access_units_sent_total")
        #expect(encoded == 1, "\(name) had its first picture only once \(encoded) were encoded: it waited for the next")
        #expect(sent == 1, "\(name): \(sent) access units sent")
    }

    /// ffprobe decoding as players do (`-flags low_delay`, one thread: FFmpeg's frame
    /// threads would hold each picture for as many frames as threads).
    @Test func ffmpegDecodesThePictureBeforeTheNextExists() throws {
        try Self.check("ffprobe", reader: { endpoint in
            ["ffprobe", "-v", "error", "-flags", "low_delay", "-threads", "1", "-probesize", "32", "-analyzeduration", "0", "-f", "h264",
             "-i", endpoint, "-show_frames", "-show_entries", "frame=key_frame,width", "-of", "csv=p=0"]
        }, isPicture: { $0.hasPrefix("1,320") })
    }

    /// GStreamer: h264parse, then libav's decoder with one thread (its default frame threads
    /// hold pictures back the same way); fakesink says "chain" for each picture.
    @Test func gstreamerDecodesThePictureBeforeTheNextExists() throws {
        try Self.check("gst-launch-1.0", reader: { endpoint in
            let port = endpoint.split(separator: ":").last.map(String.init) ?? ""
            return ["gst-launch-1.0", "-v", "tcpclientsrc", "host=127.0.0.1", "port=\(port)", "!", "h264parse", "!", "avdec_h264", "max-threads=1",
                    "!", "fakesink", "sync=false", "silent=false"]
        }, isPicture: { $0.contains("last-message = chain") && $0.contains("115200 bytes") })
    }

    /// Through a relay (`consume --listen`): the relay's parser hands the access unit on at
    /// once, and its reader's stream is delimited as the producer's is.
    @Test func ffmpegThroughARelayDecodesThePictureBeforeTheNextExists() throws {
        try Self.check("ffprobe behind a relay", throughRelay: true, reader: { endpoint in
            ["ffprobe", "-v", "error", "-flags", "low_delay", "-threads", "1", "-probesize", "32", "-analyzeduration", "0", "-f", "h264",
             "-i", endpoint, "-show_frames", "-show_entries", "frame=key_frame,width", "-of", "csv=p=0"]
        }, isPicture: { $0.hasPrefix("1,320") })
    }

    /// nalcast's own consumer writes the access unit (`-o -`) before the next one exists:
    /// its parser ends an access unit at the next one's AUD header byte.
    @Test func consumeWritesTheAccessUnitBeforeTheNextExists() throws {
        try Self.check("nalcast consume", binary: true, reader: { endpoint in
            [Run.nalcast, "consume", "--from", endpoint, "-o", "-", "-q"]
        })
    }

    /// `produce --forward tcp://` to a raw Annex-B reader is delimited as well (a live run):
    /// ffprobe listening for the push has the first picture before a second is encoded.
    @Test func aForwardToARawReaderIsNotAPictureBehind() throws {
        let port = try FreePort.tcp()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("ffprobe.out")
        let reader = try Background("stdbuf", ["-oL", "ffprobe", "-v", "error", "-flags", "low_delay", "-threads", "1", "-probesize", "32",
                                               "-analyzeduration", "0", "-f", "h264", "-i", "tcp://127.0.0.1:\(port)?listen=1",
                                               "-show_frames", "-show_entries", "frame=key_frame,width", "-of", "csv=p=0"], stdoutTo: out)
        defer {
            reader.signal(SIGKILL)
            reader.wait()
        }
        Wait.until(timeout: 10, every: 0.02) { ServerProcess.portInUse(port, .tcp) }
        let metricsPort = try FreePort.tcp()
        let producer = try Background(Run.nalcast, ["produce", "--size", "320x240", "--fps", "0.1", "--forward", "tcp://127.0.0.1:\(port)", "-q",
                                                    "--metrics", "tcp://127.0.0.1:\(metricsPort)"])
        defer {
            producer.signal(SIGKILL)
            producer.wait()
        }
        let deadline = Moment.now.addingTimeInterval(30)
        var seen = false
        while !seen && Moment.now < deadline && reader.process.isRunning {
            seen = String(decoding: (try? Data(contentsOf: out)) ?? Data(), as: UTF8.self).split(separator: "\n").contains { $0.hasPrefix("1,320") }
            if !seen { usleep(10_000) }
        }
        #expect(seen, "ffprobe decoded nothing from the forward: \(reader.stderr.suffix(800))")
        guard seen else { return }
        let encoded = try Self.counter("nalcast_frames_encoded_total", at: "127.0.0.1:\(metricsPort)")
        #expect(encoded == 1, "ffprobe had its first picture only once \(encoded) were encoded: it waited for the next")
    }

    /// `produce -o -` into a pipe is read the same way: ffprobe reading the pipe has the
    /// first picture before a second is encoded (FileSink delimits what it writes into a pipe).
    @Test func aPipeFromProduceIsNotAPictureBehind() throws {
        let metricsPort = try FreePort.tcp()
        let producer = Process()
        producer.executableURL = URL(fileURLWithPath: Run.nalcast)
        producer.arguments = ["produce", "--size", "320x240", "--fps", "0.1", "-o", "-", "-q", "--metrics", "tcp://127.0.0.1:\(metricsPort)"]
        let pipe = Pipe()
        producer.standardOutput = pipe
        producer.standardError = FileHandle.nullDevice
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("ffprobe.out")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        let reader = Process()
        reader.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        reader.arguments = ["stdbuf", "-oL", "ffprobe", "-v", "error", "-flags", "low_delay", "-threads", "1", "-probesize", "32", "-analyzeduration", "0",
                            "-f", "h264", "-i", "-", "-show_frames", "-show_entries", "frame=key_frame,width", "-of", "csv=p=0"]
        reader.standardInput = pipe
        reader.standardOutput = try FileHandle(forWritingTo: out)
        reader.standardError = FileHandle.nullDevice
        try producer.run()
        try reader.run()
        defer {
            for process in [reader, producer] where process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
        let deadline = Moment.now.addingTimeInterval(30)
        var seen = false
        while !seen && Moment.now < deadline && reader.isRunning {
            seen = String(decoding: (try? Data(contentsOf: out)) ?? Data(), as: UTF8.self).split(separator: "\n").contains { $0.hasPrefix("1,320") }
            if !seen { usleep(10_000) }
        }
        #expect(seen, "ffprobe decoded nothing from the pipe")
        guard seen else { return }
        let encoded = try Self.counter("nalcast_frames_encoded_total", at: "127.0.0.1:\(metricsPort)")
        #expect(encoded == 1, "ffprobe had its first picture only once \(encoded) were encoded: it waited for the next")
    }
}
