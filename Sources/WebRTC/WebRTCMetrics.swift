import Metrics

/// What the WebRTC viewers of a `--web` listener did, for `/metrics` (`nalcast_webrtc_*`).
public struct WebRTCMetrics: Sendable {
    public let offers: Counter
    public let offersRefused: Counter
    public let connected: Counter
    public let handshakesFailed: Counter
    public let packetsSent: Counter
    /// `var`, as `badRTCP` and `strayDatagrams` below.
    public var sendFailures: Counter
    public var protectFailures: Counter
    public let nackedPackets: Counter
    public let retransmittedPackets: Counter
    public let nackedNotInHistory: Counter
    /// Loss repair beside the NACKs (`LossRepair`): NACKed packets not sent again (sent for
    /// the transport-wide feedback less than a round trip before), packets sent again for the
    /// feedback, and those the feedback named past its limit, left to the NACKs.
    public let nacksSkipped: Counter
    public let feedbackResent: Counter
    public let feedbackOverLimit: Counter
    /// Receiver reference times (RTCP XR RRTR) answered with a DLRR.
    public let receiverTimesAnswered: Counter
    public let keyframeRequests: Counter
    /// `var`: an endpoint whose peers are not WHEP viewers reports these two as its own
    /// (`apart(badRTCP:strayDatagrams:notSent:)`).
    public var badRTCP: Counter
    public var strayDatagrams: Counter
    public let peers: Gauge
    /// The sound: Opus packets made once for every viewer, SRTP packets sent, and packets
    /// left out by reason.
    public let opusPackets: Counter
    public let audioPacketsSent: Counter
    public let audioUndecodable: Counter
    public let audioMailboxFull: Counter
    public let audioBeforeVideo: Counter
    /// Transport-wide feedback (TWCC) packets read, and the packets they reported lost.
    public let transportFeedback: Counter
    public let transportLost: Counter
    /// The lowest REMB of the viewers now, bits per second (0: none sent one).
    public let estimatedBitrate: Gauge

    public init(registry: MetricsRegistry) {
        offers = registry.counter("nalcast_webrtc_offers_total", help: "WHEP offers (POST /whep) received.")
        offersRefused = registry.counter("nalcast_webrtc_offers_refused_total", help: "WHEP offers answered with an error (not SDP, no H.264, no room, the stream ended).")
        connected = registry.counter("nalcast_webrtc_connected_total", help: "WebRTC viewers whose ICE and DTLS-SRTP handshake completed.")
        handshakesFailed = registry.counter("nalcast_webrtc_handshakes_failed_total", help: "WebRTC viewers that ended before their handshake completed (DTLS failure, wrong certificate, timeout).")
        packetsSent = registry.counter("nalcast_webrtc_rtp_packets_sent_total", help: "SRTP video packets sent to WebRTC viewers (retransmissions not included).")
        sendFailures = registry.counter("nalcast_webrtc_send_failures_total", help: "Datagrams to WebRTC viewers the kernel did not take (send buffer full).")
        protectFailures = registry.counter("nalcast_webrtc_protect_failures_total", help: "RTP and RTCP packets to WebRTC viewers that libsrtp would not protect, not sent.")
        nackedPackets = registry.counter("nalcast_webrtc_nacked_packets_total", help: "Packets WebRTC viewers reported lost (RTCP NACK).")
        retransmittedPackets = registry.counter("nalcast_webrtc_retransmitted_packets_total", help: "NACKed packets sent again from a viewer's history.")
        nackedNotInHistory = registry.counter("nalcast_webrtc_nacked_not_in_history_total", help: "NACKed packets no longer in the viewer's history (512 packets), not sent again.")
        nacksSkipped = registry.counter("nalcast_webrtc_nacks_skipped_total", help: "NACKed packets not sent again: sent again for the viewer's transport-wide feedback less than a round trip before (the NACK left before that copy could arrive).")
        feedbackResent = registry.counter("nalcast_webrtc_feedback_resent_packets_total", help: "Video packets sent again because a viewer's transport-wide feedback (TWCC) reported them lost and no NACK for them had come (a NACK lost on the way).")
        feedbackOverLimit = registry.counter("nalcast_webrtc_feedback_resend_over_limit_total", help: "Packets a transport-wide feedback packet reported lost past the 8 sent again for one, left to the viewer's NACKs.")
        receiverTimesAnswered = registry.counter("nalcast_webrtc_receiver_times_answered_total", help: "Receiver reference times (RTCP XR RRTR) from WebRTC viewers answered with a DLRR, which gives a viewer that sends nothing the round trip its NACKs are repeated after.")
        keyframeRequests = registry.counter("nalcast_webrtc_keyframe_requests_total", help: "Picture loss indications and full intra requests from WebRTC viewers.")
        badRTCP = registry.counter("nalcast_webrtc_bad_rtcp_total", help: "SRTCP packets from WebRTC viewers that did not authenticate or parse, dropped.")
        strayDatagrams = registry.counter("nalcast_webrtc_stray_datagrams_total", help: "Datagrams on the WebRTC socket from no known viewer (unknown ufrag or address), dropped.")
        opusPackets = registry.counter("nalcast_webrtc_opus_packets_total", help: "Opus packets transcoded from the stream's AAC for the WebRTC viewers (once for all of them).")
        audioPacketsSent = registry.counter("nalcast_webrtc_audio_packets_sent_total", help: "SRTP Opus packets sent to WebRTC viewers (retransmissions not included).")
        let dropped = "Sound left out for WebRTC viewers, by reason: undecodable (AAC packets the decoder refused), loop-behind (Opus packets the serving thread had no room for), before-video (a viewer's packets before its first picture, whose clock the sound follows)."
        audioUndecodable = registry.counter("nalcast_webrtc_audio_dropped_packets_total", help: dropped, labels: [("reason", "undecodable")])
        audioMailboxFull = registry.counter("nalcast_webrtc_audio_dropped_packets_total", help: dropped, labels: [("reason", "loop-behind")])
        audioBeforeVideo = registry.counter("nalcast_webrtc_audio_dropped_packets_total", help: dropped, labels: [("reason", "before-video")])
        peers = registry.gauge("nalcast_webrtc_viewers", help: "WebRTC viewers now, connected or still in their handshake.")
        estimatedBitrate = registry.gauge("nalcast_webrtc_estimated_bitrate_bps", help: "The lowest estimate of the WebRTC viewers' paths now (their REMB, or nalcast's from their transport-wide feedback), bits per second; 0 when there is none.")
        transportFeedback = registry.counter("nalcast_webrtc_transport_feedback_total", help: "Transport-wide congestion control feedback packets (TWCC) read from WebRTC viewers.")
        transportLost = registry.counter("nalcast_webrtc_transport_feedback_lost_packets_total", help: "Packets the WebRTC viewers' transport-wide feedback reported lost (each time it was reported).")
    }

    /// The counters of an endpoint whose peers are not WHEP viewers (the WHIP ingest's
    /// publisher): kept out of the `nalcast_webrtc_*` series, but for what it drops, which
    /// goes to the caller's own counters: the SRTCP that does not check, the datagrams from no
    /// peer, and (`notSent`) packets of its own libsrtp would not protect or the kernel did not
    /// take.
    public static func apart(badRTCP: Counter, strayDatagrams: Counter, notSent: Counter) -> WebRTCMetrics {
        var metrics = WebRTCMetrics(registry: MetricsRegistry())
        metrics.badRTCP = badRTCP
        metrics.strayDatagrams = strayDatagrams
        metrics.protectFailures = notSent
        metrics.sendFailures = notSent
        return metrics
    }
}
