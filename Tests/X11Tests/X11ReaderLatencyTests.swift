import TestSupport
import Foundation
import Testing

/// Capture on change, read as players read: a change on a still screen reaches FFmpeg's and
/// GStreamer's decoders over TCP before the producer makes another picture.
///
/// The proof is a count, not a clock. The producer captures on change with its keep-alive
/// 20 s away (`--idle-fps 0.05`); the reader joins with the cached GOP; a paint makes one
/// picture. A reader whose parser waits for the next access unit to begin would decode one
/// picture fewer than were sent until a next one exists; so the test waits until the
/// reader has decoded every access unit `/metrics` says was sent, after the join and again
/// after the paint, and checks that the producer made no keep-alive meanwhile (a keep-alive
/// would be the next access unit that releases a waiting parser).
@Suite(.serialized) struct X11ReaderLatencyTests {
    /// A counter of the producer's `/metrics`, -1 when it cannot be read.
    static func counter(_ name: String, at address: String) -> Int {
        guard let text = try? Tool.run(["curl", "-s", "http://\(address)/metrics"]).stdout else { return -1 }
        let line = text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
        return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? -1
    }

    /// Pictures the reader has reported in its (line-buffered) output so far.
    static func pictures(in file: URL, _ isPicture: (Substring) -> Bool) -> Int {
        let text = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").filter(isPicture).count
    }

    /// Waits (up to 8 s, well inside the keep-alive's 20 s) until the reader has decoded as
    /// many pictures as access units were sent, at least `least`; returns that count.
    static func waitUntilAllDecoded(_ out: URL, metrics: String, least: Int, _ isPicture: (Substring) -> Bool) -> (decoded: Int, sent: Int) {
        let deadline = Moment.now.addingTimeInterval(8)
        var state = (decoded: 0, sent: -1)
        repeat {
            state = (pictures(in: out, isPicture), counter("nalcast_access_units_sent_total", at: metrics))
            if state.decoded >= least && state.decoded == state.sent { break }
            usleep(20_000)
        } while Moment.now < deadline
        return state
    }

    func check(_ name: String, reader: (UInt16) -> [String], isPicture: @escaping (Substring) -> Bool) throws {
        let server = try Xvfb(width: 320, height: 240)
        defer { server.stop() }
        let painter = try Painter(display: server.display)
        painter.fill(0x202020, x: 0, y: 0, width: 320, height: 240)
        let dir = try MediaServerDirectory.make("x11-reader")
        defer { MediaServerDirectory.discard(dir) }
        let port = try FreePort.tcp()
        let metricsPort = try FreePort.tcp()
        let metrics = "127.0.0.1:\(metricsPort)"
        let producer = ServerProcess(name: "produce", logURL: dir.appendingPathComponent("produce.log"))
        try producer.start(X11ProduceTests.nalcast, ["produce", "--source", "x11:\(server.display)", "--capture", "damage", "--idle-fps", "0.05",
                                                      "--no-cursor", "--join", "gop", "--listen", "tcp://127.0.0.1:\(port)", "--metrics", "tcp://\(metrics)"])
        defer { producer.kill() }
        try producer.waitUntilListening(port: port, .tcp)
        try producer.waitUntilListening(port: metricsPort, .tcp)

        let out = dir.appendingPathComponent("reader.out")
        let client = ServerProcess(name: name, logURL: dir.appendingPathComponent("reader.log"))
        try client.start("stdbuf", ["-oL"] + reader(port), stdout: out)
        defer { client.kill() }

        let joined = Self.waitUntilAllDecoded(out, metrics: metrics, least: 1, isPicture)
        #expect(joined.decoded >= 1 && joined.decoded == joined.sent,
                "\(name) decoded \(joined.decoded) of the \(joined.sent) access units sent at its join\n\(client.logTail())\n\(producer.logTail())")

        painter.fill(0xff0000, x: 40, y: 40, width: 120, height: 80)
        let changed = Self.waitUntilAllDecoded(out, metrics: metrics, least: joined.decoded + 1, isPicture)
        #expect(changed.decoded > joined.decoded && changed.decoded == changed.sent,
                "\(name) decoded \(changed.decoded) of the \(changed.sent) access units sent after the paint: it waited for the next\n\(client.logTail())")
        #expect(Self.counter("nalcast_keepalive_frames_total", at: metrics) == 0, "a keep-alive was sent: the proof needs none")
    }

    /// ffprobe decoding as players do (`-flags low_delay`, one thread).
    @Test func ffmpegDecodesAChangeBeforeTheNextPictureExists() throws {
        try check("ffprobe", reader: { port in
            ["ffprobe", "-v", "error", "-flags", "low_delay", "-threads", "1", "-probesize", "32", "-analyzeduration", "0", "-f", "h264",
             "-i", "tcp://127.0.0.1:\(port)", "-show_frames", "-show_entries", "frame=width", "-of", "csv=p=0"]
        }, isPicture: { $0.hasPrefix("320") })
    }

    /// GStreamer: `h264parse`, libav's decoder on one thread; fakesink says "chain" per picture.
    @Test func gstreamerDecodesAChangeBeforeTheNextPictureExists() throws {
        try check("gst-launch-1.0", reader: { port in
            ["gst-launch-1.0", "-v", "tcpclientsrc", "host=127.0.0.1", "port=\(port)", "!", "h264parse", "!", "avdec_h264", "max-threads=1",
             "!", "fakesink", "sync=false", "silent=false"]
        }, isPicture: { $0.contains("last-message = chain") && $0.contains("115200 bytes") })
    }
}
