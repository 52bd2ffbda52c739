import Foundation
import TestSupport
import Testing

/// WHEP on `--web`: real WebRTC peers play `produce`'s and a relay's stream over nalcast's
/// own ICE-lite, DTLS-SRTP and RTP: headless Chromium through the page (`?transport=webrtc`,
/// Tests/Browser/web_check.py), and aiortc, an independent implementation, as a bare WHEP
/// client (Tests/WebRTC/whep_client.py, in the venv of scripts/setup) that also sends a PLI
/// and NACKs. And the HTTP side as RFC 9725 and the WHEP draft have it.
@Suite(.serialized) struct WHEPTests {
    static let client = Run.root.appendingPathComponent("Tests/WebRTC/whep_client.py").path
    static let aiortcMissing: String? = {
        guard FileManager.default.isExecutableFile(atPath: PlaybackTests.venvPython) else { return "no venv (scripts/setup)" }
        let r = try? Run.program(PlaybackTests.venvPython, ["-c", "import aiortc, numpy"], timeout: 30)
        return r?.status == 0 ? nil : "aiortc is not in the venv (scripts/setup installs it)"
    }()

    /// Runs `body` beside a producer of the test pattern at 640x360 with `--web` on a port of
    /// the kernel's and `extra`: the page's URL, its events file and a directory of the
    /// test's; the producer is stopped (SIGINT) and the directory removed when `body` returns.
    static func withProducer(_ extra: [String], _ body: (_ url: String, _ events: URL, _ dir: URL) throws -> Void) throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let events = dir.appendingPathComponent("events.jsonl")
        let (producer, url) = try WebViewerTests.producer(["--events", events.path] + extra)
        defer {
            producer.signal(SIGINT)
            producer.wait()
        }
        try body(url, events, dir)
    }

    /// Whether the events file holds an event that `matches`, waiting for it (up to 20 s).
    static func waitForEvent(_ events: URL, _ matches: ([String: Any]) -> Bool) -> Bool {
        Wait.until { WebViewerTests.events(events).contains(where: matches) }
    }

    static func metric(_ page: String, _ name: String) throws -> Double {
        let text = try Run.program("curl", ["-s", "--max-time", "5", page + "metrics"]).text
        let line = text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
        return line.flatMap { Double($0.split(separator: " ")[1]) } ?? -1
    }

    static func play(_ whep: String, frames: Int, _ extra: [String] = []) throws -> [String: Any] {
        let points = String(decoding: try JSONSerialization.data(withJSONObject: WebViewerTests.yellow.points + WebViewerTests.blue.points), as: UTF8.self)
        let r = try Run.program(PlaybackTests.venvPython, [client, whep, String(frames), points] + extra, timeout: 120)
        let seen = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any], "\(r.text) \(r.stderr)")
        #expect(r.status == 0 && seen["error"] == nil, "\(seen) \(r.stderr)")
        return seen
    }

    /// Chromium plays `produce`'s stream over WebRTC through the page: frames painted at
    /// 640x360, the colour bars where the test pattern draws them, a capture → paint latency
    /// read from the RTP timestamps, and the viewer a reader of the fan-out.
    @Test(.enabled(if: PlaybackTests.chromiumMissing == nil, "\(PlaybackTests.chromiumMissing ?? "")"))
    func chromiumPlaysTheStreamOverWebRTC() throws {
        try Self.withProducer([]) { url, events, _ in
            let r = try Run.program(PlaybackTests.venvPython, [PlaybackTests.browserTools.appendingPathComponent("web_check.py").path, url + "?transport=webrtc", WebViewerTests.points], timeout: 120)
            #expect(r.status == 0, "\(r.text) \(r.stderr)")
            let seen = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any], "\(r.text) \(r.stderr)")
            #expect(seen["transport"] as? String == "webrtc", "\(seen)")
            #expect((seen["painted"] as? Int ?? 0) >= 30, "\(seen)")
            #expect(seen["width"] as? Int == 640 && seen["height"] as? Int == 360, "\(seen)")
            let latency = seen["latencyMs"] as? Double ?? -1
            #expect(latency > 0 && latency < 2000, "\(seen)")
            #expect(seen["problem"] is NSNull, "\(seen)")
            WebViewerTests.checkBars(seen["pixels"] as? [[Int]] ?? [], "the canvas over WebRTC")
            #expect(WebViewerTests.events(events).contains { ($0["peer"] as? String)?.hasSuffix("(webrtc)") == true }, "\(WebViewerTests.events(events))")
            #expect(try Self.metric(url, "nalcast_webrtc_connected_total") == 1)
        }
    }

    /// The page over WebRTC offers to receive audio too: with `--audio`, Chromium gets the
    /// Opus packets beside the pictures (its getStats' packetsReceived; what headless Chromium
    /// does not play out it does not measure, so the sound itself is aiortc's test below).
    /// The media is protected with AES-GCM, the first profile nalcast offers in use_srtp
    /// (the transport's srtpCipher).
    @Test(.enabled(if: PlaybackTests.chromiumMissing == nil, "\(PlaybackTests.chromiumMissing ?? "")"))
    func chromiumGetsTheSoundOverWebRTC() throws {
        try Self.withProducer(["--audio", "tone"]) { url, _, _ in
            let r = try Run.program(PlaybackTests.venvPython, [PlaybackTests.browserTools.appendingPathComponent("web_check.py").path, url + "?transport=webrtc",
                                                               WebViewerTests.points, #"{"audioPackets": 50, "srtpCipher": "SRTP_AEAD_AES_128_GCM"}"#], timeout: 120)
            #expect(r.status == 0, "\(r.text) \(r.stderr)")
            let last = r.stdout.split(separator: UInt8(ascii: "\n")).last.map { Data($0) } ?? Data()
            let seen = try #require(try JSONSerialization.jsonObject(with: last) as? [String: Any], "\(r.text) \(r.stderr)")
            #expect(seen["transport"] as? String == "webrtc" && (seen["painted"] as? Int ?? 0) >= 30, "\(seen)")
            #expect((seen["audioPackets"] as? Int ?? 0) >= 50, "\(seen)")
            #expect(seen["srtpCipher"] as? String == "SRTP_AEAD_AES_128_GCM", "\(seen)")
            #expect(try Self.metric(url, "nalcast_webrtc_audio_packets_sent_total") >= 50)
        }
    }

    /// aiortc decodes `produce`'s stream (the colours of the bars), asks for a picture (PLI:
    /// the encoder makes an IDR, with an IDR every 20 s otherwise) and for packets again
    /// (NACK: two answered from the history, one never sent counted), then ends its session
    /// with DELETE.
    @Test(.enabled(if: aiortcMissing == nil, "\(aiortcMissing ?? "")"))
    func aiortcPlaysAsksForAPictureAndForPackets() throws {
        try Self.withProducer(["--keyint", "600"]) { url, events, _ in
            let seen = try Self.play(url + "whep", frames: 60, ["--nack", "10", "--pli", "20"])
            // At least the 60 asked: the client goes on until a keyframe came after its PLI.
            #expect(seen["frames"] as? Int ?? 0 >= 60 && seen["width"] as? Int == 640 && seen["height"] as? Int == 360, "\(seen)")
            #expect(seen["status"] as? Int == 201 && (seen["location"] as? String)?.hasPrefix("/whep/") == true && seen["deleted"] as? Int == 200, "\(seen)")
            #expect(seen["keyframesAfterPLI"] as? Int ?? 0 >= 1, "\(seen)")
            WebViewerTests.checkBars(seen["pixels"] as? [[Int]] ?? [], "aiortc's last frame")
            #expect(try Self.metric(url, "nalcast_webrtc_keyframe_requests_total") == 1)
            #expect(try Self.metric(url, "nalcast_webrtc_nacked_packets_total") == 3)
            #expect(try Self.metric(url, "nalcast_webrtc_retransmitted_packets_total") == 2)
            #expect(try Self.metric(url, "nalcast_webrtc_nacked_not_in_history_total") == 1)
            let all = WebViewerTests.events(events)
            #expect(all.filter { $0["event"] as? String == "idr-forced" }.count >= 2, "the join's IDR and the PLI's: \(all)")
            // The viewer's end is said on a later turn of the loop than the DELETE's answer.
            #expect(Self.waitForEvent(events) { $0["reason"] as? String == "ended by the viewer (DELETE)" }, "\(WebViewerTests.events(events))")
        }
    }

    /// A peer whose libsrtp has no AES-GCM (aiortc told to offer SRTP_AES128_CM_SHA1_80
    /// alone) gets AES-CM, nalcast's second choice: its handshake completes (OpenSSL picks
    /// only a profile both offered) and every frame decodes.
    @Test(.enabled(if: aiortcMissing == nil, "\(aiortcMissing ?? "")"))
    func aPeerWithoutAESGCMGetsAESCM() throws {
        try Self.withProducer([]) { url, _, _ in
            let seen = try Self.play(url + "whep", frames: 30, ["--aes-cm-only"])
            #expect(seen["frames"] as? Int == 30 && seen["width"] as? Int == 640, "\(seen)")
            WebViewerTests.checkBars(seen["pixels"] as? [[Int]] ?? [], "aiortc's last frame over AES-CM")
            #expect(try Self.metric(url, "nalcast_webrtc_connected_total") == 1)
        }
    }

    /// One packet in 5 lost on its way (aiortc drops each datagram the first time it comes
    /// off ICE, before SRTP): every frame still decodes, the colour bars in place, and no
    /// picture had to be asked for again (no PLI): each loss was NACKed and sent again from
    /// the viewer's history (counted).
    @Test(.enabled(if: aiortcMissing == nil, "\(aiortcMissing ?? "")"))
    func lostPacketsAreSentAgain() throws {
        try Self.withProducer([]) { url, _, _ in
            let seen = try Self.play(url + "whep", frames: 60, ["--drop", "5"])
            #expect(seen["frames"] as? Int == 60 && seen["width"] as? Int == 640, "\(seen)")
            WebViewerTests.checkBars(seen["pixels"] as? [[Int]] ?? [], "aiortc's last frame after losses")
            #expect(seen["dropped"] as? Int ?? 0 >= 5, "\(seen)")
            #expect(try Self.metric(url, "nalcast_webrtc_nacked_packets_total") >= 1)
            #expect(try Self.metric(url, "nalcast_webrtc_retransmitted_packets_total") >= 1)
            #expect(try Self.metric(url, "nalcast_webrtc_keyframe_requests_total") == 0)
        }
    }

    /// A relay (`consume --web`) serves WHEP too; a PLI, with no encoder to ask, starts the
    /// viewer again at the cached GOP's IDR.
    @Test(.enabled(if: aiortcMissing == nil, "\(aiortcMissing ?? "")"))
    func aRelayServesWHEP() throws {
        let port = try freePort()
        let producer = try Background(Run.nalcast, ["produce", "--source", "testsrc", "--size", "640x360", "--keyint", "600", "--listen", "tcp://127.0.0.1:\(port)"])
        defer {
            producer.signal(SIGINT)
            producer.wait()
        }
        let webPort = try freePort()
        let relay = try Background(Run.nalcast, ["consume", "--from", "tcp://127.0.0.1:\(port)", "--web", "tcp://127.0.0.1:\(webPort)"])
        defer {
            relay.signal(SIGINT)
            relay.wait()
        }
        #expect(relay.waitFor("WebRTC (WHEP): POST an offer to /whep"), "\(relay.stderr)")
        let seen = try Self.play("http://127.0.0.1:\(webPort)/whep", frames: 45, ["--pli", "15"])
        // At least the 45 asked: the client goes on until a keyframe came after its PLI.
        #expect(seen["frames"] as? Int ?? 0 >= 45 && seen["width"] as? Int == 640, "\(seen)")
        #expect(seen["keyframesAfterPLI"] as? Int ?? 0 >= 1, "\(seen)")
        WebViewerTests.checkBars(seen["pixels"] as? [[Int]] ?? [], "aiortc's last frame from the relay")
    }

    /// The sound as a WHEP viewer hears it, checked by aiortc's Opus decoder: the test pattern's
    /// beeps (1 kHz, -6 dBFS, on each whole second) at their level and pitch, and each placed
    /// on the wall clock by the audio's sender reports as the flash beside it by the video's,
    /// which is how a browser lines the two up: in step within 20 ms, as for the containers
    /// (AVSyncTests).
    static func checkSound(_ seen: [String: Any], _ what: String) {
        let audio = seen["audio"] as? [String: Any] ?? [:]
        #expect((audio["seconds"] as? Double ?? 0) >= 2.5 && (audio["beeps"] as? Int ?? 0) >= 2, "\(what): \(audio)")
        #expect(abs((audio["rms"] as? Double ?? 0) - 0.354) < 0.05, "\(what): RMS \(audio), a -6 dBFS sine is 0.354")
        #expect(abs((audio["crossingsPerSecond"] as? Double ?? 0) - 1000) < 10, "\(what): \(audio)")
        let offsets = audio["offsetsMs"] as? [Double] ?? []
        #expect(offsets.count >= 2 && offsets.allSatisfy { abs($0) <= 20 }, "\(what): A/V offsets (ms) \(audio)")
    }

    /// `produce --audio tone`: aiortc gets Opus beside the pictures, bundled on the same
    /// transport, and hears the tone in step with the flashes.
    @Test(.enabled(if: aiortcMissing == nil, "\(aiortcMissing ?? "")"))
    func aiortcHearsTheToneInStepWithThePicture() throws {
        try Self.withProducer(["--audio", "tone"]) { url, _, _ in
            let seen = try Self.play(url + "whep", frames: 100, ["--audio", "3"])
            #expect(seen["frames"] as? Int ?? 0 >= 100, "\(seen)")
            let answer = seen["answer"] as? String ?? ""
            #expect(answer.contains("a=group:BUNDLE 0 1\r\n") && answer.contains("a=msid:nalcast audio") && answer.contains("opus/48000/2"), "\(answer)")
            Self.checkSound(seen, "produce")
            #expect(try Self.metric(url, "nalcast_webrtc_audio_packets_sent_total") >= 140)
            #expect(try Self.metric(url, "nalcast_webrtc_audio_dropped_packets_total{reason=\"undecodable\"}") == 0)
        }
    }

    /// A relay of an MPEG-TS stream with sound serves it over WHEP too: its input's AAC as Opus.
    @Test(.enabled(if: aiortcMissing == nil, "\(aiortcMissing ?? "")"))
    func aRelayServesTheInputsSound() throws {
        let port = try freePort()
        let producer = try Background(Run.nalcast, ["produce", "--source", "testsrc", "--size", "640x360", "--audio", "tone",
                                                    "--listen", "ts:tcp://127.0.0.1:\(port)"])
        defer {
            producer.signal(SIGINT)
            producer.wait()
        }
        #expect(producer.waitFor("capturing"), "\(producer.stderr)")
        let webPort = try freePort()
        let relay = try Background(Run.nalcast, ["consume", "--from", "ts:tcp://127.0.0.1:\(port)", "--web", "tcp://127.0.0.1:\(webPort)"])
        defer {
            relay.signal(SIGINT)
            relay.wait()
        }
        #expect(relay.waitFor("to the WHEP viewers (as Opus)"), "\(relay.stderr)")
        let seen = try Self.play("http://127.0.0.1:\(webPort)/whep", frames: 100, ["--audio", "3"])
        #expect(seen["frames"] as? Int ?? 0 >= 100, "\(seen)")
        // A skip to the next IDR loses the flashes between: said when the sound's check fails.
        let skips = try Self.metric("http://127.0.0.1:\(webPort)/", "nalcast_reader_skips_total")
        Self.checkSound(seen, "the relay (its viewer skipped to the next IDR \(Int(skips)) times)")
    }

    /// The HTTP side: an offer that is not `application/sdp` is 415, one that is no SDP or
    /// has no H.264 is 400 with one line, `PATCH` (trickle ICE) is 405 with `Allow: DELETE`,
    /// an unknown session's `DELETE` 404; with a token file, an offer without a token is 401.
    @Test func whepAnswersAsTheRFCSays() throws {
        try Self.withProducer([]) { url, _, dir in
            func curl(_ args: [String]) throws -> (status: String, body: String) {
                let r = try Run.program("curl", ["-s", "--max-time", "5", "-w", "\n%{http_code}"] + args)
                let lines = r.text.split(separator: "\n", omittingEmptySubsequences: false)
                return (String(lines.last ?? ""), lines.dropLast().joined(separator: "\n").trimmingCharacters(in: .newlines))
            }
            #expect(try curl(["-X", "POST", "-H", "Content-Type: text/plain", "--data-binary", "v=0", url + "whep"]).status == "415")
            let notSDP = try curl(["-X", "POST", "-H", "Content-Type: application/sdp", "--data-binary", "hello", url + "whep"])
            #expect(notSDP.status == "400" && notSDP.body == "WHEP: the body is not an SDP offer (no v=0)", "\(notSDP)")
            let vp8Only = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=ice-ufrag:abcd\r\na=ice-pwd:abcdefghijklmnopqrstuvwx\r\n"
                + "a=fingerprint:sha-256 " + Array(repeating: "AB", count: 32).joined(separator: ":") + "\r\na=setup:actpass\r\na=mid:0\r\na=recvonly\r\na=rtpmap:96 VP8/90000\r\n"
            let noH264 = try curl(["-X", "POST", "-H", "Content-Type: application/sdp", "--data-binary", vp8Only, url + "whep"])
            #expect(noH264.status == "400" && noH264.body.hasPrefix("WHEP: the offer has no H.264 with packetization-mode=1"), "\(noH264)")
            let patch = try Run.program("curl", ["-s", "-i", "--max-time", "5", "-X", "PATCH", "-H", "Content-Type: application/trickle-ice-sdpfrag", "--data-binary", "a=x", url + "whep/abc"])
            #expect(patch.text.hasPrefix("HTTP/1.1 405") && patch.text.contains("Allow: DELETE"), "\(patch.text)")
            #expect(try curl(["-X", "DELETE", url + "whep/nosuchsession"]).status == "404")
            #expect(try Self.metric(url, "nalcast_webrtc_offers_refused_total") == 3)

            let tokens = dir.appendingPathComponent("tokens")
            try "s3cret-watcher-0123 watch\n".write(to: tokens, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: tokens.path)
            try Self.withProducer(["--token-file", tokens.path]) { guardedURL, _, _ in
                let page = String(guardedURL.split(separator: "?")[0])
                #expect(try curl(["-X", "POST", "-H", "Content-Type: application/sdp", "--data-binary", "v=0", page + "whep"]).status == "401")
                let allowed = try curl(["-X", "POST", "-H", "Content-Type: application/sdp", "-H", "Authorization: Bearer s3cret-watcher-0123", "--data-binary", "v=0", page + "whep"])
                #expect(allowed.status == "400", "\(allowed)")
            }
        }
    }
}
