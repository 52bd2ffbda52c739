import Clocks
import IO

/// The controlling ICE agent of a WHIP push (RFC 8445; nalcast made the offer): binding
/// requests with USE-CANDIDATE (aggressive nomination: every check nominates) to each of the
/// answer's candidates every 50 ms until one is answered, whose address becomes the path;
/// then one request every 4 to 6 s on it for consent freshness (RFC 7675: the endpoint
/// closes a peer whose consent is 30 s old). Answers are matched to requests by transaction
/// id and checked with the server's ice-pwd. Pure but for its random transaction ids.
struct ControllingICE {
    let localUfrag: String
    let remoteUfrag: String
    let remotePassword: String
    /// The answer's candidates this socket can reach, best first.
    let candidates: [UDPAddress]
    /// The candidate whose check was answered first: the path.
    private(set) var selected: UDPAddress?
    /// Requests waiting for an answer: transaction id → where it went and when.
    private var pending: [[UInt8]: (to: UDPAddress, sentNs: UInt64)] = [:]
    private var nextCheckNs: UInt64 = 0

    init(localUfrag: String, remoteUfrag: String, remotePassword: String, candidates: [UDPAddress]) {
        self.localUfrag = localUfrag
        self.remoteUfrag = remoteUfrag
        self.remotePassword = remotePassword
        self.candidates = candidates
    }

    /// The checks to send now: to every candidate while none answered, then the consent
    /// check on the path.
    mutating func due(nowNs: UInt64) -> [(bytes: [UInt8], to: UDPAddress)] {
        guard nowNs >= nextCheckNs else { return [] }
        pending = pending.filter { nowNs - $0.value.sentNs < 30_000_000_000 }
        let targets = selected.map { [$0] } ?? candidates
        nextCheckNs = nowNs + (selected == nil ? 50_000_000 : UInt64.random(in: 4_000_000_000...6_000_000_000))
        return targets.map { to in
            let id = (0..<12).map { _ in UInt8.random(in: 0...255) }
            pending[id] = (to, nowNs)
            return (STUN.bindingRequest(transactionID: id, username: "\(remoteUfrag):\(localUfrag)", password: remotePassword, useCandidate: true), to)
        }
    }

    /// A success response from `from`: true when it answers one of our requests sent there
    /// and its integrity checks (the path is then `selected`, the first answered).
    mutating func answered(_ response: STUN.Response, from: UDPAddress) -> Bool {
        guard let request = pending[response.transactionID], request.to == from,
              response.isSuccess, response.isAuthentic(password: remotePassword) else { return false }
        pending[response.transactionID] = nil
        if selected == nil { selected = from }
        return true
    }
}

extension WebRTCPeer {
    /// The controlling agent's checks that are due, sent; the DTLS client's first flight once
    /// a path is chosen (sent again by its own retransmission timer).
    func checkIfDue(nowNs: UInt64) {
        guard !isClosed, ice != nil else { return }
        for (bytes, to) in ice!.due(nowNs: nowNs) { endpoint.socket.send(bytes, to: to) }
    }

    /// Media (DTLS, SRTCP) from `from`, an address the server checked from or answered on:
    /// the path the server chose is the one used from now (the controlled agent should
    /// follow our nomination; aioice uses the first pair its own checks validated).
    func latch(_ from: UDPAddress) {
        address = from
    }

    /// A binding response from `from`: true when it answers this peer's check.
    func answered(_ response: STUN.Response, from: UDPAddress, nowNs: UInt64) -> Bool {
        guard !isClosed, ice != nil else { return false }
        let hadPath = ice!.selected != nil
        guard ice!.answered(response, from: from) else { return false }
        lastCheckNs = nowNs
        if !hadPath, let path = ice!.selected {
            endpoint.alias(self, path)
            if address == nil { address = path }
            if dtls.isClient { handle(dtls.start()) }
        }
        return true
    }
}
