import XCTest
@testable import WebRTC

/// The answer of the WHIP ingest (`SDPAnswer(direction: .receive)`): a publisher's offer,
/// which sends, answered recvonly.
final class SDPReceiveTests: XCTestCase {
    /// Chromium's offer of SDPTests made a publisher's: its video and audio send.
    static let publisherOffer = SDPTests.chromiumOffer
        .replacingOccurrences(of: "a=recvonly\r\na=rtcp-mux", with: "a=sendonly\r\na=rtcp-mux")
        .replacingOccurrences(of: "a=mid:1\r\na=recvonly", with: "a=mid:1\r\na=sendonly")

    func testAnswersRecvonlyH264AndOpusWithTheFeedbackAReceiverSends() throws {
        let answer = try SDPAnswer(offer: SDP.parseOffer(Self.publisherOffer), profile: nil, sound: true, direction: .receive)
        XCTAssertEqual(answer.format.payloadType, 102, "the first H.264 with packetization-mode=1")
        XCTAssertEqual(answer.format.feedback, ["nack", "nack pli"], "what a receiver here sends; no REMB, FIR or transport-cc")
        XCTAssertEqual(answer.audio?.payloadType, 111)
        XCTAssertNil(answer.captureTimeExtension)
        XCTAssertNil(answer.sendTimeExtension)
        let local = SDPAnswer.Local(ufrag: "abcd", password: "p", fingerprint: [UInt8](repeating: 1, count: 32), candidates: [("127.0.0.1", 5000)],
                                    ssrc: 7, audioSSRC: 8, sessionID: 1)
        let text = answer.text(local)
        XCTAssertTrue(text.contains("m=video 9 UDP/TLS/RTP/SAVPF 102\r\n"), text)
        XCTAssertTrue(text.contains("m=audio 9 UDP/TLS/RTP/SAVPF 111\r\n"), text)
        XCTAssertEqual(text.components(separatedBy: "a=recvonly\r\n").count - 1, 2, text)
        XCTAssertFalse(text.contains("a=sendonly"), text)
        XCTAssertFalse(text.contains("a=ssrc:"), "a receiver announces no source: \(text)")
        XCTAssertFalse(text.contains("a=extmap"), text)
        XCTAssertTrue(text.contains("a=ice-lite\r\n") && text.contains("a=setup:passive\r\n"), text)
    }

    /// An offer that will be the DTLS server (a=setup:passive): this side is the client and
    /// its answer says active; actpass leaves this side the server.
    func testAPassiveOfferMakesThisSideTheDTLSClient() throws {
        let passive = try SDPAnswer(offer: SDP.parseOffer(Self.publisherOffer.replacingOccurrences(of: "a=setup:actpass", with: "a=setup:passive")),
                                    profile: nil, direction: .receive)
        XCTAssertTrue(passive.dtlsClient)
        let local = SDPAnswer.Local(ufrag: "a", password: "p", fingerprint: [], candidates: [], ssrc: 1, sessionID: 1)
        XCTAssertTrue(passive.text(local).contains("a=setup:active\r\n"))
        let actpass = try SDPAnswer(offer: SDP.parseOffer(Self.publisherOffer), profile: nil, direction: .receive)
        XCTAssertFalse(actpass.dtlsClient)
        XCTAssertTrue(actpass.text(local).contains("a=setup:passive\r\n"))
    }

    func testWithoutSoundTheAudioIsRejected() throws {
        let answer = try SDPAnswer(offer: SDP.parseOffer(Self.publisherOffer), profile: nil, sound: false, direction: .receive)
        XCTAssertNil(answer.audio)
        XCTAssertTrue(answer.text(SDPAnswer.Local(ufrag: "a", password: "p", fingerprint: [], candidates: [], ssrc: 1, sessionID: 1))
            .contains("m=audio 0 "))
    }

    func testRefusesAnOfferThatDoesNotSendOrHasNoH264() throws {
        func failure(_ text: String) -> SDP.OfferError? {
            do { _ = try SDPAnswer(offer: SDP.parseOffer(text), profile: nil, direction: .receive) } catch { return error }
            return nil
        }
        XCTAssertEqual(failure(SDPTests.chromiumOffer), .notSending, "a viewer's offer (recvonly)")
        XCTAssertEqual(failure(Self.publisherOffer.replacingOccurrences(of: "packetization-mode=1", with: "packetization-mode=0")), .noH264)
        XCTAssertEqual(SDP.OfferError.notSending.description, "the offer's video does not send (sendonly or sendrecv expected)")
        XCTAssertNil(failure(Self.publisherOffer.replacingOccurrences(of: "a=sendonly\r\na=rtcp-mux", with: "a=sendrecv\r\na=rtcp-mux")))
    }
}
