import Clocks
import IO

/// An RTSP client session (RFC 2326) on the calling thread, for `consume --from rtsp://`:
/// OPTIONS, DESCRIBE (with Basic or Digest authentication when the server asks), SETUP of
/// the H.264 track and of an AAC track if there is one (RTP interleaved in the connection,
/// or over UDP port pairs), PLAY; then the packets as they come, the session kept alive
/// (GET_PARAMETER, else OPTIONS, at half the session's timeout), and TEARDOWN at the end.
///
/// Life: `init` (connects) → `open()` → `receive(until:)` as long as wanted → `close()`.
/// Everything blocks the calling thread, bounded by deadlines and ended at once by the
/// stop signal.
public final class RTSPClient {
    public enum Transport: String, Sendable { case tcp, udp }

    /// A track set up: its SDP media, and the channels its RTP and RTCP come on (over UDP
    /// too, where they name its sockets).
    public struct Track: Sendable {
        public let media: SessionDescription.Media
        public let rtpChannel: UInt8
        public var rtcpChannel: UInt8 { rtpChannel + 1 }
    }

    /// What `receive` returns.
    public enum Received {
        case rtp(track: Int, bytes: [UInt8])
        case rtcp(track: Int, bytes: [UInt8])
    }

    public let url: RTSPURL
    public let transport: Transport
    /// The tracks set up, video first.
    public private(set) var tracks: [Track] = []
    /// Why an AAC or other track was left out, said once per opening.
    public private(set) var ignoredTracks: [String] = []

    private let connection: RTSPConnection
    private let timeout: Double
    private var sequence = 0
    private var session: String?
    private var sessionTimeout: Double = 60
    private var keepAliveDue: Double = .infinity
    private var keepAliveMethod = "OPTIONS"
    private var authentication: RTSPAuthentication?
    /// The session's aggregate control URL: what PLAY, keep-alives and TEARDOWN name.
    private var aggregate = ""
    /// Packets that came while a response was awaited.
    private var early: [RTSPConnection.Item] = []

    /// Connects (within `timeout` seconds; each request's answer gets as long).
    public init(url: RTSPURL, transport: Transport, timeout: Double, stop: RTSPStopSignal) throws(RTSPError) {
        guard !url.secure else { throw RTSPError(.invalid, "rtsps:// is not spoken by nalcast's RTSP client") }
        self.url = url
        self.transport = transport
        self.timeout = timeout
        connection = try RTSPConnection(host: url.host, port: url.port, timeout: timeout, stop: stop)
    }

    /// Describes the stream, sets up its tracks and plays them.
    public func open() throws(RTSPError) {
        let options = try request("OPTIONS", url.absolute)
        if (options.header("Public") ?? "").uppercased().contains("GET_PARAMETER") { keepAliveMethod = "GET_PARAMETER" }
        let description = try request("DESCRIBE", url.absolute, ["Accept: application/sdp"])
        let contentBase = description.header("Content-Base") ?? description.header("Content-Location") ?? url.absolute
        let sdp = SessionDescription(parsing: String(decoding: description.body, as: UTF8.self))
        let base = RTSPURL.resolve(control: sdp.control, base: contentBase)
        aggregate = base
        guard let video = sdp.media.first(where: { $0.kind == "video" && $0.encoding == "H264" }) else {
            let found = sdp.media.map { "\($0.kind) (\($0.encoding.isEmpty ? "payload \($0.payloadType)" : $0.encoding.lowercased()))" }
            throw RTSPError(.invalid, "no H.264 video in the stream" + (found.isEmpty ? "" : "; it has " + found.joined(separator: ", ")))
        }
        let audio = sdp.media.first { $0.kind == "audio" && $0.encoding == "MPEG4-GENERIC" && ($0.format["mode"] ?? "").lowercased() == "aac-hbr" && $0.audioSpecificConfig != nil }
        ignoredTracks = sdp.media.filter { $0.kind != "video" || $0.encoding != "H264" }.filter { m in audio.map { $0.payloadType != m.payloadType || $0.kind != m.kind } ?? true }
            .map { "\($0.kind) (\($0.encoding.isEmpty ? "payload \($0.payloadType)" : $0.encoding.lowercased()))" }
        for media in [video] + (audio.map { [$0] } ?? []) {
            try setUp(media, base: base)
        }
        _ = try request("PLAY", base, ["Range: npt=0.000-"])
        keepAliveDue = MonotonicClock.seconds + sessionTimeout / 2
    }

    /// The next packet, nil when `deadline` passed first. Keeps the session alive meanwhile.
    public func receive(until deadline: Double) throws(RTSPError) -> Received? {
        while true {
            if !early.isEmpty, let r = received(early.removeFirst()) { return r }
            if MonotonicClock.seconds >= keepAliveDue { try keepAlive() }
            guard let item = try connection.next(until: min(deadline, keepAliveDue)) else {
                if MonotonicClock.seconds >= deadline { return nil }
                continue
            }
            if let r = received(item) { return r }
        }
    }

    /// Sends an RTCP packet for `track` (a receiver report): interleaved on its RTCP
    /// channel, or to the server's RTCP port.
    public func send(rtcp bytes: [UInt8], track: Int) {
        let channel = tracks[track].rtcpChannel
        switch transport {
        case .udp: connection.sendDatagram(bytes, channel: channel)
        case .tcp:
            var frame: [UInt8] = [0x24, channel, UInt8(bytes.count >> 8), UInt8(truncatingIfNeeded: bytes.count)]
            frame += bytes
            try? connection.write(frame, until: MonotonicClock.seconds + 1)
        }
    }

    /// TEARDOWN, then the sockets close once its answer came (at most a second): what arrived
    /// before the answer (a keep-alive's answer, packets) is read on the way, so the socket
    /// closes with nothing unread. A socket closed with unread input ends with a reset, which
    /// drops what it had not sent yet: the TEARDOWN itself, held back behind a keep-alive not
    /// yet acknowledged. Neither wait is cut short by the stop signal: the stop is what asked
    /// for the teardown.
    public func close() {
        guard session != nil else { return }
        sequence += 1
        let cseq = sequence
        let until = MonotonicClock.seconds + 1
        if (try? connection.write(requestBytes("TEARDOWN", aggregate, []), until: until, stoppable: false)) != nil {
            _ = try? response(to: cseq, within: until - MonotonicClock.seconds, stoppable: false)
        }
        session = nil
    }

    private func received(_ item: RTSPConnection.Item) -> Received? {
        guard case .packet(let channel, let bytes) = item else { return nil }  // a keep-alive's answer, a server's request
        guard let index = tracks.firstIndex(where: { $0.rtpChannel == channel || $0.rtcpChannel == channel }) else { return nil }
        return channel == tracks[index].rtpChannel ? .rtp(track: index, bytes: bytes) : .rtcp(track: index, bytes: bytes)
    }

    private func keepAlive() throws(RTSPError) {
        keepAliveDue = MonotonicClock.seconds + sessionTimeout / 2
        sequence += 1
        // Not waited for: its answer is skipped when it comes.
        try connection.write(requestBytes(keepAliveMethod, aggregate, []), until: MonotonicClock.seconds + timeout)
    }

    private func setUp(_ media: SessionDescription.Media, base: String) throws(RTSPError) {
        let channel = UInt8(2 * tracks.count)
        var spec: String
        switch transport {
        case .tcp: spec = "RTP/AVP/TCP;unicast;interleaved=\(channel)-\(channel + 1)"
        case .udp:
            let ports = try UDPPorts.open(family: connection.peer.family)
            connection.datagrams += [.init(socket: ports.rtp, channel: channel), .init(socket: ports.rtcp, channel: channel + 1)]
            spec = "RTP/AVP;unicast;client_port=\(ports.port)-\(ports.port + 1)"
        }
        let answer = try request("SETUP", RTSPURL.resolve(control: media.control, base: base), ["Transport: \(spec)"])
        if session == nil, let value = answer.header("Session") {
            let parts = value.split(separator: ";")
            session = parts.first.map { $0.strippingSpaces() }
            if let t = parts.dropFirst().first(where: { $0.strippingSpaces().lowercased().hasPrefix("timeout=") }),
               let seconds = Double(t.split(separator: "=").last ?? ""), seconds >= 2 { sessionTimeout = seconds }
        }
        let transportAnswer = (answer.header("Transport") ?? "").lowercased()
        if transport == .udp, let ports = Self.field("server_port", in: transportAnswer)?.split(separator: "-").compactMap({ UInt16($0) }), let rtp = ports.first {
            let n = connection.datagrams.count
            connection.datagrams[n - 2].peer = connection.peer.with(port: rtp)
            connection.datagrams[n - 1].peer = connection.peer.with(port: ports.count > 1 ? ports[1] : rtp + 1)
        }
        var rtpChannel = channel
        if transport == .tcp, let given = Self.field("interleaved", in: transportAnswer)?.split(separator: "-").first.flatMap({ UInt8($0) }) {
            rtpChannel = given
        }
        tracks.append(Track(media: media, rtpChannel: rtpChannel))
    }

    static func field(_ name: String, in transport: String) -> String? {
        transport.split(separator: ";").first { $0.hasPrefix(name + "=") }.map { String($0.dropFirst(name.count + 1)) }
    }

    /// One request and its answer; a 401 is answered once with the URL's credentials.
    private func request(_ method: String, _ target: String, _ headers: [String] = []) throws(RTSPError) -> RTSPMessage {
        for attempt in 0..<2 {
            sequence += 1
            try connection.write(requestBytes(method, target, headers), until: MonotonicClock.seconds + timeout)
            let answer = try response(to: sequence)
            guard let status = answer.status else { continue }
            if status == 401 && attempt == 0 && authentication == nil, let user = url.user,
               let auth = RTSPAuthentication(challenges: answer.headers("WWW-Authenticate"), user: user, password: url.password ?? "") {
                authentication = auth
                continue
            }
            switch status {
            case 200..<300: return answer
            case 401, 403:
                let said = url.user == nil ? "the server asks for credentials (rtsp://USER:PASS@…)" : "the server refused the credentials"
                throw RTSPError(.refused, "\(method): \(status) \(answer.reason): \(said)")
            case 404: throw RTSPError(.notFound, "\(method): 404 \(answer.reason): no such stream")
            case 454 where method != "SETUP": throw RTSPError(.lost, "\(method): 454 \(answer.reason): the session is gone")
            default: throw RTSPError(status < 500 ? .invalid : .lost, "\(method): \(status) \(answer.reason)")
            }
        }
        throw RTSPError(.refused, "\(method): 401: the server refused the credentials")
    }

    /// The answer to request `cseq`, within `seconds` (the client's timeout by default);
    /// what comes before it is read on the way (packets kept for `receive`).
    private func response(to cseq: Int, within seconds: Double? = nil, stoppable: Bool = true) throws(RTSPError) -> RTSPMessage {
        let seconds = seconds ?? timeout
        let deadline = MonotonicClock.seconds + seconds
        while true {
            guard let item = try connection.next(until: deadline, stoppable: stoppable) else {
                throw RTSPError(.lost, "no answer from the server in \(Int(seconds)) s")
            }
            switch item {
            case .packet: early.append(item)
            case .message(let m):
                if m.status != nil, m.header("CSeq").flatMap({ Int($0) }) == cseq { return m }
            }
        }
    }

    private func requestBytes(_ method: String, _ target: String, _ headers: [String]) -> [UInt8] {
        var lines = ["\(method) \(target) RTSP/1.0", "CSeq: \(sequence)", "User-Agent: nalcast"]
        if let session { lines.append("Session: \(session)") }
        if var auth = authentication {
            lines.append("Authorization: " + auth.header(method: method, uri: target))
            authentication = auth
        }
        lines += headers
        return Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
    }
}
