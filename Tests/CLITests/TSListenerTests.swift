import Foundation
import TestSupport
import Testing

/// `produce --listen ts:…`: MPEG-TS readers beside Annex-B ones, read by FFmpeg and by plain
/// sockets whose bytes are checked packet by packet (continuity counters, timestamps).
@Suite(.serialized) struct TSListenerTests {
    /// Starts a producer with an Annex-B and a TS listener on free ports; returns it and both
    /// endpoints (Annex-B, TS) as `tcp://127.0.0.1:PORT`.
    static func producer(_ extra: [String]) throws -> (Background, annexB: String, ts: String) {
        let p = try Background(Run.nalcast, ["produce", "--size", "320x240", "--listen", "tcp://127.0.0.1:0", "--listen", "ts:tcp://127.0.0.1:0"] + extra)
        #expect(p.waitFor("(MPEG-TS)"), "producer did not start: \(p.stderr)")
        let line = try #require(p.stderr.split(separator: "\n").first { $0.contains("serving ts:") })
        let words = line.split(whereSeparator: { $0 == " " || $0 == "," })
        let annexB = try #require(words.first { $0.hasPrefix("tcp://") })
        let ts = try #require(words.first { $0.hasPrefix("ts:tcp://") })
        return (p, String(annexB), String(ts.dropFirst(3)))
    }

    /// The TS packets of `data` per PID: how many, and how many times a payload packet's
    /// continuity counter did not follow the previous one's.
    static func continuityBreaks(_ data: Data) -> (packets: Int, breaks: Int, misaligned: Bool) {
        let bytes = [UInt8](data)
        var last: [Int: UInt8] = [:]
        var breaks = 0
        var at = 0
        while at + 188 <= bytes.count {
            guard bytes[at] == 0x47 else { return (at / 188, breaks, true) }
            let pid = (Int(bytes[at + 1] & 0x1F) << 8) | Int(bytes[at + 2])
            let cc = bytes[at + 3] & 15
            if bytes[at + 3] & 0x10 != 0 {
                if let previous = last[pid], cc != (previous + 1) & 15 { breaks += 1 }
                last[pid] = cc
            }
            at += 188
        }
        return (bytes.count / 188, breaks, bytes.count % 188 != 0)
    }

    /// The video packets' PTS (90 kHz) and key flags, as ffprobe reads them from a TS file.
    static func videoPackets(_ path: String) throws -> [(pts: Int, key: Bool)] {
        let r = try Run.program("ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts,flags", "-of", "csv=p=0", path])
        return r.text.split(separator: "\n").compactMap { line in
            let f = line.split(separator: ",")
            guard f.count >= 2, let pts = Int(f[0]) else { return nil }
            return (pts, f[1].hasPrefix("K"))
        }
    }

    static func decodeErrors(_ path: String) throws -> String {
        let r = try Run.program("ffmpeg", ["-hide_banner", "-nostdin", "-v", "error", "-i", path, "-f", "null", "-"])
        return r.stderr.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func tsBesideAnnexBDecodesWithTimestampsAtTheFrameRate() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (producer, annexB, ts) = try Self.producer(["--fps", "30"])
        let tsReader = try StreamReaderClient(ts)
        let rawReader = try StreamReaderClient(annexB)
        // Well over the 45 pictures checked below at each reader (an AUD begins each one, in a
        // PES packet's first TS packet too).
        #expect(Wait.until { accessUnitDelimiters(in: tsReader.received) > 55 && accessUnitDelimiters(in: rawReader.received) > 55 },
                "fewer than 55 pictures at a reader")
        let tsData = tsReader.finish()
        let rawData = rawReader.finish()
        // FFmpeg itself, as a player would open it: no options but the address.
        let port = ts.split(separator: ":").last!
        let ffmpeg = try Run.program("ffmpeg", ["-hide_banner", "-nostdin", "-v", "error", "-analyzeduration", "500000", "-i", "tcp://127.0.0.1:\(port)", "-frames:v", "30", "-f", "null", "-"])
        producer.signal(SIGTERM)
        #expect(producer.wait() == 0)
        #expect(ffmpeg.status == 0 && ffmpeg.stderr.isEmpty, "\(ffmpeg.stderr)")

        let shape = Self.continuityBreaks(tsData)
        #expect(!shape.misaligned && shape.packets > 100 && shape.breaks == 0, "\(shape)")
        let file = dir.appendingPathComponent("r.ts")
        try tsData.write(to: file)
        let probe = try Run.program("ffprobe", ["-v", "error", "-show_entries", "stream=codec_name,width,height", "-of", "csv=p=0", file.path])
        #expect(Set(probe.text.split(separator: "\n").map(String.init)) == ["h264,320,240"], "\(probe.text)")
        #expect(try Self.decodeErrors(file.path) == "")
        let video = try Self.videoPackets(file.path)
        #expect(video.count >= 45, "\(video.count) pictures")
        #expect(video.first?.key == true, "the reader does not start at an IDR")
        // Timestamps pace the playback: 30 fps is 3000 ticks a picture (a multiple of it where
        // the producer left a frame out on a busy machine), rising.
        let steps = zip(video, video.dropFirst()).map { $1.pts - $0.pts }
        #expect(steps.allSatisfy { $0 > 0 && $0 % 3000 == 0 }, "\(steps)")
        #expect(steps.filter { $0 == 3000 }.count * 2 > steps.count, "\(steps)")
        // The Annex-B reader beside it is served as ever.
        let raw = try ffmpegDecode(rawData)
        #expect(raw.errors.isEmpty && raw.frames >= 45, "\(raw)")
    }

    @Test func aLateJoinerAndALaggingReaderGetUnbrokenStreams() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // Noise costs many bits: the stalled readers' buffers fill within a second.
        let input = try Run.noiseY4M(in: dir)
        let events = dir.appendingPathComponent("events.jsonl")
        let (producer, _, ts) = try Self.producer(["--source", "y4m:\(input.path)", "--realtime", "--bitrate", "3M", "--keyint", "500ms", "--events", events.path])
        let port = ts.split(separator: ":").last!
        let stalled = try StreamReaderClient(ts, receiveBuffer: 4096, startPaused: true)
        // FFmpeg stopped (SIGSTOP) with a small receive buffer: it falls behind and skips.
        let stopped = try Background("ffmpeg", ["-hide_banner", "-nostdin", "-v", "error", "-analyzeduration", "500000",
                                                "-i", "tcp://127.0.0.1:\(port)?recv_buffer_size=4096", "-f", "null", "-"])
        usleep(700_000)
        stopped.signal(SIGSTOP)
        usleep(1_000_000)
        let late = try StreamReaderClient(ts)
        usleep(1_500_000)
        stalled.resume()
        stopped.signal(SIGCONT)
        #expect(producer.wait(timeout: 15) == 0)  // the input ends after 5 s
        #expect(stopped.wait(timeout: 10) == 0)
        #expect(stopped.stderr.trimmingCharacters(in: .whitespacesAndNewlines) == "", "\(stopped.stderr)")
        let log = try String(contentsOf: events, encoding: .utf8)
        #expect(log.contains("\"reader-skipped\""), "no reader was skipped")
        for (name, data) in [("stalled", stalled.finish()), ("late", late.finish())] {
            let shape = Self.continuityBreaks(data)
            #expect(!shape.misaligned && shape.packets > 50 && shape.breaks == 0, "\(name): \(shape)")
            let file = dir.appendingPathComponent("\(name).ts")
            try data.write(to: file)
            #expect(try Self.decodeErrors(file.path) == "", "\(name)")
            let video = try Self.videoPackets(file.path)
            #expect(video.first?.key == true, "\(name) does not start at an IDR")
            #expect(zip(video, video.dropFirst()).allSatisfy { $1.pts > $0.pts }, "\(name): timestamps not rising")
        }
    }

    @Test func soundTravelsWithThePictures() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (producer, _, ts) = try Self.producer(["--audio", "tone"])
        let reader = try StreamReaderClient(ts)
        // Some 2.7 s of pictures, and their sound.
        #expect(Wait.until { accessUnitDelimiters(in: reader.received) > 80 }, "fewer than 80 pictures")
        let data = reader.finish()
        producer.signal(SIGTERM)
        #expect(producer.wait() == 0, "\(producer.stderr)")
        let shape = Self.continuityBreaks(data)
        #expect(!shape.misaligned && shape.packets > 100 && shape.breaks == 0, "\(shape)")
        let file = dir.appendingPathComponent("av.ts")
        try data.write(to: file)
        let probe = try Run.program("ffprobe", ["-v", "error", "-show_entries", "stream=codec_name,sample_rate,channels", "-of", "csv=p=0", file.path])
        #expect(Set(probe.text.split(separator: "\n").map(String.init)) == ["h264", "aac,48000,2"], "\(probe.text)")
        #expect(try Self.decodeErrors(file.path) == "")
        // Both tracks on the one time line, from the first picture: the sound spans what the
        // pictures span, but for its last moment, which the audio capture had not encoded yet
        // when produce stopped (it encodes 150 ms behind capture, in 21 ms packets).
        func span(_ stream: String) throws -> Double {
            let r = try Run.program("ffprobe", ["-v", "error", "-select_streams", stream, "-show_entries", "packet=pts_time", "-of", "csv=p=0", file.path])
            let times = r.text.split(separator: "\n").compactMap { Double($0.split(separator: ",").first ?? "") }
            return (times.last ?? 0) - (times.first ?? 0)
        }
        let video = try span("v:0"), audio = try span("a:0")
        #expect(video > 2 && audio <= video + 0.05 && audio >= video - 0.3, "video spans \(video) s, audio \(audio) s")
    }

    @Test func aRelayServesWhatItReadsAsMPEGTS() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let sock = dir.appendingPathComponent("p.sock").path
        let producer = try Background(Run.nalcast, ["produce", "--size", "320x240", "--listen", "unix:\(sock)"])
        #expect(producer.waitFor("serving"), "\(producer.stderr)")
        let relay = try Background(Run.nalcast, ["consume", "--from", "unix:\(sock)", "--listen", "ts:tcp://127.0.0.1:0", "--reconnect-timeout", "0"])
        #expect(relay.waitFor("(MPEG-TS)"), "\(relay.stderr)")
        let line = try #require(relay.stderr.split(separator: "\n").first { $0.contains("serving ts:") })
        let ts = try #require(line.split(whereSeparator: { $0 == " " || $0 == "," }).first { $0.hasPrefix("ts:tcp://") })
        let reader = try StreamReaderClient(String(ts.dropFirst(3)))
        #expect(Wait.until { accessUnitDelimiters(in: reader.received) > 40 }, "fewer than 40 pictures")
        let data = reader.finish()
        relay.signal(SIGTERM)
        producer.signal(SIGTERM)
        #expect(relay.wait() == 0)
        #expect(producer.wait() == 0)
        let shape = Self.continuityBreaks(data)
        #expect(!shape.misaligned && shape.packets > 50 && shape.breaks == 0, "\(shape)")
        let file = dir.appendingPathComponent("relayed.ts")
        try data.write(to: file)
        #expect(try Self.decodeErrors(file.path) == "")
        let video = try Self.videoPackets(file.path)
        #expect(video.count >= 30 && video.first?.key == true, "\(video.count) pictures")
        // The relay's media time: the producer's timestamp SEI, 3000 ticks a picture at 30 fps.
        let steps = zip(video, video.dropFirst()).map { $1.pts - $0.pts }
        #expect(steps.allSatisfy { $0 > 0 && $0 % 3000 == 0 }, "\(steps)")
    }

    @Test func listenerAddressesAreCheckedAndShown() throws {
        let dry = try Run.nalcast(["produce", "--listen", "tcp://127.0.0.1:7300", "--listen", "ts:unix:/tmp/nalcast-ts.sock", "--dry-run"])
        #expect(dry.status == 0)
        #expect(dry.text.contains("listen: tcp://127.0.0.1:7300 (Annex-B), ts:unix:/tmp/nalcast-ts.sock (MPEG-TS)"), "\(dry.text)")
        let twice = try Run.nalcast(["produce", "--listen", "ts:tcp://127.0.0.1:7300", "--listen", "tcp://127.0.0.1:7300", "--dry-run"])
        #expect(twice.status == 64 && twice.stderr.contains("given twice"), "\(twice.stderr)")
        let bad = try Run.nalcast(["produce", "--listen", "ts:http://127.0.0.1:7300", "--dry-run"])
        #expect(bad.status == 64 && bad.stderr.contains("--listen"), "\(bad.stderr)")
        let remote = try Run.nalcast(["produce", "--listen", "ts:tcp://0.0.0.0:7300", "--dry-run"])
        #expect(remote.status == 64 && remote.stderr.contains("--allow-remote"), "\(remote.stderr)")
    }
}
