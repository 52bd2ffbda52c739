import XCTest
@testable import WebRTC

/// The offering side of a WHIP push, without sockets: the offer written, an answer read (one
/// of aiortc's, as the push test's server writes it), the controlling agent's checks and the
/// responses that select the path.
final class WHIPOfferTests: XCTestCase {
    static let local = SDPAnswer.Local(ufrag: "abcd", password: "0123456789abcdefghijklmn", fingerprint: Array(0..<32),
                                       candidates: [("192.0.2.7", 40000), ("127.0.0.1", 40000)], ssrc: 11, audioSSRC: 12, sessionID: 5)

    static let answer = """
        v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\nm=video 41136 UDP/TLS/RTP/SAVPF 97\r\n\
        c=IN IP4 192.0.2.2\r\na=recvonly\r\na=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time\r\na=mid:0\r\n\
        a=rtcp-mux\r\na=rtpmap:97 H264/90000\r\na=fmtp:97 packetization-mode=1;profile-level-id=42e01f\r\n\
        a=candidate:1 1 udp 2130706431 192.0.2.2 41136 typ host\r\na=candidate:2 1 udp 2130706431 fd00::2 33329 typ host\r\n\
        a=candidate:3 1 tcp 2130706430 192.0.2.2 9 typ host\r\na=candidate:4 1 udp 1694498815 198.51.100.9 5000 typ srflx\r\n\
        a=candidate:5 1 udp 2130706431 192.0.2.2 41136 typ host\r\na=end-of-candidates\r\na=ice-ufrag:3hQL\r\n\
        a=ice-pwd:0LuyaCk0PTu8ihVOwiLivK\r\n\
        a=fingerprint:sha-256 36:2D:40:08:37:5C:D6:CE:C7:97:45:79:66:0A:48:76:C0:3D:3A:ED:B6:33:6C:3E:3F:68:27:DB:31:50:BB:01\r\n\
        a=setup:passive\r\n
        """

    func testOfferIsSendonlyH264WithTheStreamsProfile() {
        let sps: [UInt8] = [0x67, 0x64, 0x00, 0x1F, 0xAC]
        XCTAssertEqual(SDPOffer.profileLevelID(sps: sps[...]), "64001f")
        XCTAssertEqual(SDPOffer.profileLevelID(sps: nil), "42e01f")
        let text = SDPOffer(profileLevelID: "64001f", sound: false, local: Self.local).text
        XCTAssertTrue(text.hasPrefix("v=0\r\n") && text.hasSuffix("\r\n"))
        for line in ["m=video 9 UDP/TLS/RTP/SAVPF 96", "a=sendonly", "a=setup:actpass", "a=ice-ufrag:abcd", "a=rtpmap:96 H264/90000",
                     "a=fmtp:96 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=64001f", "a=rtcp-fb:96 nack pli",
                     "a=candidate:1 1 udp 2130706431 192.0.2.7 40000 typ host", "a=end-of-candidates"] {
            XCTAssertTrue(text.contains(line + "\r\n"), line)
        }
        XCTAssertFalse(text.contains("m=audio"))
        XCTAssertTrue(SDPOffer(profileLevelID: "42e01f", sound: true, local: Self.local).text.contains("m=audio 9 UDP/TLS/RTP/SAVPF 111\r\n"))
    }

    func testReadsAnAnswer() throws {
        let offer = SDPOffer(profileLevelID: "42e01f", sound: false, local: Self.local)
        let accepted = try offer.read(answer: Self.answer)
        XCTAssertEqual(accepted.videoPayloadType, 97)
        XCTAssertEqual(accepted.sendTimeExtension, 2)
        XCTAssertNil(accepted.captureTimeExtension)
        XCTAssertEqual(accepted.ufrag, "3hQL")
        XCTAssertEqual(accepted.password, "0LuyaCk0PTu8ihVOwiLivK")
        XCTAssertEqual(accepted.fingerprint.count, 32)
        XCTAssertTrue(accepted.dtlsClient, "passive: nalcast is the DTLS client")
        // UDP IPv4 only, by priority, each once.
        XCTAssertEqual(accepted.candidates, [UDPAddress(host: "192.0.2.2", port: 41136)!, UDPAddress(host: "198.51.100.9", port: 5000)!])
        XCTAssertFalse(try offer.read(answer: Self.answer.replacingOccurrences(of: "a=setup:passive", with: "a=setup:active")).dtlsClient)
    }

    func testRefusesUnusableAnswers() {
        let offer = SDPOffer(profileLevelID: "42e01f", sound: false, local: Self.local)
        func error(_ text: String) -> SDPOffer.AnswerError? {
            do { _ = try offer.read(answer: text); return nil } catch { return error }
        }
        XCTAssertEqual(error("not sdp"), .notSDP)
        XCTAssertEqual(error(Self.answer.replacingOccurrences(of: "m=video 41136", with: "m=video 0")), .videoRejected)
        XCTAssertEqual(error(Self.answer.replacingOccurrences(of: "H264/90000", with: "VP8/90000")), .noH264)
        XCTAssertEqual(error(Self.answer.replacingOccurrences(of: "a=setup:passive", with: "a=setup:actpass")), .setupActpass)
        let noUDP = Self.answer.split(separator: "\r\n").filter { !$0.contains(" udp ") }.joined(separator: "\r\n") + "\r\n"
        XCTAssertEqual(error(noUDP), .noCandidates)
    }

    /// Checks go to every candidate until one is answered (with the server's ice-pwd); then
    /// only consent checks on that path. An answer signed with another password, from
    /// another address or to no request of ours selects nothing.
    func testControllingAgentSelectsTheFirstAnsweredCandidate() throws {
        let a = UDPAddress(host: "192.0.2.2", port: 41136)!, b = UDPAddress(host: "192.0.2.3", port: 5000)!
        var ice = ControllingICE(localUfrag: "abcd", remoteUfrag: "3hQL", remotePassword: "server-password-22chars", candidates: [a, b])
        let checks = ice.due(nowNs: 1_000_000_000)
        XCTAssertEqual(checks.map(\.to), [a, b])
        XCTAssertTrue(ice.due(nowNs: 1_010_000_000).isEmpty, "the next round comes 50 ms later")
        let request = try STUN.parseBindingRequest(checks[1].bytes)
        XCTAssertEqual(request.username, "3hQL:abcd")
        XCTAssertTrue(request.useCandidate && request.isAuthentic(password: "server-password-22chars"))
        func response(_ password: String) throws -> STUN.Response {
            try XCTUnwrap(STUN.parseResponse(STUN.bindingSuccess(to: request, mapped: ([127, 0, 0, 1], 40000), password: password)))
        }
        XCTAssertFalse(ice.answered(try response("another-password"), from: b))
        XCTAssertFalse(ice.answered(try response("server-password-22chars"), from: a), "sent to b, answered from a")
        XCTAssertTrue(ice.answered(try response("server-password-22chars"), from: b))
        XCTAssertEqual(ice.selected, b)
        XCTAssertFalse(ice.answered(try response("server-password-22chars"), from: b), "answered once")
        let consent = ice.due(nowNs: 1_060_000_000)
        XCTAssertEqual(consent.map(\.to), [b])
        XCTAssertTrue(ice.due(nowNs: 4_000_000_000).isEmpty, "consent checks 4 to 6 s apart")
        XCTAssertEqual(ice.due(nowNs: 7_100_000_000).map(\.to), [b])
    }
}
