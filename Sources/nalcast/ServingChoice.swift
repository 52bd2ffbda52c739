import Audio
import CommandOptions
import IO
import Media
import Output
import Delivery
import Metrics
import Serving
import WebRTC

/// What `produce` and `consume` share to serve their stream: the options (`--listen`, repeatable,
/// each address Annex-B or `ts:` MPEG-TS; `--web`,
/// `--allow-remote`, `--join`, the `--reader-*` bounds, `--max-readers`), the lines of
/// `--dry-run`, and the loop side built from them (`ServingSide`: the `StreamServer`, the
/// `--web` page with /ws, /metrics and /healthz, the events they report).
///
/// The two differ only where an encoder matters: `produce` can make an IDR for a joining
/// reader (`--join idr`, its default, and `--idr-min-interval`); `consume` relays a stream it
/// does not encode, so its readers start with the cached GOP (`gop`, the default) or at the
/// stream's next IDR (`next`).
struct ServingChoice {
    /// Where readers connect (`--listen`, repeatable): each address Annex-B (`tcp://…`,
    /// `unix:…`) or MPEG-TS (`ts:tcp://…`, `ts:unix:…`).
    var listeners: [Listening] = []
    /// `--web`: the browser page, its WebSocket stream, WHEP at /whep, /metrics and /healthz.
    var web: Endpoint?
    /// `--webrtc-host`: more host candidates for WHEP viewers (names or addresses seen from outside).
    var webrtcHosts: [String] = []
    /// `--web-origin`: the origins whose pages may use WHEP (CORS), `*` for any.
    var webOrigins: [String] = []
    var broadcaster = BroadcasterConfig()
    /// Who may use `--web` and `--metrics`: tokens, or nothing checked.
    var access = AccessChoice()

    var isServing: Bool { !listeners.isEmpty || web != nil }
    /// True when a listener serves MPEG-TS (the only readers that get audio).
    var servesTransportStream: Bool { listeners.contains { $0.format == .mpegTS } }

    /// Which command: the option texts and what `--join` may be.
    enum Role {
        /// `produce`: an encoder that can make IDRs on demand.
        case encoder
        /// `consume`: a relay of what it reads.
        case relay

        var command: String { self == .encoder ? "produce" : "consume" }
        var joinPolicies: [JoinPolicy] { self == .encoder ? JoinPolicy.allCases : [.gop, .next] }
        var defaultJoin: JoinPolicy { self == .encoder ? .idr : .gop }
    }

    /// The serving options of `role`, in `--help` order.
    static func specs(_ role: Role) -> [OptionSpec] {
        var specs: [OptionSpec] = []
        switch role {
        case .encoder:
            specs += [
                OptionSpec(name: "listen", value: "ADDR", help: "serve readers on tcp://HOST:PORT or unix:PATH (raw H.264 Annex-B, video only), or on ts:tcp://HOST:PORT or ts:unix:PATH (MPEG-TS: video and audio with timestamps, for ffplay, VLC, mpv); repeatable, each listener its own format", defaultText: "tcp://127.0.0.1:7264 unless -o, --forward or --web is given", repeatable: true),
                OptionSpec(name: "web", value: "ADDR", help: "serve a page that plays the stream in a browser on ADDR (open http://HOST:PORT/; the stream at /ws, WebRTC viewers at /whep (WHEP), also /metrics and /healthz)"),
                webrtcHostSpec, webOriginSpec,
                OptionSpec(name: "allow-remote", value: nil, help: "allow --listen, --web or --metrics on a non-loopback address (the stream may show your screen)"),
            ] + AccessChoice.specs + [
                OptionSpec(name: "join", value: "POLICY", help: "where a new reader starts: idr (fresh IDR at once), gop (cached GOP), next (next IDR)", defaultText: "idr"),
                OptionSpec(name: "idr-min-interval", value: "TIME", help: "at most one IDR for joining readers per TIME", defaultText: "250ms"),
            ]
        case .relay:
            specs += [
                OptionSpec(name: "listen", value: "ADDR", help: "relay: serve what is read to readers on tcp://HOST:PORT or unix:PATH (Annex-B), or ts:tcp://HOST:PORT or ts:unix:PATH (MPEG-TS: video and the input's AAC audio); repeatable; on the machine of the --from producer, another port than its 7264, e.g. tcp://127.0.0.1:7265", repeatable: true),
                OptionSpec(name: "web", value: "ADDR", help: "relay: serve a page that plays what is read in a browser on ADDR (open http://HOST:PORT/; the stream at /ws, WebRTC viewers at /whep (WHEP), also /metrics and /healthz)"),
                webrtcHostSpec, webOriginSpec,
                OptionSpec(name: "allow-remote", value: nil, help: "allow --listen, --web or --metrics on a non-loopback address"),
            ] + AccessChoice.specs + [
                OptionSpec(name: "join", value: "POLICY", help: "where a new reader starts: gop (the cached GOP from its IDR at once, then live), next (the next IDR); no idr: there is no encoder to ask", defaultText: "gop"),
            ]
        }
        specs += [
            OptionSpec(name: "reader-lag", value: "TIME", help: "a reader further behind skips to the next IDR", defaultText: "500ms"),
            OptionSpec(name: "reader-max-bytes", value: "SIZE", help: "a reader with more queued skips to the next IDR", defaultText: "8M"),
            OptionSpec(name: "reader-timeout", value: "TIME", help: "close a reader that makes no progress for TIME", defaultText: "10s"),
            OptionSpec(name: "max-readers", value: "N", help: "close further readers at once", defaultText: "16"),
        ]
        return specs
    }

    static let webrtcHostSpec = OptionSpec(name: "webrtc-host", value: "NAME|IP", help: "with --web: also offer WHEP viewers this address (the one they reach this machine by: NAT, a container) as a host candidate; repeatable", repeatable: true)

    static let webOriginSpec = OptionSpec(name: "web-origin", value: "ORIGIN", help: "with --web: let pages of this origin (https://player.example) use /whep from the browser (CORS), or * for any; none but the page's own by default; repeatable", repeatable: true)

    /// Reads the serving options. `defaultListen`: listen on 127.0.0.1:7264 when neither
    /// `--listen` nor `--web` is given (`produce` without another output).
    /// `metrics`: the `--metrics` address, which the tokens protect too.
    /// `publish`: the WHIP listener of `consume --from whip-listen://`, which they protect too.
    static func parse(_ o: ParsedOptions, _ role: Role, defaultListen: Bool, metrics: Endpoint?, publish: Endpoint? = nil) throws -> ServingChoice {
        // produce's messages carry no command prefix (as before the relay); consume's do.
        let prefix = role == .encoder ? "" : "consume: "
        var choice = ServingChoice()
        let webText = o.string("web")
        var listenTexts = o.strings("listen")
        if listenTexts.isEmpty && defaultListen && webText == nil { listenTexts = ["tcp://127.0.0.1:\(Endpoint.defaultPort)"] }
        for text in listenTexts {
            let listening: Listening
            do { listening = try Listening(parsing: text) } catch { throw CommandError.usage("\(prefix)--listen: \(error)") }
            if !listening.endpoint.isLoopback, !o.has("allow-remote") {
                throw CommandError.usage("\(prefix)--listen \(listening) is not a loopback address: add --allow-remote to serve other machines")
            }
            // (Port 0, the kernel's choice, may be given for several.)
            if case .tcp(_, 0) = listening.endpoint {
            } else if choice.listeners.contains(where: { $0.endpoint == listening.endpoint }) {
                throw CommandError.usage("\(prefix)--listen \(listening): given twice; each listener needs an address of its own")
            }
            choice.listeners.append(listening)
        }
        if let webText {
            do { choice.web = try Endpoint(parsing: webText) } catch { throw CommandError.usage("\(prefix)--web: \(error)") }
            if let web = choice.web, !web.isLoopback, !o.has("allow-remote") {
                throw CommandError.usage("\(prefix)--web \(web) is not a loopback address: add --allow-remote to serve other machines")
            }
        }
        choice.webrtcHosts = o.strings("webrtc-host")
        if !choice.webrtcHosts.isEmpty && choice.web == nil {
            throw CommandError.usage("\(prefix)--webrtc-host: WebRTC viewers come through --web; give --web ADDR too")
        }
        choice.webOrigins = o.strings("web-origin")
        if let problem = choice.webOrigins.lazy.compactMap(CrossOrigin.problem).first { throw CommandError.usage("\(prefix)--web-origin: \(problem)") }
        if !choice.webOrigins.isEmpty && choice.web == nil {
            throw CommandError.usage("\(prefix)--web-origin: the origins are let into /whep on --web; give --web ADDR too")
        }
        var b = BroadcasterConfig()
        if role == .relay, o.string("join") == JoinPolicy.idr.rawValue {
            throw CommandError.usage("consume: \(o.label("join").trimmed): there is no encoder to ask for an IDR when relaying; use --join gop (the cached GOP at once) or --join next (the next IDR)")
        }
        b.joinPolicy = try o.value("join", default: role.defaultJoin, expected: "expected one of \(role.joinPolicies.map(\.rawValue).joined(separator: ", "))") {
            JoinPolicy(rawValue: $0).flatMap { role.joinPolicies.contains($0) ? $0 : nil }
        }
        if role == .encoder {
            b.idrMinIntervalNs = try nanoseconds(o, "idr-min-interval", default: 0.25)
        }
        b.readerLimits.maxLagNs = try nanoseconds(o, "reader-lag", default: 0.5, minimum: 0.001)
        b.readerLimits.maxBytes = try o.value("reader-max-bytes", default: 8 << 20, expected: "expected bytes, at least 4k: 8M, 64k") {
            ValueFormat.byteSize($0).flatMap { $0 >= 4096 ? $0 : nil }
        }
        b.readerTimeoutNs = try nanoseconds(o, "reader-timeout", default: 10, minimum: 0.001)
        b.maxReaders = try o.value("max-readers", default: 16, expected: "expected a positive number", ValueFormat.positiveInt)
        choice.broadcaster = b
        choice.access = try AccessChoice.parse(o, web: choice.web, metrics: metrics, publish: publish, prefix: prefix)
        return choice
    }

    static func nanoseconds(_ o: ParsedOptions, _ name: String, default seconds: Double, minimum: Double = 0) throws -> UInt64 {
        UInt64(try o.duration(name, default: seconds, minimum: minimum) * 1e9)
    }

    /// The `--dry-run` lines: `listen:`, `web:` and, when serving, the reader policies.
    func lines(_ role: Role) -> [String] {
        let listen = listeners.isEmpty ? "none" : listeners.map { "\($0) (\($0.format == .mpegTS ? "MPEG-TS" : "Annex-B"))" }.joined(separator: ", ")
        var out = ["listen: \(listen)", "web: \(web?.description ?? "none")"]
        if !webrtcHosts.isEmpty { out.append("webrtc-host: \(webrtcHosts.joined(separator: ", "))") }
        if !webOrigins.isEmpty { out.append("web-origin: \(webOrigins.joined(separator: ", "))") }
        guard isServing else { return out }
        let b = broadcaster
        var join = "join: \(b.joinPolicy.rawValue)"
        if role == .encoder { join += " idr-min-interval=\(Double(b.idrMinIntervalNs) / 1e6)ms" }
        out.append(join + " reader-lag=\(Double(b.readerLimits.maxLagNs) / 1e6)ms reader-max-bytes=\(b.readerLimits.maxBytes) "
            + "reader-timeout=\(Double(b.readerTimeoutNs) / 1e9)s max-readers=\(b.maxReaders)")
        return out
    }

    /// Where a browser opens the page: `http://127.0.0.1:8080/` (a unix socket as is, for a
    /// reverse proxy; this machine's name for a wildcard address).
    static func pageURL(_ endpoint: Endpoint) -> String {
        AccessChoice.pageURL(endpoint)
    }
}

/// The loop side of a `ServingChoice`: the `StreamServer` (`--listen`, and the readers of
/// `--web`'s /ws) and the `--web` HTTP server with the page, /ws, /metrics and /healthz.
/// Loop-owned: made before the loop runs, used on the loop thread.
final class ServingSide {
    let server: StreamServer?
    /// `--web`: the page, its stream at /ws (readers of `server`), /metrics, /healthz.
    let webServer: HTTPServer?
    /// The tokens and TLS of `--web` and `--metrics`.
    let security: HTTPSecurity
    /// WHEP on `--web`: WebRTC viewers on a UDP socket of the listener's address.
    let whep: WHEPService?

    /// - Parameters:
    ///   - metricsText: the body of /metrics (the registry, and whatever the command adds).
    ///   - onRequestIDR: asks the encoder for an IDR; nil for a relay.
    ///   - onFinished: the stream ended and the readers are drained or closed.
    /// - Parameters:
    ///   - audio: the audio track the TS listeners carry; nil for video only.
    init(loop: EventLoop, choice: ServingChoice, _ role: ServingChoice.Role, registry: MetricsRegistry, events: EventLog?,
         security: HTTPSecurity, audio: AudioFormat? = nil,
         metricsText: @escaping () -> String, onRequestIDR: (() -> Void)?, onFinished: @escaping () -> Void) throws {
        let prefix = role == .encoder ? "" : "consume: "
        self.security = security
        guard choice.isServing else {
            server = nil
            webServer = nil
            whep = nil
            return
        }
        let server: StreamServer
        do {
            server = try StreamServer(loop: loop, config: StreamServer.Config(listeners: choice.listeners, broadcaster: choice.broadcaster, audio: audio),
                                      metrics: StreamServer.Metrics(registry: registry, transportStream: choice.servesTransportStream))
        } catch let error as SocketError {
            // Which listener: the one whose address the error names, else all of them.
            let named = choice.listeners.first { error.description.contains($0.endpoint.description) }
            let listen = named.map(\.description) ?? choice.listeners.map(\.description).joined(separator: " ")
            throw CommandError.unavailable("\(prefix)--listen \(listen): \(error)")
        } catch {
            let ts = choice.listeners.filter { $0.format == .mpegTS }.map(\.description).joined(separator: " ")
            throw CommandError.unavailable("\(prefix)--listen \(ts): \(error)")
        }
        if let onRequestIDR {
            server.onRequestIDR = onRequestIDR
            server.makesIDRs = true
        }
        server.onEvent = { event in ServingSide.report(event, to: events) }
        server.onFinished = onFinished
        self.server = server
        if let endpoint = choice.web {
            let web: HTTPServer
            do {
                web = try ServingSide.httpServer(loop, endpoint, metricsText: metricsText)
            } catch {
                throw CommandError.unavailable("\(prefix)--web \(endpoint): \(error)")
            }
            security.protect(web)
            server.pageIsSecure = security.isSecure
            web.routes.add("GET", "/", needs: .watch) { _ in
                var response = HTTPResponse(status: 200, contentType: "text/html; charset=utf-8", body: ViewerPage.html)
                response.headers.append(("Cache-Control", "no-cache"))
                // The address may carry a token until the page drops it: no referrer with it.
                response.headers.append(("Referrer-Policy", "no-referrer"))
                return response
            }
            // A loopback page refuses names that are not this machine's (DNS rebinding).
            server.viewersOnlyFromLoopbackHosts = endpoint.isLoopback
            web.routes.add("GET", "/ws", needs: .watch, handler: server.webSocketRoute)
            webServer = web
            let whep = try ServingSide.whep(loop, endpoint, choice.webrtcHosts, server, registry, prefix)
            whep.crossOrigin = CrossOrigin(allowed: choice.webOrigins)
            whep.install(on: web)
            self.whep = whep
        } else {
            webServer = nil
            whep = nil
        }
    }

    /// WHEP for the page at `endpoint`: a UDP socket on its address (any address for a unix
    /// socket's page, behind a proxy), its candidates that address (every interface's for a
    /// wildcard) and `hosts`.
    static func whep(_ loop: EventLoop, _ endpoint: Endpoint, _ hosts: [String], _ server: StreamServer, _ registry: MetricsRegistry, _ prefix: String) throws -> WHEPService {
        var bind = "0.0.0.0"
        if case .tcp = endpoint, let address = try? SocketAddress.resolve(endpoint, passive: true).first { bind = address.host }
        do {
            // Behind a proxy (a unix socket's page), the hosts given, when given, are all.
            var unix = false
            if case .unix = endpoint { unix = true }
            let candidates = try HostCandidates.list(bound: unix && !hosts.isEmpty ? nil : bind, extra: hosts)
            let udp = try WebRTCEndpoint(loop: loop, host: bind, candidates: candidates, metrics: WebRTCMetrics(registry: registry))
            return WHEPService(server: server, endpoint: udp)
        } catch {
            throw CommandError.unavailable("\(prefix)--web \(endpoint): WebRTC: \(error)")
        }
    }

    /// /metrics and /healthz, the routes `--metrics` and `--web` share.
    static func httpServer(_ loop: EventLoop, _ endpoint: Endpoint, metricsText: @escaping () -> String) throws(SocketError) -> HTTPServer {
        try HTTPServer(loop: loop, endpoint: endpoint, metrics: metricsText)
    }

    func start() {
        server?.start()
        webServer?.start()
        whep?.start()
    }

    /// After the loop: the page's HTTP server and WHEP's socket close.
    func close() {
        webServer?.close()
        whep?.close()
    }

    /// `produce --audio` with a `ts:` listener: every audio packet goes to the stream server's
    /// mailbox (from the audio thread), to be muxed with the next access unit; one the mailbox
    /// refuses (the loop thread is behind) is counted in
    /// `nalcast_ts_audio_packets_dropped_total`. Annex-B readers and viewers get no sound.
    func carry(_ audio: AudioDelivery) {
        guard let server, server.config.listeners.contains(where: { $0.format == .mpegTS }), let mailbox = server.mailbox else { return }
        let refused = server.metrics.tsAudioDropped
        audio.add { packet in
            if !mailbox.send(.audio(packet)) { refused?.increment() }
        }
    }

    /// `serving tcp://…`, `the page on http://…/`: for the line that says where the stream goes.
    var places: [String] {
        var out: [String] = []
        for listening in server?.boundListeners ?? [] {
            out.append("serving \(listening)" + (listening.format == .mpegTS ? " (MPEG-TS)" : ""))
        }
        if let web = webServer?.boundEndpoint { out.append("the page on \(security.pageURL(web))") }
        return out
    }

    /// Where WHEP viewers go, a line of its own (the page's address stays the one URL on the
    /// line before): `WebRTC (WHEP): /whep beside the page; media on UDP 127.0.0.1:40000`.
    var whepLine: String? {
        guard let whep else { return nil }
        let candidates = whep.endpoint.candidateHosts.map { ($0.contains(":") ? "[\($0)]" : $0) + ":\(whep.endpoint.port)" }
        return "WebRTC (WHEP): POST an offer to /whep beside the page; media on UDP \(candidates.joined(separator: " "))"
    }

    /// The lines said once at start about TLS and tokens (`HTTPSecurity.startLines`).
    func securityLines(metrics: HTTPServer?) -> [String] {
        security.startLines(page: webServer, metrics: metrics)
    }

    /// ` readers=N reader-skips=K` for the status line (readers now, times one skipped to
    /// the next IDR); empty when not serving.
    var statusText: String {
        guard let server else { return "" }
        return " readers=\(server.readerCount) reader-skips=\(server.metrics.readerSkips.value)"
    }

    /// What the hand-off to the server's mailbox says when it leaves access units out (the
    /// loop thread is behind) and when readers resume at an IDR: a line and an event each.
    static func handOffReporter(capacity: Int, log: Log, events: EventLog?) -> @Sendable (ResyncingHandOff.Report) -> Void {
        { report in
            switch report {
            case .gapOpened:
                log.line("readers: the serving thread is behind (\(capacity) access units waiting); dropping up to the next IDR", force: true)
                events?.emit("handoff-gap")
            case .resumed(let lost):
                log.line("readers: resumed at an IDR; \(lost) access units were dropped", force: true)
                events?.emit("handoff-resumed", [("accessUnits", Int(lost))])
            }
        }
    }

    /// The stream server's events as `--events` lines.
    static func report(_ event: StreamServer.Event, to log: EventLog?) {
        guard let log else { return }
        switch event {
        case .readerJoined(let id, let peer): log.emit("reader-joined", [("reader", Int(id.rawValue)), ("peer", peer)])
        case .readerStarted(let id, let ms, let burst):
            log.emit("reader-started", [("reader", Int(id.rawValue)), ("joinMs", ms), ("burst", burst)])
        case .readerSkipped(let id, let units, let bytes):
            log.emit("reader-skipped", [("reader", Int(id.rawValue)), ("accessUnits", units), ("bytes", bytes)])
        case .readerClosed(let id, let reason): log.emit("reader-closed", [("reader", Int(id.rawValue)), ("reason", reason)])
        case .readerRefused(let peer): log.emit("reader-refused", [("peer", peer), ("reason", "max-readers")])
        case .idrRequested: log.emit("idr-forced")
        }
    }
}
