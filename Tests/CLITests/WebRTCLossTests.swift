import Foundation
import TestSupport
import Testing

/// WebRTC through a lossy path: `produce --web` on one side of a veth pair, headless Chromium
/// playing the page over WHEP in a network namespace on the other, 1 % of the packets dropped
/// each way in the kernel (nftables) and 30 ms added each way by a forwarder of the test's
/// (this kernel has no netem): Tests/WebRTC/lossy-netns and lossy_path.py. Needs root.
@Suite(.serialized) struct WebRTCLossTests {
    static let tools = Run.root.appendingPathComponent("Tests/WebRTC")
    static let netnsMissing: String? = {
        guard getuid() == 0 else { return "needs root (a network namespace and nftables)" }
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/nft") else { return "no nft (scripts/setup installs nftables)" }
        let name = "nalcast-probe-\(getpid())"
        let made = (try? Run.program("ip", ["netns", "add", name]).status) == 0
        _ = try? Run.program("ip", ["netns", "del", name])
        return made ? nil : "ip netns add failed: no network namespaces here"
    }()

    /// A producer of the test pattern on this side of a lossy path (`loss` % each way) and
    /// the namespace on the other: `body(page, metrics, namespace, path)`: the page at the
    /// forwarder's address, nalcast's own /metrics, the namespace's name and lossy_path.py's
    /// PATH_JSON. Everything is taken down when `body` returns.
    static func withLossyPath(loss: Int, _ extra: [String] = [], _ body: (String, String, String, String) throws -> Void) throws {
        let index = Int(getpid() % 200) + 20
        let name = "nalcast-loss-\(getpid())"
        let here = "10.231.\(index).1", there = "10.231.\(index).2"
        let script = tools.appendingPathComponent("lossy-netns").path
        _ = try Run.program(script, ["down", name])
        let up = try Run.program(script, ["up", name, "\(index)", "\(loss)"])
        defer { _ = try? Run.program(script, ["down", name]) }
        try #require(up.status == 0, "\(up.text) \(up.stderr)")
        let producer = try Background(Run.nalcast, ["produce", "--source", "testsrc", "--size", "640x360", "--keyint", "600",
                                                    "--web", "tcp://\(here):0", "--allow-remote", "--no-auth", "--webrtc-host", there] + extra)
        defer {
            producer.signal(SIGINT)
            producer.wait()
        }
        try #require(producer.waitFor("media on UDP"), "\(producer.stderr)")
        let words = producer.stderr.split(whereSeparator: { $0 == " " || $0 == "\n" })
        let web = try #require(words.first { $0.hasPrefix("http://\(here):") }.flatMap { Int($0.split(separator: ":")[2].prefix { $0.isNumber }) }, "\(producer.stderr)")
        let udp = try #require(words.first { $0.hasPrefix("\(here):") }.flatMap { Int($0.split(separator: ":")[1]) }, "\(producer.stderr)")
        let path = #"{"delayMs": 30, "forwardFrom": "10.231.\#(index).3", "tcp": [["\#(there)", \#(web), "\#(here)", \#(web)]], "udp": [["\#(there)", \#(udp), "\#(here)", \#(udp)]]}"#
        try body("http://\(there):\(web)/", "http://\(here):\(web)/", name, path)
    }

    /// 1 % loss each way, 30 ms each way: Chromium's picture keeps moving (frames painted in
    /// every second), its losses NACKed and the packets sent again from the viewer's history
    /// (counted by nalcast and by Chromium's getStats), its TWCC feedback read into an estimate,
    /// its round trip learnt from nalcast's DLRRs. Ten seconds at least, and on until
    /// Chromium sent three NACKs and nalcast counted three NACKed packets sent again, and
    /// Chromium measured a round trip from a DLRR nalcast answered (a loss
    /// is random: the wait is for the events, not for a time; the test pattern is about 30
    /// packets a second, so about one loss in 3 s each way).
    @Test(.enabled(if: PlaybackTests.chromiumMissing == nil && netnsMissing == nil, "\(PlaybackTests.chromiumMissing ?? netnsMissing ?? "")"))
    func thePictureKeepsMovingThroughLoss() throws {
        try Self.withLossyPath(loss: 1) { page, metrics, namespace, path in
            // Chromium's NACKs, and nalcast's count of them and of the packets sent again; a round
            // trip Chromium measured from a DLRR nalcast answered.
            let goal = #"{"nackCount": 3, "roundTripTimeMeasurements": 1, "metricsUrl": "\#(metrics)metrics", "metrics": {"nalcast_webrtc_nacked_packets_total": 3, "nalcast_webrtc_retransmitted_packets_total": 3, "nalcast_webrtc_receiver_times_answered_total": 1}}"#
            let r = try Run.program("ip", ["netns", "exec", namespace, PlaybackTests.venvPython, Self.tools.appendingPathComponent("lossy_path.py").path,
                                           page + "?transport=webrtc", "10", path, goal], timeout: 180)
            var seen = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any], "\(r.text) \(r.stderr)")
            if var latency = seen["latencyMs"] as? [String: Any] {
                latency["all"] = nil  // every frame's: too long for a message
                seen["latencyMs"] = latency
            }
            #expect(r.status == 0 && seen["transport"] as? String == "webrtc" && seen["problem"] is NSNull, "\(seen)")
            let stats = seen["stats"] as? [String: Any] ?? [:]
            #expect((seen["seconds"] as? Double ?? 0) >= 9 && (seen["painted"] as? Int ?? 0) >= 100, "\(seen)")
            #expect(seen["stillSeconds"] as? Int == 0, "a second with no picture: \(seen)")
            #expect((stats["nackCount"] as? Int ?? 0) >= 3, "\(seen)")
            let nacked = try WHEPTests.metric(metrics, "nalcast_webrtc_nacked_packets_total")
            let resent = try WHEPTests.metric(metrics, "nalcast_webrtc_retransmitted_packets_total")
            #expect(nacked >= 3 && resent >= 3, "NACKed \(nacked), sent again \(resent): \(seen)")
            // Chromium's transport-wide feedback (TWCC, which the answer took from its offer) read,
            // none unreadable, and an estimate made from it.
            #expect(try WHEPTests.metric(metrics, "nalcast_webrtc_transport_feedback_total") >= 1)
            #expect(try WHEPTests.metric(metrics, "nalcast_webrtc_bad_rtcp_total") == 0)
            #expect(try WHEPTests.metric(metrics, "nalcast_webrtc_estimated_bitrate_bps") > 0)
            // Chromium's receiver reference times (XR RRTR, asked for by the answer's
            // a=rtcp-xr:rcvr-rtt=all) answered with DLRRs, and the round trip it measured
            // from them: what its NACKs are repeated after (else a 100 ms guess).
            #expect(try WHEPTests.metric(metrics, "nalcast_webrtc_receiver_times_answered_total") >= 1)
            #expect((stats["roundTripTimeMeasurements"] as? Int ?? 0) >= 1, "\(seen)")
            let latency = seen["latencyMs"] as? [String: Any] ?? [:]
            print("through 1 % loss and 30 ms each way: \(seen["painted"] ?? 0) frames painted in \(seen["seconds"] ?? 0) s, longest gap "
                + "\(seen["maxGapMs"] ?? 0) ms, capture -> paint median \(latency["median"] ?? 0) ms, p99 \(latency["p99"] ?? 0) ms; "
                + "Chromium: \(stats); nalcast: NACKed \(nacked), sent again \(resent)")
        }
    }
}
