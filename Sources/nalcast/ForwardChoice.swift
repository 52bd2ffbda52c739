import CommandOptions
import Muxing
import IO
import Output
import WHIP

/// One `--forward` target of `consume` or `produce`: raw Annex-B to `tcp://HOST:PORT` or
/// `unix:PATH` (what `produce --listen` serves), or a push to a media server: `rtmp://`
/// by nalcast's own RTMP publisher, `rtmps://`, `srt://`, `rtsp://`, `udp://` through
/// libavformat (`PushTarget.makeTransport`), or a WHIP push (`whip://`, `http://`,
/// `https://`: WebRTC, `WHIPTransport`). What it prints is the credential-free form (a WHIP
/// bearer token is never part of it).
enum ForwardChoice: CustomStringConvertible {
    case socket(Endpoint)
    case push(PushTarget)
    /// With the bearer token of `--whip-token` and the CA file of `--whip-ca` (`WHIPChoice.apply`).
    case whip(WHIPTarget, token: String?, ca: String?)

    /// The forms, for help and errors.
    static let forms = "tcp://HOST:PORT, unix:PATH, rtmp://HOST[:PORT]/APP/KEY, srt://HOST:PORT[?streamid=ID], rtsp://HOST[:PORT]/PATH, udp://HOST:PORT or whip://HOST[:PORT]/PATH, https://… (WHIP)"

    /// Parses one `--forward` value; a push needs the FFmpeg libraries (exit 69 without).
    static func parse(_ text: String, command: String) throws -> ForwardChoice {
        let whip: WHIPTarget?
        do { whip = try WHIPTarget(url: text) } catch { throw CommandError.usage("\(command): --forward: \(error)") }
        if let whip { return .whip(whip, token: nil, ca: nil) }
        do {
            if let push = try PushTarget(url: text) {
                if push.needsFFmpeg, let problem = FFmpegLibraries.problem { throw CommandError.unavailable("\(command): --forward \(push): \(problem)") }
                return .push(push)
            }
        } catch let error as PushTargetError {
            throw CommandError.usage("\(command): --forward: \(error)")
        }
        guard text.hasPrefix("tcp://") || text.hasPrefix("unix:") else {
            throw CommandError.usage("\(command): --forward \(text.prefix { $0 != ":" }): expected \(forms)")
        }
        do {
            return .socket(try Endpoint(parsing: text, portRequired: true))
        } catch {
            throw CommandError.usage("\(command): --forward: \(error)")
        }
    }

    var description: String {
        switch self {
        case .socket(let endpoint): endpoint.description
        case .push(let push): push.description
        case .whip(let whip, _, _): whip.description
        }
    }

    /// What it sends: `Annex-B` or the container and protocol.
    var carries: String {
        switch self {
        case .socket: "raw Annex-B"
        case .push(let push):
            switch push.kind {
            case .rtmp: "FLV over RTMP"
            case .srt: "MPEG-TS over SRT" + (push.secret.map { ", \($0)" } ?? "")
            case .rtsp: "RTSP publish, RTP over TCP"
            case .udp: "MPEG-TS over UDP"
            }
        case .whip(let whip, let token, let ca):
            "WHIP, H.264 over WebRTC" + (whip.tls ? ", https" + (ca.map { " (CA \($0))" } ?? "") : "") + (token == nil ? "" : ", with a bearer token")
        }
    }

    /// The sink's name in logs, events and metrics: `forward`, or `forward1`… when there
    /// are several.
    static func sinkName(_ index: Int, of count: Int) -> String { count == 1 ? "forward" : "forward\(index + 1)" }

    /// A forward sink for this target. `countedClock`: media time counted at the frame rate
    /// (a file read by `consume`). `live`: access units come as they happen, so a raw
    /// Annex-B remote gets each one delimited (its parser would wait for the next).
    /// `keyframe`: asks the encoder for an IDR (`produce`), for a WHIP server's PLI; nil: a
    /// relay, which sends its cached GOP again.
    func makeSink(name: String, fallbackFrameRate: Double?, countedClock: Bool, live: Bool, keyframe: (@Sendable () -> Void)? = nil,
                  onEvent: @escaping @Sendable (ForwardSink.Event) -> Void) -> sending ForwardSink {
        switch self {
        case .socket(let endpoint):
            return ForwardSink(name: name, transport: SocketTransport(endpoint: endpoint, delimits: live), onEvent: onEvent)
        case .push(let push):
            return ForwardSink(name: name, transport: push.makeTransport(fallbackFrameRate: fallbackFrameRate, countedClock: countedClock), onEvent: onEvent)
        case .whip(let whip, let token, let ca):
            return ForwardSink(name: name, transport: WHIPTransport(whip, token: token, caFile: ca, onKeyframeRequest: keyframe), onEvent: onEvent)
        }
    }

    /// What a forward target's events become: a log line each, an event, and `onConnect`
    /// (`consume` keeps which targets connected at least once, for its exit code).
    /// `onRefused`: the remote refused the SRT passphrase; the run ends (exit 77).
    static func reporter(name: String, log: Log, events: EventLog?, onConnect: (@Sendable () -> Void)? = nil,
                         onRefused: @escaping @Sendable (String) -> Void) -> @Sendable (ForwardSink.Event) -> Void {
        { event in
            switch event {
            case .connected(let target):
                onConnect?()
                log.line("forwarding to \(target)")
                events?.emit("forward-connected", [("sink", name), ("endpoint", target)])
            case .disconnected(let target, let reason):
                log.line("forward to \(target) is down (\(reason)); retrying, dropping until it is back")
                events?.emit("forward-disconnected", [("sink", name), ("endpoint", target), ("reason", reason)])
            case .retrying(let target, let attempt, let reason, let nextIn):
                log.line(ConsumeReport.forwardRetrying(target, attempt: attempt, reason: reason, nextIn: nextIn))
            case .refused(let target, let reason):
                events?.emit("forward-refused", [("sink", name), ("endpoint", target), ("reason", reason)])
                onRefused("forward to \(target): \(reason)")
            case .closed(let target, let summary):
                log.line("forward to \(target) closed: \(summary)")
                events?.emit("forward-closed", [("sink", name), ("endpoint", target), ("summary", summary)])
            }
        }
    }
}
