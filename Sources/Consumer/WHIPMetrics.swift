import Metrics

/// What the WHIP ingest of `consume --from whip-listen://` did, for `/metrics`
/// (`nalcast_whip_*`; registered only with that input).
public struct WHIPMetrics: Sendable {
    public let offers: Counter
    public let refusedBusy: Counter
    public let refusedBadOffer: Counter
    public let publishers: Counter
    public let damagedUnits: Counter
    public let unitsBeforeIDR: Counter
    public let nackedPackets: Counter
    public let pictureRequests: Counter
    public let malformedPackets: Counter
    public let lateAudioPackets: Counter
    public let lateVideoPackets: Counter
    public let badRTCP: Counter
    public let strayDatagrams: Counter
    public let rtcpNotSent: Counter

    public init(registry: MetricsRegistry) {
        offers = registry.counter("nalcast_whip_offers_total", help: "WHIP offers (POST) received.")
        let refused = "WHIP offers refused, by reason: busy (a publisher was already there: 409), offer (not SDP, no H.264 to receive, not sending: 400 or 415)."
        refusedBusy = registry.counter("nalcast_whip_offers_refused_total", help: refused, labels: [("reason", "busy")])
        refusedBadOffer = registry.counter("nalcast_whip_offers_refused_total", help: refused, labels: [("reason", "offer")])
        publishers = registry.counter("nalcast_whip_publishers_total", help: "WHIP publishers whose ICE and DTLS-SRTP handshake completed.")
        let dropped = "Access units of a WHIP publisher not relayed, by reason: damaged (a packet of theirs never came, even after NACKs), before-idr (after a damaged one or at the start, until the next IDR)."
        damagedUnits = registry.counter("nalcast_whip_dropped_access_units_total", help: dropped, labels: [("reason", "damaged")])
        unitsBeforeIDR = registry.counter("nalcast_whip_dropped_access_units_total", help: dropped, labels: [("reason", "before-idr")])
        nackedPackets = registry.counter("nalcast_whip_nacked_packets_total", help: "Video packets a WHIP publisher was asked to send again (RTCP NACK; each time asked).")
        pictureRequests = registry.counter("nalcast_whip_picture_requests_total", help: "Picture loss indications sent to WHIP publishers (at the start and after a damaged access unit, until an IDR).")
        malformedPackets = registry.counter("nalcast_whip_malformed_packets_total", help: "RTP packets from WHIP publishers that did not unprotect (SRTP) or parse, had a payload type the answer did not take, or whose Opus did not decode, dropped.")
        lateAudioPackets = registry.counter("nalcast_whip_late_audio_packets_total", help: "Opus packets from WHIP publishers that came after a later one, dropped.")
        lateVideoPackets = registry.counter("nalcast_whip_late_video_packets_total", help: "Video packets from WHIP publishers that came twice, or after the ones behind them had gone on without them (a retransmission of a packet given up on), dropped.")
        badRTCP = registry.counter("nalcast_whip_bad_rtcp_total", help: "SRTCP packets from WHIP publishers that did not authenticate or parse, dropped.")
        strayDatagrams = registry.counter("nalcast_whip_stray_datagrams_total", help: "Datagrams on the WHIP ingest's socket from no publisher (unknown ufrag or address), dropped.")
        rtcpNotSent = registry.counter("nalcast_whip_rtcp_not_sent_total", help: "RTCP packets to WHIP publishers (reports, NACKs, PLIs) not sent: libsrtp would not protect them or the kernel did not take them.")
    }
}
