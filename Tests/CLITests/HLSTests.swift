import Foundation
import TestSupport
import Testing

/// `produce --hls DIR --web ADDR`: the live LL-HLS read by FFmpeg's HLS demuxer, GStreamer's
/// `hlsdemux`, mpv and VLC while it is made (pictures decoded, sound present), its playlists checked
/// against RFC 8216bis on every blocking reload, and the files it leaves. One producer for
/// the suite: 1 s segments (an IDR a second), 200 ms parts, 5 s at least: until every player
/// has followed it two segments.
@Suite(.serialized) struct HLSTests {
    /// `http://127.0.0.1:PORT/hls/` from the producer's "HLS on …" line.
    static func base(_ producer: Background) throws -> String {
        #expect(producer.waitFor("HLS on "), "producer did not start: \(producer.stderr)")
        let line = try #require(producer.stderr.split(separator: "\n").first { $0.contains("HLS on ") })
        let url = try #require(line.split(whereSeparator: { $0 == " " || $0 == "," }).first { $0.hasPrefix("http://") && $0.hasSuffix("index.m3u8") })
        return String(url.dropLast("index.m3u8".count))
    }

    /// GET `url` (with `Range: bytes=RANGE`): status, the header fields (names lowercased) and the body.
    static func get(_ url: String, range: String? = nil) throws -> (status: Int, headers: [String: String], body: String) {
        let r = try Run.program("curl", ["-s", "-D", "-"] + (range.map { ["-H", "Range: bytes=\($0)"] } ?? []) + [url], timeout: 20)
        let text = String(decoding: r.stdout, as: UTF8.self)
        let split = text.components(separatedBy: "\r\n\r\n")
        let head = split.first ?? ""
        var headers: [String: String] = [:]
        for line in head.components(separatedBy: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
        return (status, headers, split.dropFirst().joined(separator: "\r\n\r\n"))
    }

    @Test func liveLowLatencyHLSIsReadByFFmpegAndGStreamerAndKeepsTheRules() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let hls = dir.appendingPathComponent("hls").path
        // Stopped by the test (its --duration is a bound): a stream of fixed length raced the
        // players' start, and the reloads, on a loaded machine.
        let producer = try Background(Run.nalcast, ["produce", "--size", "320x240", "--duration", "120s", "--keyint", "1s", "--audio", "tone",
                                                    "--hls", hls, "--hls-segment", "1s", "--web", "tcp://127.0.0.1:0"])
        let base = try Self.base(producer)
        // The first answer waits for the first complete segment.
        let first = try Self.get(base + "index.m3u8")
        #expect(first.status == 200, "\(first)")
        #expect(first.headers["cache-control"] == "max-age=1")
        #expect(first.headers["content-type"] == "application/vnd.apple.mpegurl")

        // Both readers follow it live, from now to the end.
        let probeOut = dir.appendingPathComponent("ffprobe.txt")
        let ffprobe = try Background("ffprobe", ["-v", "error", "-count_frames", "-show_entries", "stream=codec_type,nb_read_frames", "-of", "csv=p=0",
                                                 base + "index.m3u8"], stdoutTo: probeOut)
        let gstOut = dir.appendingPathComponent("gst.txt")
        let gst = try Background("gst-launch-1.0", ["-v", "souphttpsrc", "location=\(base)index.m3u8", "!", "hlsdemux", "!", "decodebin", "name=d",
                                                    "d.", "!", "queue", "!", "video/x-raw", "!", "fakesink", "name=v", "silent=false",
                                                    "d.", "!", "queue", "!", "audio/x-raw", "!", "fakesink", "name=a", "silent=false"], stdoutTo: gstOut)
        // mpv's encoding mode writes every picture and the sound it decoded; VLC's scene
        // filter every picture it showed, its afile output the sound it played.
        let mpvOut = dir.appendingPathComponent("mpv.nut")
        let mpv = try Background("mpv", ["--no-config", "--really-quiet", "--o=\(mpvOut.path)", "--of=nut", "--ovc=rawvideo", "--oac=pcm_s16le",
                                         base + "index.m3u8"])
        let vlcDir = dir.appendingPathComponent("vlc")
        try FileManager.default.createDirectory(at: vlcDir, withIntermediateDirectories: true)
        chmod(dir.path, 0o755)
        chmod(vlcDir.path, 0o777)
        let asNobody = getuid() == 0 ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : []
        let vlc = try Background("/usr/bin/env", asNobody + ["env", "HOME=\(vlcDir.path)", "cvlc", "-I", "dummy", "--play-and-exit", "--vout=dummy",
                                 "--video-filter=scene", "--scene-format=png", "--scene-ratio=1", "--scene-path=\(vlcDir.path)", "--scene-prefix=f",
                                 "--aout=afile", "--audiofile-file=\(vlcDir.path)/sound.wav", base + "index.m3u8"])

        // The stream ends (SIGINT) once it ran 5 s and every player has followed it for two
        // segments since its first picture (ffprobe, the quickest to start, says nothing before
        // its end): what each decoded is then what it got live.
        var allPlaying: Int?, stopped = false
        func playing() -> Bool {
            let gstText = (try? String(contentsOf: gstOut, encoding: .utf8)) ?? ""
            let mpvBytes = (try? FileManager.default.attributesOfItem(atPath: mpvOut.path)[.size] as? Int) ?? 0
            let shots = (try? FileManager.default.contentsOfDirectory(atPath: vlcDir.path))?.contains { $0.hasSuffix(".png") } ?? false
            return gstText.contains("GstFakeSink:v") && mpvBytes > 320 * 240 * 3 / 2 && shots
        }
        func stopWhenFollowed(_ playlist: HLSPlaylistRules.Parsed) {
            let complete = playlist.mediaSequence + playlist.segments.count
            if allPlaying == nil && playing() { allPlaying = complete }
            if !stopped, complete >= 5, let since = allPlaying, complete >= since + 2 {
                producer.signal(SIGINT)
                stopped = true
            }
        }

        // Blocking reloads, each for the part after the newest: every answer holds it and keeps the rules.
        var rules = HLSPlaylistRules()
        var playlist = HLSPlaylistRules.parse(first.body)
        #expect(rules.violations(first.body).isEmpty)
        var blocked = 0
        while !playlist.ended && blocked < 60 {
            stopWhenFollowed(playlist)
            let sequence = playlist.mediaSequence + playlist.segments.count
            let part = playlist.parts.filter { $0.sequence == sequence }.count
            let reload = try Self.get(base + "index.m3u8?_HLS_msn=\(sequence)&_HLS_part=\(part)")
            guard reload.status == 200 else { break }
            blocked += 1
            let violations = rules.violations(reload.body)
            #expect(violations.isEmpty, "\(violations)\n\(reload.body)")
            playlist = HLSPlaylistRules.parse(reload.body)
            let listed = playlist.parts.filter { $0.sequence == sequence }.count + playlist.parts.filter { $0.sequence == sequence + 1 }.count
            #expect(playlist.ended || listed > part, "asked for part \(part) of \(sequence):\n\(reload.body)")
            if blocked == 3, let hint = playlist.preloadHint, let last = playlist.parts.last {
                // A part is a byte range of its segment, served while the segment is written.
                let uri = String(last.uri.prefix { $0 != "@" })
                let listed = try Self.get(base + uri, range: "\(last.offset)-\(last.offset + last.length - 1)")
                #expect(listed.status == 206 && listed.headers["content-range"]?.hasPrefix("bytes \(last.offset)-\(last.offset + last.length - 1)/") == true,
                        "\(listed.headers)")
                // The hinted part (its segment from BYTERANGE-START on) is answered once written, immutable.
                let split = hint.split(separator: "@")
                #expect(split.count == 2, "the hint \(hint) has no BYTERANGE-START")
                let hinted = try Self.get(base + split[0], range: "\(split.last ?? "0")-")
                #expect(hinted.status == 206 && hinted.headers["cache-control"] == "public, max-age=31536000, immutable", "\(hinted.headers)")
                #expect(hinted.headers["content-range"]?.hasPrefix("bytes \(split.last ?? "")-") == true, "\(hinted.headers)")
                let far = try Self.get(base + "index.m3u8?_HLS_msn=\(sequence + 5)")
                #expect(far.status == 400)
            }
        }
        #expect(blocked >= 10, "only \(blocked) blocking reloads answered")
        // Past the reloads' bound: the players still get their two segments (under a deadline).
        let deadline = Moment.now.addingTimeInterval(60)
        while !stopped && Moment.now < deadline {
            if let text = try? Self.get(base + "index.m3u8").body { stopWhenFollowed(HLSPlaylistRules.parse(text)) }
            if !stopped { usleep(100_000) }
        }
        if !stopped { producer.signal(SIGINT) }
        #expect(producer.wait(timeout: 20) == 0, "\(producer.stderr)")
        #expect(ffprobe.wait(timeout: 20) == 0)
        #expect(gst.wait(timeout: 20) == 0)
        #expect(mpv.wait(timeout: 20) == 0, "\(mpv.stderr.suffix(2000))")
        #expect(vlc.wait(timeout: 20) == 0, "\(vlc.stderr.suffix(2000))")

        let probed = (try? String(contentsOf: probeOut, encoding: .utf8)) ?? ""
        let frames = probed.split(separator: "\n").filter { $0.hasPrefix("video,") }.compactMap { Int($0.split(separator: ",")[1]) }
        #expect((frames.first ?? 0) >= 60, "ffprobe: \(probed)")
        #expect(probed.contains("audio,"), "ffprobe found no sound: \(probed)")
        let chains = ((try? String(contentsOf: gstOut, encoding: .utf8)) ?? "").split(separator: "\n").filter { $0.contains("chain") }
        #expect(chains.filter { $0.contains("GstFakeSink:v") }.count >= 60, "GStreamer decoded \(chains.count) buffers")
        #expect(chains.contains { $0.contains("GstFakeSink:a") }, "GStreamer decoded no sound")

        let mpvFacts = try Run.program("ffprobe", ["-v", "error", "-count_frames", "-show_entries", "stream=codec_type,nb_read_frames", "-of", "csv=p=0", mpvOut.path])
        let mpvText = String(decoding: mpvFacts.stdout, as: UTF8.self)
        let mpvFrames = mpvText.split(separator: "\n").filter { $0.hasPrefix("video,") }.compactMap { Int($0.split(separator: ",")[1]) }
        #expect((mpvFrames.first ?? 0) >= 60, "mpv: \(mpvText)")
        #expect(mpvText.contains("audio,"), "mpv wrote no sound: \(mpvText)")
        let shown = try FileManager.default.contentsOfDirectory(atPath: vlcDir.path).filter { $0.hasSuffix(".png") }
        #expect(shown.count >= 60, "VLC showed \(shown.count) pictures")
        let sound = (try? Data(contentsOf: vlcDir.appendingPathComponent("sound.wav"))) ?? Data()
        // Past the WAV header, samples that are not silence: the tone played.
        #expect(sound.count > 48_000 && sound.dropFirst(44).contains { $0 != 0 }, "VLC played \(sound.count) bytes of sound")

        // What the directory keeps: whole files only, the ended playlist, decodable.
        let files = try FileManager.default.contentsOfDirectory(atPath: hls)
        #expect(!files.contains { $0.hasSuffix(".part") }, "\(files)")
        let final = try String(contentsOfFile: hls + "/index.m3u8", encoding: .utf8)
        #expect(final.hasSuffix("#EXT-X-ENDLIST\n"))
        #expect(rules.violations(final).isEmpty, "\(final)")
        // Each segment is the bytes its parts name, no more.
        for part in HLSPlaylistRules.parse(final).parts {
            let uri = String(part.uri.prefix { $0 != "@" })
            let size = (try FileManager.default.attributesOfItem(atPath: hls + "/" + uri)[.size] as? Int) ?? -1
            #expect(part.offset + part.length <= size, "\(part.uri) past the end of \(uri) (\(size) bytes)")
        }
        let lastPart = HLSPlaylistRules.parse(final).parts.last
        let lastURI = String(lastPart?.uri.prefix { $0 != "@" } ?? "")
        #expect((try? FileManager.default.attributesOfItem(atPath: hls + "/" + lastURI)[.size] as? Int) == (lastPart.map { $0.offset + $0.length }))
        let decode = try Run.program("ffmpeg", ["-v", "error", "-i", hls + "/index.m3u8", "-f", "null", "-"])
        #expect(decode.status == 0 && decode.stderr.isEmpty, "\(decode.stderr)")
    }
}
