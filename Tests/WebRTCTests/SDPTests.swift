import XCTest
@testable import WebRTC
import Media
import RTP

final class SDPTests: XCTestCase {
    /// What Chromium offers for `addTransceiver('video', {direction: 'recvonly'})` plus audio
    /// and a data channel (shortened: the codecs that matter here, and VP8 first).
    static let chromiumOffer = """
    v=0\r
    o=- 4611731400430051336 2 IN IP4 127.0.0.1\r
    s=-\r
    t=0 0\r
    a=group:BUNDLE 0 1 2\r
    a=extmap-allow-mixed\r
    a=msid-semantic: WMS\r
    m=video 9 UDP/TLS/RTP/SAVPF 96 97 102 103 127 125\r
    c=IN IP4 0.0.0.0\r
    a=rtcp:9 IN IP4 0.0.0.0\r
    a=ice-ufrag:WxYz\r
    a=ice-pwd:abcdefghijklmnopqrstuvwx\r
    a=ice-options:trickle\r
    a=fingerprint:sha-256 0A:1B:2C:3D:4E:5F:60:71:82:93:A4:B5:C6:D7:E8:F9:0A:1B:2C:3D:4E:5F:60:71:82:93:A4:B5:C6:D7:E8:F9\r
    a=setup:actpass\r
    a=mid:0\r
    a=extmap:1 urn:ietf:params:rtp-hdrext:toffset\r
    a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01\r
    a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time\r
    a=extmap:6 http://www.webrtc.org/experiments/rtp-hdrext/playout-delay\r
    a=extmap:11 http://www.webrtc.org/experiments/rtp-hdrext/abs-capture-time\r
    a=recvonly\r
    a=rtcp-mux\r
    a=rtcp-rsize\r
    a=rtpmap:96 VP8/90000\r
    a=rtcp-fb:96 nack\r
    a=rtpmap:97 rtx/90000\r
    a=fmtp:97 apt=96\r
    a=rtpmap:102 H264/90000\r
    a=rtcp-fb:102 goog-remb\r
    a=rtcp-fb:102 transport-cc\r
    a=rtcp-fb:102 ccm fir\r
    a=rtcp-fb:102 nack\r
    a=rtcp-fb:102 nack pli\r
    a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f\r
    a=rtpmap:103 rtx/90000\r
    a=fmtp:103 apt=102\r
    a=rtpmap:127 H264/90000\r
    a=rtcp-fb:127 nack\r
    a=rtcp-fb:127 nack pli\r
    a=fmtp:127 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=640c1f\r
    a=rtpmap:125 H264/90000\r
    a=fmtp:125 level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=640c1f\r
    m=audio 9 UDP/TLS/RTP/SAVPF 111\r
    c=IN IP4 0.0.0.0\r
    a=mid:1\r
    a=recvonly\r
    a=rtpmap:111 opus/48000/2\r
    m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r
    c=IN IP4 0.0.0.0\r
    a=mid:2\r
    a=sctp-port:5000\r

    """

    func testReadsWhatASenderNeedsOfChromiumsOffer() throws {
        let offer = try SDP.parseOffer(Self.chromiumOffer)
        XCTAssertEqual(offer.ufrag, "WxYz")
        XCTAssertEqual(offer.password, "abcdefghijklmnopqrstuvwx")
        XCTAssertEqual(offer.fingerprint.first, 0x0A)
        XCTAssertEqual(offer.fingerprint.count, 32)
        XCTAssertEqual(offer.setup, "actpass")
        XCTAssertEqual(offer.bundle, ["0", "1", "2"])
        XCTAssertEqual(offer.media.map(\.kind), ["video", "audio", "application"])
        let video = offer.media[0]
        XCTAssertEqual(video.direction, "recvonly")
        XCTAssertTrue(video.rtcpMux)
        XCTAssertEqual(video.extensions[SDPAnswer.absCaptureTime], 11)
        XCTAssertEqual(video.feedback[102], ["goog-remb", "transport-cc", "ccm fir", "nack", "nack pli"])
    }

    func testChoosesTheH264PayloadTypeOfTheStreamsProfile() throws {
        let offer = try SDP.parseOffer(Self.chromiumOffer)
        // High (100): 127; constrained baseline (66) or unknown: the first with mode 1, 102.
        XCTAssertEqual(try SDPAnswer(offer: offer, profile: 100).format.payloadType, 127)
        XCTAssertEqual(try SDPAnswer(offer: offer, profile: 66).format.payloadType, 102)
        XCTAssertEqual(try SDPAnswer(offer: offer, profile: nil).format.payloadType, 102)
        XCTAssertEqual(try SDPAnswer(offer: offer, profile: nil).format.feedback, ["goog-remb", "transport-cc", "ccm fir", "nack", "nack pli"])
    }

    /// A format offered with `transport-cc` and the transport-wide-cc extension: both in the
    /// answer (the packets numbered, the feedback asked for); without the feedback, neither.
    func testAnswersTransportWideCongestionControlAsOffered() throws {
        let answer = try SDPAnswer(offer: SDP.parseOffer(Self.chromiumOffer), profile: 66)
        let local = SDPAnswer.Local(ufrag: "ufra", password: "p4ssw0rdp4ssw0rdp4ssw0rd", fingerprint: [UInt8](repeating: 0xAB, count: 32),
                                    candidates: [("127.0.0.1", 40000)], ssrc: 1234, sessionID: 99)
        let lines = answer.text(local).components(separatedBy: "\r\n")
        XCTAssertEqual(answer.transportSequenceExtension, 3)
        XCTAssertTrue(lines.contains("a=extmap:3 \(SDPAnswer.transportWideCC)"), "\(lines)")
        XCTAssertTrue(lines.contains("a=rtcp-fb:102 transport-cc"), "\(lines)")
        let noFeedback = Self.chromiumOffer.replacingOccurrences(of: "a=rtcp-fb:102 transport-cc\r\n", with: "")
        XCTAssertNil(try SDPAnswer(offer: SDP.parseOffer(noFeedback), profile: 66).transportSequenceExtension)
    }

    /// Chromium's offer says `a=rtcp-xr:rcvr-rtt=all` in its video and audio sections: the
    /// answer says it back in each section it takes (the viewer then sends receiver reference
    /// times, answered with DLRRs, and learns the round trip its NACKs are repeated after);
    /// not where the offer lacks it, nor for a WHIP publisher (a sender has its own reports).
    func testAnswersReceiverRoundTripReportsWhereOffered() throws {
        let withXR = Self.chromiumOffer.replacingOccurrences(of: "a=rtcp-rsize\r\n", with: "a=rtcp-rsize\r\na=rtcp-xr:rcvr-rtt=all\r\n")
            .replacingOccurrences(of: "a=mid:1\r\na=recvonly\r\n", with: "a=mid:1\r\na=recvonly\r\na=rtcp-xr:rcvr-rtt=all\r\n")
        let offer = try SDP.parseOffer(withXR)
        XCTAssertEqual(offer.media.map(\.receiverRTT), [true, true, false])
        let local = SDPAnswer.Local(ufrag: "ufra", password: "p4ssw0rdp4ssw0rdp4ssw0rd", fingerprint: [UInt8](repeating: 0xAB, count: 32),
                                    candidates: [("127.0.0.1", 40000)], ssrc: 1235, audioSSRC: 5678, sessionID: 99)
        let sections = try SDPAnswer(offer: offer, profile: 66, sound: true).text(local).components(separatedBy: "m=")
        XCTAssertEqual(sections.count, 4)
        XCTAssertTrue(sections[1].contains("\r\na=rtcp-xr:rcvr-rtt=all\r\n"), sections[1])
        XCTAssertTrue(sections[2].contains("\r\na=rtcp-xr:rcvr-rtt=all\r\n"), sections[2])
        XCTAssertFalse(sections[3].contains("rtcp-xr"))
        // Only the video's offered: only the video's answered.
        let videoOnly = try SDP.parseOffer(withXR.replacingOccurrences(of: "a=mid:1\r\na=recvonly\r\na=rtcp-xr:rcvr-rtt=all\r\n", with: "a=mid:1\r\na=recvonly\r\n"))
        let answered = try SDPAnswer(offer: videoOnly, profile: 66, sound: true).text(local).components(separatedBy: "m=")
        XCTAssertTrue(answered[1].contains("a=rtcp-xr:rcvr-rtt=all"))
        XCTAssertFalse(answered[2].contains("rtcp-xr"))
        // `rcvr-rtt=sender` (only senders may send them) and no attribute: nothing.
        XCTAssertFalse(try SDP.parseOffer(withXR.replacingOccurrences(of: "rcvr-rtt=all", with: "rcvr-rtt=sender")).media[0].receiverRTT)
        XCTAssertFalse(try SDPAnswer(offer: SDP.parseOffer(Self.chromiumOffer), profile: 66).text(local).contains("rtcp-xr"))
    }

    /// The stream's profile comes to the answer as its codec string (the server knows no H.264).
    func testTheProfileOfACodecString() {
        XCTAssertEqual(SDPAnswer.profileIDC(codecString: "avc1.64001f"), 100)
        XCTAssertEqual(SDPAnswer.profileIDC(codecString: "avc1.42e01e"), 66)
        XCTAssertNil(SDPAnswer.profileIDC(codecString: "hvc1.1.6.L93.B0"))
        XCTAssertNil(SDPAnswer.profileIDC(codecString: "avc1.64"))
    }

    func testAnswersOneBundledSendOnlyVideoSectionAndRejectsTheRest() throws {
        let answer = try SDPAnswer(offer: SDP.parseOffer(Self.chromiumOffer), profile: 100)
        let local = SDPAnswer.Local(ufrag: "ufra", password: "p4ssw0rdp4ssw0rdp4ssw0rd", fingerprint: [UInt8](repeating: 0xAB, count: 32),
                                    candidates: [("127.0.0.1", 40000), ("192.0.2.7", 40000)], ssrc: 1234, sessionID: 99)
        let text = answer.text(local)
        let lines = text.components(separatedBy: "\r\n")
        XCTAssertTrue(text.hasSuffix("\r\n"))
        XCTAssertEqual(lines.first, "v=0")
        for line in ["a=group:BUNDLE 0", "a=ice-lite", "m=video 9 UDP/TLS/RTP/SAVPF 127", "a=mid:0", "a=sendonly", "a=rtcp-mux",
                     "a=rtcp-rsize", "a=setup:passive", "a=ice-ufrag:ufra", "a=ice-pwd:p4ssw0rdp4ssw0rdp4ssw0rd",
                     "a=rtpmap:127 H264/90000", "a=rtcp-fb:127 nack", "a=rtcp-fb:127 nack pli",
                     "a=fmtp:127 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=640c1f",
                     "a=extmap:11 \(SDPAnswer.absCaptureTime)", "a=extmap:2 \(SDPAnswer.absSendTime)",
                     "a=extmap:6 \(SDPAnswer.playoutDelay)", "a=ssrc:1234 cname:nalcast",
                     "a=candidate:1 1 udp 2130706431 127.0.0.1 40000 typ host",
                     "a=candidate:2 1 udp 2130706175 192.0.2.7 40000 typ host", "a=end-of-candidates",
                     "m=audio 0 UDP/TLS/RTP/SAVPF 111", "a=mid:1", "m=application 0 UDP/DTLS/SCTP webrtc-datachannel", "a=mid:2"] {
            XCTAssertTrue(lines.contains(line), "missing \(line) in\n\(text)")
        }
        XCTAssertTrue(lines.contains("a=fingerprint:sha-256 " + Array(repeating: "AB", count: 32).joined(separator: ":")))
        // Nothing of what was not taken: no transport-cc (127 is offered without it: no transport-wide sequence numbers are sent), no rtx.
        XCTAssertFalse(text.contains("transport-cc"))
        XCTAssertFalse(text.contains("toffset"))
        XCTAssertFalse(text.contains("rtx"))
    }

    func testTakesTheOffersOpusWhenTheStreamHasSoundBundledInTheVideosStream() throws {
        let offer = try SDP.parseOffer(Self.chromiumOffer)
        XCTAssertNil(try SDPAnswer(offer: offer, profile: 100).audio, "no sound: the audio section is rejected")
        let answer = try SDPAnswer(offer: offer, profile: 100, sound: true)
        XCTAssertEqual(answer.audio?.index, 1)
        XCTAssertEqual(answer.audio?.payloadType, 111)
        let local = SDPAnswer.Local(ufrag: "ufra", password: "p4ssw0rdp4ssw0rdp4ssw0rd", fingerprint: [UInt8](repeating: 0xAB, count: 32),
                                    candidates: [("127.0.0.1", 40000)], ssrc: 1235, audioSSRC: 5678, sessionID: 99)
        let text = answer.text(local)
        let sections = text.components(separatedBy: "m=")
        XCTAssertEqual(sections.count, 4, text)
        let audio = sections[2].components(separatedBy: "\r\n")
        XCTAssertTrue(text.contains("a=group:BUNDLE 0 1\r\n"), text)
        for line in ["audio 9 UDP/TLS/RTP/SAVPF 111", "a=mid:1", "a=sendonly", "a=rtcp-mux", "a=rtpmap:111 opus/48000/2",
                     "a=fmtp:111 minptime=10;useinbandfec=1", "a=msid:nalcast audio", "a=ssrc:5678 cname:nalcast",
                     "a=ssrc:5678 msid:nalcast audio", "a=ice-ufrag:ufra", "a=setup:passive",
                     "a=candidate:1 1 udp 2130706431 127.0.0.1 40000 typ host"] {
            XCTAssertTrue(audio.contains(line), "missing \(line) in\n\(sections[2])")
        }
        XCTAssertTrue(sections[1].contains("a=msid:nalcast video"), "the same stream, nalcast: the browser syncs the two")
        XCTAssertTrue(sections[3].hasPrefix("application 0 "))
        // Opus not offered, or not received: rejected even with sound.
        let noOpus = try SDP.parseOffer(Self.chromiumOffer.replacingOccurrences(of: "opus/48000/2", with: "PCMU/8000"))
        XCTAssertNil(try SDPAnswer(offer: noOpus, profile: nil, sound: true).audio)
        let sending = try SDP.parseOffer(Self.chromiumOffer.replacingOccurrences(of: "a=mid:1\r\na=recvonly", with: "a=mid:1\r\na=sendonly"))
        XCTAssertNil(try SDPAnswer(offer: sending, profile: nil, sound: true).audio)
    }

    func testOpusTimestampsFollowTheVideosCaptureClock() throws {
        var video = RTPSender(ssrc: 1, payloadType: 102, captureTimeExtension: nil, firstSequence: 0)
        var audio = OpusRTPSender(ssrc: 2, payloadType: 111, firstSequence: 7)
        XCTAssertNil(audio.packet([1, 2, 3], mediaTime90k: 0, video: video), "no clock before the first picture")
        // The picture at media time 9000 (0.1 s) was captured at 1,700,000,000.1 s.
        let wall: UInt64 = 1_700_000_000_100_000_000
        _ = video.packets([NALUnit(escapedBody: [0x65, 0x88, 0x80])], pts90k: 9000, wallNs: wall)
        // The sound at the same media time has the same instant, in 48 kHz ticks.
        let (sequence, bytes) = audio.packet([0xFC, 1, 2], mediaTime90k: 9000, video: video)!
        let packet = try RTPPacket(parsing: bytes[...])
        XCTAssertEqual(sequence, 7)
        XCTAssertEqual(packet.ssrc, 2)
        XCTAssertTrue(packet.marker)
        XCTAssertEqual(packet.timestamp, UInt32(truncatingIfNeeded: wall / 1_000_000 * 48))
        XCTAssertEqual(Array(packet.payload), [0xFC, 1, 2])
        let next = try RTPPacket(parsing: audio.packet([0xFC], mediaTime90k: 9000 + 1800, video: video)!.bytes[...])
        XCTAssertEqual(next.timestamp &- packet.timestamp, 960)
        XCTAssertFalse(next.marker)
        // Both reports map the same instant to the same media time.
        let now = wall + 500_000_000
        let videoReport = video.senderReport(nowNs: now)!, audioReport = audio.senderReport(nowNs: now, video: video)!
        XCTAssertEqual(videoReport.ntpTime, audioReport.ntpTime)
        XCTAssertEqual(audioReport.rtpTimestamp, UInt32(truncatingIfNeeded: now / 1_000_000 * 48))
        XCTAssertEqual(videoReport.rtpTimestamp, UInt32(truncatingIfNeeded: now / 100_000 * 9))
        XCTAssertEqual(audioReport.packetCount, 2)
    }

    func testRefusesOffersItCannotServeWithOneLine() {
        func failure(_ text: String) -> SDP.OfferError? {
            do {
                _ = try SDPAnswer(offer: SDP.parseOffer(text), profile: nil)
                return nil
            } catch { return error }
        }
        XCTAssertEqual(failure("hello"), .notSDP)
        XCTAssertEqual(failure(Self.chromiumOffer.replacingOccurrences(of: "m=video 9", with: "m=video 0")), .noVideo)
        XCTAssertEqual(failure(Self.chromiumOffer.replacingOccurrences(of: "packetization-mode=1", with: "packetization-mode=0")), .noH264)
        XCTAssertEqual(failure(Self.chromiumOffer.replacingOccurrences(of: "a=fingerprint:sha-256", with: "a=fingerprint:sha-1")), .noFingerprint)
        XCTAssertEqual(failure(Self.chromiumOffer.replacingOccurrences(of: "a=recvonly\r\na=rtcp-mux", with: "a=sendonly\r\na=rtcp-mux")), .notReceiving)
        XCTAssertEqual(failure(Self.chromiumOffer.replacingOccurrences(of: "a=ice-pwd:abcdefghijklmnopqrstuvwx\r\n", with: "")), .noICECredentials)
        XCTAssertEqual(SDP.OfferError.noH264.description, "the offer has no H.264 with packetization-mode=1 (nalcast sends H.264 as it is encoded)")
    }
}
