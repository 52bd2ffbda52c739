import Foundation
import TestSupport
import Testing

/// WHIP ingest (`consume --from whip-listen://`): real publishers started by the test send
/// into nalcast's own ICE-lite, DTLS-SRTP and RTP receiving side, and what consume writes is
/// decoded by FFmpeg: headless Chromium publishing a canvas (its captureStream, the WHIP
/// exchange in the page's JavaScript: Tests/Browser/whip_publish.py), and aiortc, an
/// independent implementation, with a tone (Tests/WebRTC/whip_publisher.py, in the venv of
/// scripts/setup). Both draw the left half of the picture in one colour and the right half
/// blue (0,0,255), 320x240.
@Suite(.serialized) struct WHIPTests {
    static let publisher = Run.root.appendingPathComponent("Tests/WebRTC/whip_publisher.py").path
    static let browserPublisher = PlaybackTests.browserTools.appendingPathComponent("whip_publish.py").path
    /// Where the two halves are checked, in a 320x240 picture.
    static let left = (x: 80, y: 120)
    static let right = (x: 240, y: 120)

    /// `consume --from whip-listen://127.0.0.1:0/whip -o DIR/out.ts` with `extra`, its
    /// events in the test's directory DIR; `body` gets the WHIP URL (the port the listener
    /// bound, from its line: a port found free before consume starts is free for anyone to
    /// take), the consumer, its events file and DIR. The consumer is stopped (SIGINT) when
    /// `body` returns, if it still runs.
    static func withIngest(_ extra: [String], _ body: (_ url: String, _ consume: Background, _ events: URL, _ dir: URL) throws -> Void) throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let events = dir.appendingPathComponent("events.jsonl")
        let consume = try Background(Run.nalcast, ["consume", "--from", "whip-listen://127.0.0.1:0/whip", "--events", events.path,
                                                   "-o", dir.appendingPathComponent("out.ts").path] + extra)
        defer {
            consume.signal(SIGINT)
            consume.wait()
        }
        #expect(consume.waitFor("WHIP: publishers POST their SDP offer to "), "\(consume.stderr)")
        let url = try #require(consume.stderr.firstMatch(of: #/POST their SDP offer to (http://127\.0\.0\.1:[1-9][0-9]*/whip) /#).map { String($0.1) },
                               "\(consume.stderr)")
        try body(url, consume, events, dir)
    }

    /// aiortc's publisher for `seconds` with `extra`: what it printed.
    static func publish(_ url: String, seconds: Double, _ extra: [String] = []) throws -> [String: Any] {
        let r = try Run.program(PlaybackTests.venvPython, [publisher, url, String(seconds)] + extra, timeout: seconds + 60)
        let last = r.stdout.split(separator: UInt8(ascii: "\n")).last.map { Data($0) } ?? Data()
        return try #require(try JSONSerialization.jsonObject(with: last) as? [String: Any], "\(r.text) \(r.stderr)")
    }

    /// The RGB colours at `points` of every frame of `path`, in decoding order.
    static func colours(_ path: String, at points: [(x: Int, y: Int)], width: Int = 320, height: Int = 240) throws -> [[[Int]]] {
        let raw = path + ".rgb"
        defer { try? FileManager.default.removeItem(atPath: raw) }
        let r = try Tool.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", path, "-map", "0:v", "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "rgb24", raw])
        #expect(r.status == 0, "\(r.stderr)")
        let data = try Data(contentsOf: URL(fileURLWithPath: raw))
        let size = width * height * 3
        return stride(from: 0, to: data.count - size + 1, by: size).map { start in
            points.map { p in
                let at = start + (p.y * width + p.x) * 3
                return [Int(data[at]), Int(data[at + 1]), Int(data[at + 2])]
            }
        }
    }

    static func near(_ seen: [Int], _ wanted: [Int]) -> Bool { zip(seen, wanted).allSatisfy { abs($0 - $1) <= 16 } }

    /// What consume wrote to DIR/out.ts, once it has ended: at least `count` frames, every one
    /// with its left half `colour` and its right half blue.
    static func expectFrames(_ dir: URL, atLeast count: Int, leftHalf colour: [Int]) throws {
        let frames = try written(dir)
        #expect(frames.count >= count, "\(frames.count) frames")
        #expect(frames.allSatisfy { near($0[0], colour) && near($0[1], [0, 0, 255]) }, "\(frames.prefix(3)) ... \(frames.suffix(3))")
    }

    /// The frames of DIR/out.ts once consume has ended: all 320x240, and the colours of
    /// each at the two halves.
    static func written(_ dir: URL) throws -> [[[Int]]] {
        let out = dir.appendingPathComponent("out.ts").path
        let video = try #require(try MediaProbe.video(out), "no video in \(out)")
        #expect(video.width == 320 && video.height == 240, "\(video)")
        #expect(try MediaProbe.decodeErrors(out) == "")
        return try colours(out, at: [left, right])
    }

    /// Chromium publishes its canvas: every picture consume writes is 320x240 with the red
    /// and the blue half where the page drew them (consume asked for an IDR at the start with
    /// a PLI, so the first decodes), and the publisher's DELETE ends its session: a clean
    /// end, after which `--reconnect-timeout 0` ends consume by itself (exit 0).
    @Test(.enabled(if: PlaybackTests.chromiumMissing == nil, "\(PlaybackTests.chromiumMissing ?? "")"))
    func chromiumPublishesItsCanvas() throws {
        try Self.withIngest(["--reconnect-timeout", "0"]) { url, consume, events, dir in
            let r = try Run.program(PlaybackTests.venvPython, [Self.browserPublisher, url, "3"], timeout: 120)
            let seen = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any], "\(r.text) \(r.stderr)")
            #expect(r.status == 0 && seen["status"] as? Int == 201 && seen["deleted"] as? Int == 200, "\(seen)")
            #expect(seen["state"] as? String == "connected" && (seen["framesEncoded"] as? Int ?? 0) >= 30, "\(seen)")
            // AES-GCM: the first SRTP profile nalcast offers in use_srtp, which Chromium takes.
            #expect(seen["srtpCipher"] as? String == "SRTP_AEAD_AES_128_GCM", "\(seen)")
            #expect(consume.stderr.contains(", SRTP_AEAD_AES_128_GCM, H.264"), "\(consume.stderr)")
            #expect(WHEPTests.waitForEvent(events) { $0["event"] as? String == "disconnected" && $0["reason"] as? String == "DELETE of its session" },
                    "\(WebViewerTests.events(events))")
            #expect(consume.stderr.contains("H.264; its handshake took"), "\(consume.stderr)")
            #expect(consume.wait(timeout: 30) == 0, "\(consume.stderr)")
            #expect(consume.stderr.contains("the producer ended the stream; not waiting"), "\(consume.stderr)")
            try Self.expectFrames(dir, atLeast: 30, leftHalf: [255, 0, 0])
        }
    }

    /// aiortc publishes pictures and a 440 Hz tone; a reader of consume's relay (`--listen
    /// ts:tcp://`, FFmpeg copying it to a file) gets both: the colours in place, the sound
    /// decoded from the AAC consume made of the Opus at the tone's level (-6 dBFS: RMS 0.354)
    /// and pitch.
    @Test(.enabled(if: WHEPTests.aiortcMissing == nil, "\(WHEPTests.aiortcMissing ?? "")"))
    func aiortcPublishesPicturesAndSoundThroughTheRelay() throws {
        try Self.withIngest(["--listen", "ts:tcp://127.0.0.1:0"]) { url, consume, _, dir in
            let relayed = dir.appendingPathComponent("relayed.ts")
            #expect(consume.waitFor("(MPEG-TS)"), "\(consume.stderr)")
            let reader = try Background("ffmpeg", ["-nostdin", "-v", "error", "-i", try RelayAudioTests.tsAddress(consume), "-c", "copy", "-f", "mpegts", relayed.path])
            let seen = try Self.publish(url, seconds: 4, ["--tone", "440"])
            #expect(seen["status"] as? Int == 201 && seen["deleted"] as? Int == 200, "\(seen)")
            let answer = seen["answer"] as? String ?? ""
            #expect(answer.contains("a=recvonly") && answer.contains("H264/90000") && answer.contains("opus/48000/2") && answer.contains("a=ice-lite"), "\(answer)")
            #expect(consume.waitFor("H.264 and Opus (relayed as AAC)"), "\(consume.stderr)")
            // aiortc's libsrtp does AES-GCM too: nalcast's first choice is taken.
            #expect(consume.stderr.contains(", SRTP_AEAD_AES_128_GCM, H.264"), "\(consume.stderr)")
            consume.signal(SIGINT)
            #expect(consume.wait() == 0, "\(consume.stderr)")
            #expect(reader.wait() == 0, "\(reader.stderr)")
            let video = try #require(try MediaProbe.video(relayed.path), "\(reader.stderr)")
            #expect(video.width == 320 && video.height == 240 && video.frames >= 60, "\(video)")
            let last = try #require(try Self.colours(relayed.path, at: [Self.left, Self.right]).last)
            #expect(Self.near(last[0], [255, 0, 0]) && Self.near(last[1], [0, 0, 255]), "\(last)")
            let sound = try PCMAnalysis.decode(relayed)
            let range = try #require(sound.soundRange(threshold: 0.1), "no sound in the relay's output")
            #expect(Double(range.count) / 48_000 >= 2.5, "\(range.count) samples of sound")
            let middle = (range.lowerBound + 24_000)..<(range.upperBound - 4_800)
            #expect(abs(sound.level(in: middle) - 0.354) < 0.03, "RMS \(sound.level(in: middle)), a -6 dBFS sine is 0.354")
            #expect(abs(sound.frequency(in: middle) - 440) < 2, "\(sound.frequency(in: middle)) Hz")
        }
    }

    /// A publisher that offers to be the DTLS server (a=setup:passive, as FFmpeg's WHIP muxer
    /// does): the answer says active, nalcast opens the handshake once ICE has a path, and
    /// the pictures come as from any publisher (its green half and blue half in place).
    @Test(.enabled(if: WHEPTests.aiortcMissing == nil, "\(WHEPTests.aiortcMissing ?? "")"))
    func aPublisherThatIsTheDTLSServer() throws {
        try Self.withIngest([]) { url, consume, _, dir in
            let seen = try Self.publish(url, seconds: 2, ["--passive", "--colour", "0,255,0"])
            #expect(seen["status"] as? Int == 201 && seen["deleted"] as? Int == 200, "\(seen)")
            #expect((seen["answer"] as? String ?? "").contains("a=setup:active\r\n"), "\(seen)")
            #expect(consume.waitFor("H.264; its handshake took"), "\(consume.stderr)")
            consume.signal(SIGINT)
            #expect(consume.wait() == 0, "\(consume.stderr)")
            try Self.expectFrames(dir, atLeast: 20, leftHalf: [0, 255, 0])
        }
    }

    /// A publisher that ends with DTLS's close_notify and no DELETE ends cleanly all the
    /// same: with `--reconnect-timeout 0` consume ends by itself (exit 0), as after a DELETE.
    @Test(.enabled(if: WHEPTests.aiortcMissing == nil, "\(WHEPTests.aiortcMissing ?? "")"))
    func aCloseNotifyIsACleanEnd() throws {
        try Self.withIngest(["--reconnect-timeout", "0"]) { url, consume, _, dir in
            let seen = try Self.publish(url, seconds: 1, ["--close"])
            #expect(seen["status"] as? Int == 201 && seen["deleted"] == nil, "\(seen)")
            #expect(consume.wait(timeout: 30) == 0, "\(consume.stderr)")
            #expect(consume.stderr.contains("the publisher left whip-listen://127.0.0.1:0/whip (closed by the publisher (DTLS close_notify))"), "\(consume.stderr)")
            #expect(consume.stderr.contains("the producer ended the stream; not waiting"), "\(consume.stderr)")
            try Self.expectFrames(dir, atLeast: 15, leftHalf: [255, 0, 0])
        }
    }

    /// One publisher at a time: while a green one publishes, a second offer is 409 with one
    /// line; the first goes away without a word (no DELETE, no DTLS close: its process ends,
    /// told to by the test once the second was refused, however long that took), which
    /// consume sees (no packet for --stall-timeout) and waits; the next (red) comes and is
    /// written on after the green pictures.
    @Test(.enabled(if: WHEPTests.aiortcMissing == nil, "\(WHEPTests.aiortcMissing ?? "")"))
    func onePublisherAtATimeAndTheNextAfterIt() throws {
        try Self.withIngest(["--stall-timeout", "1s"]) { url, consume, events, dir in
            let first = try Background(PlaybackTests.venvPython, [Self.publisher, url, "60", "--colour", "0,255,0", "--no-delete"])
            #expect(WHEPTests.waitForEvent(events) { $0["event"] as? String == "connected" }, "\(consume.stderr)")
            let second = try Self.publish(url, seconds: 1, ["--offer-only"])
            #expect(second["status"] as? Int == 409, "\(second)")
            #expect((second["body"] as? String)?.hasPrefix("WHIP: /whip already has a publisher (one at a time)") == true, "\(second)")
            #expect(consume.waitFor("refused a second publisher (409)"), "\(consume.stderr)")
            first.signal(SIGTERM)
            #expect(first.wait(timeout: 60) == 0, "\(first.stderr)")
            #expect(WHEPTests.waitForEvent(events) { $0["event"] as? String == "disconnected" }, "\(consume.stderr)")
            #expect(consume.stderr.contains("stalled: no packet for 1.000 s"), "\(consume.stderr)")
            let next = try Self.publish(url, seconds: 1.5)
            #expect(next["status"] as? Int == 201 && next["deleted"] as? Int == 200, "\(next)")
            #expect(WHEPTests.waitForEvent(events) { $0["reason"] as? String == "DELETE of its session" }, "\(consume.stderr)")
            consume.signal(SIGINT)
            #expect(consume.wait() == 0, "\(consume.stderr)")
            let all = WebViewerTests.events(events)
            #expect(all.filter { $0["event"] as? String == "connected" }.count == 2, "\(all)")
            let frames = try Self.written(dir)
            let green = frames.firstIndex { Self.near($0[0], [0, 255, 0]) }
            let red = frames.firstIndex { Self.near($0[0], [255, 0, 0]) }
            #expect(green != nil && red != nil && green! < red!, "green at \(String(describing: green)), red at \(String(describing: red)) of \(frames.count)")
            #expect(frames.last.map { Self.near($0[0], [255, 0, 0]) && Self.near($0[1], [0, 0, 255]) } == true, "\(String(describing: frames.last))")
        }
    }

    static func metric(_ port: Int, _ name: String) throws -> Double {
        try WHEPTests.metric("http://127.0.0.1:\(port)/", name)
    }

    /// Loss on the way in: one video packet in 10 lost the first time it is sent is asked for
    /// again (NACK) and comes again; then, from a second publisher, one in 15 lost for good:
    /// its picture is given up (dropped, counted), a new one asked for (PLI), and what consume
    /// writes still decodes without an error, the colours in place to the end.
    @Test(.enabled(if: WHEPTests.aiortcMissing == nil, "\(WHEPTests.aiortcMissing ?? "")"))
    func lostPacketsAreAskedForAgainOrThePictureIs() throws {
        try Self.withIngest(["--metrics", "tcp://127.0.0.1:0"]) { url, consume, events, dir in
            let port = try #require(ContractProcess.metricsPort(consume), "\(consume.stderr)")
            let resent = try Self.publish(url, seconds: 1.5, ["--drop", "10"])
            #expect(resent["status"] as? Int == 201 && (resent["dropped"] as? Int ?? 0) >= 3, "\(resent) \(consume.stderr)")
            #expect(WHEPTests.waitForEvent(events) { $0["reason"] as? String == "DELETE of its session" }, "\(consume.stderr)")
            #expect(try Self.metric(port, "nalcast_whip_nacked_packets_total") >= 3)
            #expect(try Self.metric(port, "nalcast_whip_picture_requests_total") >= 1, "the one at the start")
            let requestsBefore = try Self.metric(port, "nalcast_whip_picture_requests_total")
            let lost = try Self.publish(url, seconds: 1.5, ["--lose", "15"])
            #expect(lost["status"] as? Int == 201 && (lost["dropped"] as? Int ?? 0) >= 1, "\(lost)")
            #expect(Wait.until { WebViewerTests.events(events).filter { $0["event"] as? String == "disconnected" }.count >= 2 }, "\(consume.stderr)")
            #expect(try Self.metric(port, "nalcast_whip_dropped_access_units_total{reason=\"damaged\"}") >= 1)
            #expect(try Self.metric(port, "nalcast_whip_picture_requests_total") >= requestsBefore + 2, "the start's and the damaged picture's")
            #expect(try Self.metric(port, "nalcast_consumer_lost_packets_total") >= 1, "the packets given up on")
            consume.signal(SIGINT)
            #expect(consume.wait() == 0, "\(consume.stderr)")
            try Self.expectFrames(dir, atLeast: 60, leftHalf: [255, 0, 0])
        }
    }

    /// What is refused, one line each: an offer with no H.264 (400), one not sent as
    /// application/sdp (415), a session that is not there (404), PATCH (405, every candidate
    /// is in the answer); with a token file, an offer without a token is 401 and one whose
    /// token may only watch 403, one that may publish is answered.
    @Test(.enabled(if: WHEPTests.aiortcMissing == nil, "\(WHEPTests.aiortcMissing ?? "")"))
    func refusalsSayWhy() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let tokens = dir.appendingPathComponent("tokens")
        try "s3cret-watcher-0123 watch\ns3cret-publisher-456 publish\n".write(to: tokens, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: tokens.path)
        try Self.withIngest(["--token-file", tokens.path]) { url, consume, _, _ in
            func curl(_ args: [String]) throws -> (status: String, body: String) {
                let r = try Run.program("curl", ["-s", "--max-time", "5", "-w", "\n%{http_code}"] + args)
                let lines = r.text.split(separator: "\n", omittingEmptySubsequences: false)
                return (String(lines.last ?? ""), lines.dropLast().joined(separator: "\n").trimmingCharacters(in: .newlines))
            }
            let publisher = ["-H", "Authorization: Bearer s3cret-publisher-456"]
            let vp8 = try Self.publish(url, seconds: 1, ["--vp8-only", "--token", "s3cret-publisher-456"])
            #expect(vp8["status"] as? Int == 400, "\(vp8)")
            #expect(vp8["body"] as? String == "WHIP: the offer sends no H.264 with packetization-mode=1 (nalcast relays H.264 as it was encoded)\n", "\(vp8)")
            #expect(consume.waitFor("refused an offer: the offer sends no H.264"), "\(consume.stderr)")
            #expect(try curl(publisher + ["-X", "POST", "-H", "Content-Type: text/plain", "--data-binary", "v=0", url]).status == "415")
            #expect(try curl(publisher + ["-X", "DELETE", url + "/nosuchsession"]).status == "404")
            let patch = try Run.program("curl", ["-s", "-i", "--max-time", "5", "-X", "PATCH"] + publisher + ["--data-binary", "a=x", url + "/abc"])
            #expect(patch.text.hasPrefix("HTTP/1.1 405") && patch.text.contains("Allow: DELETE"), "\(patch.text)")
            #expect(try curl(["-X", "POST", "-H", "Content-Type: application/sdp", "--data-binary", "v=0", url]).status == "401")
            #expect(try curl(["-X", "POST", "-H", "Authorization: Bearer s3cret-watcher-0123", "-H", "Content-Type: application/sdp", "--data-binary", "v=0", url]).status == "403")
            let answered = try Self.publish(url, seconds: 1, ["--offer-only", "--token", "s3cret-publisher-456"])
            #expect(answered["status"] as? Int == 201, "\(answered)")
        }
    }
}
