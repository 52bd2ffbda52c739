import Clocks
import IO

/// The offering side of the endpoint, for a WHIP push (nalcast offers, a server answers):
/// the offer made with this endpoint's credentials, certificate and host candidates; the
/// peer made from the answer, with a controlling ICE agent (`ControllingICE`) and DTLS in the
/// role the answer left to this side; the answers to its checks routed to it.
extension WebRTCEndpoint {
    /// A WHIP push's offer: `profileLevelID` the stream's, `sound` an Opus section too.
    public func makeOffer(profileLevelID: String, sound: Bool) -> SDPOffer {
        SDPOffer(profileLevelID: profileLevelID, sound: sound, local: newLocal())
    }

    /// The peer of a WHIP push whose `offer` the server answered with `answer`: it starts
    /// checking the answer's candidates at the endpoint's next tick.
    public func publish(_ offer: SDPOffer, answer: SDPOffer.Accepted) throws(OfferFailure) -> WebRTCPeer {
        loop.preconditionOnLoop()
        if let why = SRTPSession.load() { throw .unavailable(why) }
        guard let dtls = DTLSAssociation(context, client: answer.dtlsClient) else { throw .unavailable("DTLS: could not make an association") }
        let sender = RTPSender(ssrc: offer.local.ssrc, payloadType: answer.videoPayloadType, captureTimeExtension: answer.captureTimeExtension,
                               sendTimeExtension: answer.sendTimeExtension, firstSequence: UInt16(truncatingIfNeeded: Self.random32()))
        let audio = answer.opusPayloadType.map { OpusRTPSender(ssrc: offer.local.audioSSRC, payloadType: $0, firstSequence: UInt16(truncatingIfNeeded: Self.random32())) }
        let peer = WebRTCPeer(id: Self.token(16), endpoint: self, dtls: dtls, local: (offer.local.ufrag, offer.local.password),
                              remoteFingerprint: answer.fingerprint, answer: offer.text, sender: sender, audioSender: audio,
                              nowNs: MonotonicClock.nanoseconds)
        peer.ice = ControllingICE(localUfrag: offer.local.ufrag, remoteUfrag: answer.ufrag, remotePassword: answer.password,
                                  candidates: answer.candidates)
        register(peer)
        return peer
    }

    /// A binding response: to the push's peer whose check it answers; else stray.
    func checkAnswered(_ datagram: [UInt8], _ from: UDPAddress) {
        guard let response = STUN.parseResponse(datagram) else { return metrics.strayDatagrams.increment() }
        let now = MonotonicClock.nanoseconds
        for peer in byID.values where peer.ice != nil {
            if peer.answered(response, from: from, nowNs: now) { return }
        }
        metrics.strayDatagrams.increment()
    }
}
