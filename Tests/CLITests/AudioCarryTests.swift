import Foundation
import Testing
import TestSupport

/// Audio through `consume`: an FFmpeg-made source with H.264 and AAC (an MPEG-TS file, an
/// MP4 file, MPEG-TS over TCP from an FFmpeg listener) into an MP4 file, MP4 and MPEG-TS
/// segments, and pushes to an SRT listener and nginx-rtmp; raw Annex-B outputs stay video
/// only and say so once. Everything is checked with ffprobe and ffmpeg: both tracks there,
/// the audio as long as the video (within a packet), every segment starting at an IDR with
/// the audio of the same instant, the segments' audio following each other with no gap or
/// overlap, the audio decoding cleanly.
@Suite struct AudioCarryTests {
    /// 6 s of 320x240 at 25 fps, an IDR every second (libx264's B-frames on), 440 Hz in
    /// 48 kHz stereo AAC: 283 packets of 1024 samples (the encoder's priming one included).
    static func makeSource(_ directory: URL, format: String = "mpegts", name: String = "src.ts") throws -> URL {
        let url = directory.appendingPathComponent(name)
        let r = try Tool.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25",
                              "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "6",
                              "-c:v", "libx264", "-preset", "ultrafast", "-bf", "2", "-g", "25", "-c:a", "aac", "-ac", "2", "-f", format, url.path])
        #expect(r.status == 0, "\(r.stderr)")
        return url
    }

    struct Packet {
        let pts: Double
        let duration: Double
        let key: Bool
    }

    /// The packets of the first `kind` (a, v) stream, in file order.
    static func packets(_ path: String, _ kind: String) throws -> [Packet] {
        let r = try Tool.run(["ffprobe", "-v", "error", "-select_streams", "\(kind):0", "-show_entries", "packet=pts_time,duration_time,flags",
                              "-of", "csv=p=0", path])
        return r.stdout.split(separator: "\n").compactMap { line in
            let f = line.split(separator: ",", omittingEmptySubsequences: false)
            guard f.count >= 3, let pts = Double(f[0]) else { return nil }
            return Packet(pts: pts, duration: Double(f[1]) ?? 0, key: f[2].hasPrefix("K"))
        }
    }

    static func codecs(_ path: String) throws -> [String] {
        let r = try Tool.run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0", path])
        // MPEG-TS lists its streams twice (in its program and alone).
        var seen: [String] = []
        for line in r.stdout.split(separator: "\n") {
            let name = String(line).trimmingCharacters(in: CharacterSet(charactersIn: ", "))
            if !name.isEmpty && !seen.contains(name) { seen.append(name) }
        }
        return seen
    }

    /// Decoded audio samples per channel (s16, the file's rate) and ffmpeg's complaints.
    static func decodedSamples(_ arguments: [String]) throws -> (samples: Int, errors: String) {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("nalcast-audio-\(UUID().uuidString).raw")
        defer { try? FileManager.default.removeItem(at: out) }
        let r = try Tool.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y"] + arguments + ["-map", "0:a:0", "-ac", "1", "-f", "s16le", out.path])
        let bytes = (try? FileManager.default.attributesOfItem(atPath: out.path)[.size] as? Int) ?? 0
        return (bytes / 2, r.stderr)
    }

    /// The end of the last packet minus the start of the first.
    static func span(_ p: [Packet]) -> Double {
        guard let first = p.map(\.pts).min(), let last = p.max(by: { $0.pts < $1.pts }) else { return 0 }
        return last.pts + last.duration - first
    }

    static let audioPacket = 1024.0 / 48_000

    @Test func tsFileIntoMP4KeepsEveryAudioPacketInStep() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.makeSource(dir)
        let out = dir.appendingPathComponent("out.mp4")
        let r = try Run.nalcast(["consume", "--from", source.path, "-o", out.path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("audio aac 48000 Hz 2 ch"), "\(r.stderr)")
        #expect(try Self.codecs(out.path) == ["h264", "aac"])
        let audio = try Self.packets(out.path, "a")
        let sourceAudio = try Self.packets(source.path, "a")
        #expect(audio.count == sourceAudio.count, "audio packets: \(audio.count) of \(sourceAudio.count)")
        let video = try Self.packets(out.path, "v")
        #expect(video.count == 150)
        // As long as they were in the source (FFmpeg's AAC ends on a whole packet past the video).
        #expect(abs(Self.span(audio) - Self.span(sourceAudio)) < 0.002, "audio \(Self.span(audio)) s, in the source \(Self.span(sourceAudio)) s")
        #expect(abs(Self.span(audio) - Self.span(video)) <= 2 * Self.audioPacket, "audio \(Self.span(audio)) s, video \(Self.span(video)) s")
        // The first sound is where it was against the first picture (the encoder's priming
        // packet, 1024 samples before it).
        let offset = (audio.map(\.pts).min() ?? 0) - (video.map(\.pts).min() ?? 0)
        let sourceOffset = (sourceAudio.map(\.pts).min() ?? 0) - (try Self.packets(source.path, "v").map(\.pts).min() ?? 0)
        #expect(abs(offset - sourceOffset) < 0.002, "A/V start offset \(offset) s, in the source \(sourceOffset) s")
        let decoded = try Self.decodedSamples(["-i", out.path])
        #expect(decoded.errors == "")
        #expect(decoded.samples >= 282 * 1024, "\(decoded.samples) samples")
    }

    @Test(arguments: ["mp4", "ts"]) func segmentsStartAtAnIDRWithTheAudioOfTheSameInstant(_ container: String) throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.makeSource(dir)
        let segments = dir.appendingPathComponent("seg")
        let r = try Run.nalcast(["consume", "--from", source.path, "--segments", segments.path, "--segment-duration", "2s",
                                 "--segment-name", "%n.\(container)", "--no-fsync"])
        #expect(r.status == 0, "\(r.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: segments.path).filter { $0.hasSuffix(".\(container)") }.sorted()
        #expect(files.count == 3, "\(files)")
        var previousAudioEnd: Double?
        var audioPackets = 0
        for name in files {
            let path = segments.appendingPathComponent(name).path
            #expect(try Self.codecs(path) == ["h264", "aac"], "\(name)")
            let video = try Self.packets(path, "v")
            let audio = try Self.packets(path, "a")
            audioPackets += audio.count
            #expect(video.first?.key == true, "\(name) does not start with an IDR")
            guard let firstPicture = video.map(\.pts).min(), let firstSound = audio.first?.pts, let last = audio.last else {
                Issue.record("\(name): no packets")
                continue
            }
            // The audio of the IDR's instant: not before it, less than a packet after.
            #expect(firstSound >= firstPicture - 0.002 && firstSound < firstPicture + Self.audioPacket, "\(name): audio from \(firstSound) s, picture \(firstPicture) s")
            // The last segment also has the audio the source has past its last picture.
            #expect(abs(Self.span(audio) - Self.span(video)) <= (name == files.last ? 2 : 1) * Self.audioPacket + 0.002,
                    "\(name): audio \(Self.span(audio)) s, video \(Self.span(video)) s")
            // Segment n+1's audio starts where segment n's ended (MP4 edit lists round to a ms).
            if let end = previousAudioEnd { #expect(abs(firstSound - end) <= 0.0015, "\(name): audio starts at \(firstSound) s, the segment before ended at \(end) s") }
            previousAudioEnd = last.pts + last.duration
        }
        // All the source's audio but what came before the first picture (the priming packet).
        let sourcePackets = try Self.packets(source.path, "a").count
        #expect(audioPackets >= sourcePackets - 1 && audioPackets <= sourcePackets, "\(audioPackets) audio packets of \(sourcePackets)")
        // Their audio concatenated decodes cleanly, sample for sample.
        let list = dir.appendingPathComponent("list.txt")
        try files.map { "file '\(segments.appendingPathComponent($0).path)'" }.joined(separator: "\n").write(to: list, atomically: true, encoding: .utf8)
        let decoded = try Self.decodedSamples(["-f", "concat", "-safe", "0", "-i", list.path])
        #expect(decoded.errors == "", "\(decoded.errors)")
        #expect(abs(decoded.samples - audioPackets * 1024) <= 1024, "\(decoded.samples) samples for \(audioPackets) packets")
    }

    @Test func mp4FileIntoMatroskaAndTS() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.makeSource(dir, format: "mp4", name: "src.mp4")
        for ext in ["mkv", "ts"] {
            let out = dir.appendingPathComponent("out.\(ext)")
            let r = try Run.nalcast(["consume", "--from", source.path, "-o", out.path])
            #expect(r.status == 0, "\(r.stderr)")
            #expect(try Self.codecs(out.path) == ["h264", "aac"], "\(ext)")
            let audio = try Self.packets(out.path, "a")
            #expect(abs(Self.span(audio) - Self.span(try Self.packets(out.path, "v"))) <= 2 * Self.audioPacket + 0.002, "\(ext)")
            #expect(try Self.decodedSamples(["-i", out.path]).errors == "", "\(ext)")
        }
    }

    @Test func tsOverTCPFromAnFFmpegListener() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.makeSource(dir)
        let port = try FreePort.tcp()
        let sender = try Background("ffmpeg", ["-nostdin", "-v", "error", "-re", "-i", source.path, "-c", "copy", "-f", "mpegts", "tcp://127.0.0.1:\(port)?listen=1"])
        defer { sender.process.terminate() }
        let out = dir.appendingPathComponent("out.mp4")
        let r = try Run.nalcast(["consume", "--from", "ts:tcp://127.0.0.1:\(port)", "-o", out.path, "--reconnect-timeout", "1s"], timeout: 60)
        // The sender ends after its 6 s; consume gives up reconnecting a second later.
        #expect(r.stderr.contains("opened ts:tcp://127.0.0.1:\(port)"), "\(r.stderr)")
        #expect(try Self.codecs(out.path) == ["h264", "aac"])
        let audio = try Self.packets(out.path, "a")
        #expect(audio.count == (try Self.packets(source.path, "a")).count)
        #expect(abs(Self.span(audio) - Self.span(try Self.packets(out.path, "v"))) <= 2 * Self.audioPacket + 0.002)
    }

    @Test func annexBOutputsCarryVideoOnlyAndSaySoOnce() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.makeSource(dir)
        let out = dir.appendingPathComponent("out.h264")
        let r = try Run.nalcast(["consume", "--from", source.path, "-o", out.path, "--segments", dir.appendingPathComponent("seg").path,
                                 "--segment-name", "%n.mp4", "--no-fsync"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.components(separatedBy: "carries video only").count - 1 == 1, "\(r.stderr)")
        #expect(try Self.codecs(out.path) == ["h264"])
        #expect(try MediaProbe.video(out.path, format: "h264")?.frames == 150)
    }

    @Test func srtAndRTMPForwardsCarryTheAudio() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.makeSource(dir)
        let listener = try PushTests.srtListener()
        let rtmp = try RTMPServer()
        let flv = dir.appendingPathComponent("read.flv")
        let before = rtmp.plays("key")
        let player = ServerProcess(name: "ffmpeg player", logURL: dir.appendingPathComponent("player.log"))
        try player.start("ffmpeg", ["-hide_banner", "-nostdin", "-loglevel", "error", "-rw_timeout", "5000000", "-analyzeduration", "1000000",
                                    "-i", rtmp.url("key"), "-map", "0", "-c", "copy", "-f", "flv", flv.path])
        defer { player.stop() }
        #expect(rtmp.waitForPlay("key", count: before + 1, timeout: 60))
        let r = try Run.nalcast(["consume", "--from", source.path, "--realtime", "--forward", listener.url, "--forward", rtmp.url("key")], timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(player.waitForExit(timeout: 60) == 0, "\(player.logTail())")
        PushTests.settle(listener)
        for (name, path) in [("srt", listener.output.path), ("rtmp", flv.path)] {
            let codecs = try Self.codecs(path)
            #expect(codecs.contains("aac"), "\(name): \(codecs)")
            let decoded = try Self.decodedSamples(["-i", path])
            #expect(decoded.errors == "", "\(name): \(decoded.errors)")
            // Most of the 6 s of sound (a push starts at its first IDR).
            #expect(decoded.samples >= 4 * 48_000, "\(name): \(decoded.samples) samples")
        }
    }

    /// A TCP server that sends `data` whole to each of its first `connections` callers,
    /// then closes: a stand-in for a producer's MPEG-TS listener, which serves every reader.
    final class TSServer: @unchecked Sendable {
        // @unchecked Sendable: `fd` and `data` are set in init and only read after; the one
        // thread it starts is the only other user.
        let port: UInt16
        private let fd: Int32
        private let data: [UInt8]
        private let thread: Thread

        init(data: [UInt8], connections: Int) throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            self.fd = fd
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
            guard bound == 0, listen(fd, 4) == 0 else { throw MediaServerError("bind: \(String(cString: strerror(errno)))") }
            _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
            port = UInt16(bigEndian: addr.sin_port)
            self.data = data
            thread = Thread {
                for _ in 0..<connections {
                    let c = accept(fd, nil, nil)
                    guard c >= 0 else { break }
                    var sent = 0
                    while sent < data.count {
                        let n = data[sent...].withUnsafeBytes { send(c, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                        if n <= 0 { break }
                        sent += n
                    }
                    close(c)
                }
                close(fd)
            }
            thread.start()
        }
    }

    @Test func aTCPInputThatSendsMPEGTSIsFoundAndDemuxed() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try Self.makeSource(dir)
        // The first connection is looked at and dropped; the demuxer's is the second.
        let server = try TSServer(data: [UInt8](try Data(contentsOf: source)), connections: 2)
        let out = dir.appendingPathComponent("out.mp4")
        let r = try Run.nalcast(["consume", "--from", "tcp://127.0.0.1:\(server.port)", "-o", out.path, "--reconnect-timeout", "1s"], timeout: 60)
        #expect(r.stderr.contains("sends MPEG-TS: reading it through libavformat"), "\(r.stderr)")
        #expect(try Self.codecs(out.path) == ["h264", "aac"])
        #expect(try Self.packets(out.path, "v").count == 150)
        #expect(try Self.packets(out.path, "a").count == (try Self.packets(source.path, "a")).count)
    }
}
