import CommandOptions
import Consumer
import Muxing
import IO
import Media

#if canImport(Glibc)
import Glibc
#endif

/// `consume --from`: which reader takes the input.
///
/// - `tcp://HOST:PORT`, `unix:PATH`: nalcast's own client (`StreamClient`) and scanner (a
///   `tcp://` whose first bytes are MPEG-TS goes to the demuxer instead, as `ts:tcp://`:
///   `StreamIntake.onTransportStream`, `ConsumeSession.transportStreamHandOver`);
/// - a raw Annex-B file or `-`: `FileReader` and the same scanner (the fast path);
/// - `rtsp://`: nalcast's own RTSP client (`RTSPReader`): an access unit goes on at its RTP
///   marker bit, and no FFmpeg library is loaded;
/// - `rtsps://`, `srt://`, `rtmp://`, `rtmps://`, `udp://`, `http://`, `https://`:
///   libavformat's protocols and demuxers (`DemuxReader`), live: reopened when lost;
/// - `whip-listen://HOST:PORT/PATH`: a WHIP endpoint WebRTC publishers send to
///   (`WHIPIngest`, on the loop);
/// - `ts:tcp://HOST:PORT`, `ts:unix:PATH`: MPEG-TS over a socket (`produce --listen ts:…`, or any MPEG-TS
///   sender), H.264 and its AAC audio: the same demuxer, live;
/// - a file whose first bytes say MP4, MPEG-TS, Matroska or FLV (`InputSniffer`): the same
///   demuxer, read to its end. Y4M, AVI and the rest are still refused with their hint.
enum InputChoice {
    /// The URL schemes `--from` hands to libavformat.
    static let schemes = ["rtsp", "rtsps", "srt", "rtmp", "rtmps", "udp", "http", "https"]

    /// The containers a file may be in to go through the demuxer.
    static let demuxedFormats: Set<InputSniffer.Format> = [.mp4, .mpegTS, .matroska, .flv]

    /// `--rtsp-transport`: RTP interleaved in the RTSP connection (default: no loss, passes
    /// NAT and firewalls) or RTP over UDP.
    static let rtspTransports = ["tcp", "udp"]

    /// The `Input` for `--from text`. Throws a usage error (64) for a scheme nalcast does not
    /// take or this libavformat lacks, and 69 when a URL or container needs the FFmpeg
    /// libraries and they are not there.
    static func parse(_ text: String, rtspTransport: String) throws -> ConsumeCommand.Input {
        if text.lowercased().hasPrefix("ts:") { return try transportStream(text) }
        guard let colon = text.firstIndex(of: ":"), text[colon...].hasPrefix("://") else {
            if text.hasPrefix("unix:") { return .network(try ConsumeCommand.endpoint(text, option: "from")) }
            return try file(text)
        }
        let scheme = text[..<colon].lowercased()
        if scheme == "tcp" { return .network(try ConsumeCommand.endpoint(text, option: "from")) }
        if scheme == "whip-listen" { return try whipListen(text) }
        let shown = PushTarget.masked(text)
        guard schemes.contains(scheme) else {
            throw CommandError.usage("consume: --from \(shown): expected tcp://HOST:PORT, unix:PATH, \(schemes.map { $0 + "://" }.joined(separator: ", ")), whip-listen://, a file or -")
        }
        let rest = text[text.index(colon, offsetBy: 3)...]
        if rest.isEmpty || rest.hasPrefix("/") && scheme != "udp" {
            throw CommandError.usage("consume: --from \(shown): no host")
        }
        if scheme == "rtsp" {
            // nalcast's own client: no FFmpeg library is needed, or loaded.
            return .rtsp(RTSPReader.Source(url: text, shown: shown, transport: rtspTransport == "udp" ? .udp : .tcp))
        }
        if let problem = FFmpegLibraries.problem {
            throw CommandError.unavailable("consume: --from \(shown): \(problem)")
        }
        guard Demuxer.supports(scheme: scheme) else {
            throw CommandError.usage("consume: --from \(shown): this libavformat (\(FFmpegLibraries.package)) cannot read \(scheme):// (no such protocol in it)")
        }
        return .demux(DemuxReader.Source(url: text, shown: shown, live: true, options: liveOptions(scheme: scheme, rtspTransport: rtspTransport),
                                         picturesMaySpanPackets: scheme.hasPrefix("rtsp"), waitsForSender: listens(text),
                                         endsWithItsInput: scheme.hasPrefix("http")))
    }

    /// `whip-listen://HOST:PORT/PATH`: a WHIP endpoint for publishers (`WHIPIngest`); the
    /// path defaults to `/whip`.
    static func whipListen(_ text: String) throws -> ConsumeCommand.Input {
        let rest = text.dropFirst("whip-listen://".count)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let path = rest[slash...].isEmpty ? "/whip" : String(rest[slash...])
        let expected = "expected whip-listen://HOST:PORT/PATH (a WHIP endpoint publishers POST their offer to)"
        guard path.count > 1, !path.hasSuffix("/"), path.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != "?" && $0 != "#" }) else {
            throw CommandError.usage("consume: --from \(text): the path must be one like /whip (no query, not ending in /); \(expected)")
        }
        let address = rest[..<slash]
        guard let colon = address.lastIndex(of: ":"), UInt16(address[address.index(after: colon)...]) != nil,
              let endpoint = try? Endpoint(parsing: "tcp://" + address, portRequired: true) else {
            throw CommandError.usage("consume: --from \(text): no host and port; \(expected)")
        }
        return .whip(endpoint: endpoint, path: path)
    }

    /// `ts:tcp://HOST:PORT` or `ts:unix:PATH` (the forms `produce --listen` serves MPEG-TS
    /// on): an MPEG transport stream over a stream socket, read by libavformat (which
    /// connects itself), reopened when lost like every live URL.
    static func transportStream(_ text: String) throws -> ConsumeCommand.Input {
        let rest = String(text.dropFirst(3))
        let endpoint: Endpoint
        do {
            endpoint = try ConsumeCommand.endpoint(rest, option: "from")
        } catch {
            throw CommandError.usage("consume: --from \(text): expected ts:tcp://HOST:PORT or ts:unix:PATH (MPEG-TS over a socket)")
        }
        guard rest.lowercased().hasPrefix("tcp://") || rest.hasPrefix("unix:") else {
            throw CommandError.usage("consume: --from \(text): expected ts:tcp://HOST:PORT or ts:unix:PATH (MPEG-TS over a socket)")
        }
        if let problem = FFmpegLibraries.problem {
            throw CommandError.unavailable("consume: --from \(text): \(problem)")
        }
        let scheme = rest.hasPrefix("unix:") ? "unix" : "tcp"
        guard Demuxer.supports(scheme: scheme) else {
            throw CommandError.usage("consume: --from \(text): this libavformat (\(FFmpegLibraries.package)) cannot read \(scheme): (no such protocol in it)")
        }
        return .demux(transportStreamSource(endpoint))
    }

    /// What libavformat opens for MPEG-TS from `endpoint` (its `unix:` protocol takes the path
    /// after the colon).
    static func transportStreamSource(_ endpoint: Endpoint) -> DemuxReader.Source {
        let url: String
        switch endpoint {
        case .tcp: url = endpoint.description
        case .unix(let path): url = "unix:" + path
        }
        return DemuxReader.Source(url: url, shown: "ts:\(endpoint)", live: true, options: liveOptions(scheme: "tcp", rtspTransport: "tcp"))
    }

    /// True when the URL's query makes libavformat listen for its sender rather than call
    /// out: `mode=listener` (SRT), `listen=1` or a bare `listen` (RTMP, HTTP, TCP).
    static func listens(_ url: String) -> Bool {
        guard let q = url.firstIndex(of: "?") else { return false }
        return url[url.index(after: q)...].split(separator: "&").contains { field in
            let f = field.lowercased()
            return f == "mode=listener" || f == "listen" || f == "listen=1" || f == "listen=2"
        }
    }

    /// What libavformat is told for a live URL, by scheme. Probing is kept short (200 ms of
    /// stream, 500 kB): nalcast needs no more than the stream's existence and its codec
    /// before the first packet, not FFmpeg's default 5 s of stream; the parameter sets come
    /// from the SDP or the FLV sequence header, else in-band before the first IDR, which the
    /// intake waits for anyway. Measured on an RTSP camera stand-in (GStreamer, loopback):
    /// 1.0 s to open with 1 s of analysis, 0.4 s with 200 ms.
    static func liveOptions(scheme: String, rtspTransport: String) -> [DemuxReader.Source.Option] {
        var options = [DemuxReader.Source.Option("probesize", "500000"), .init("analyzeduration", "200000")]
        switch scheme {
        case "rtsp", "rtsps": options.append(.init("rtsp_transport", rtspTransport))
        // A burst larger than the socket buffer is counted by FFmpeg and read on, not fatal.
        case "udp": options += [.init("overrun_nonfatal", "1"), .init("fifo_size", "278876")]
        // nginx-rtmp, MediaMTX: a live stream, not a recording to seek in.
        case "rtmp", "rtmps": options.append(.init("rtmp_live", "live"))
        default: break
        }
        return options
    }

    /// A path: Annex-B stays on nalcast's scanner; MP4, MPEG-TS, Matroska and FLV go to the
    /// demuxer. Anything that cannot be opened or read here is left to `FileReader`, which
    /// says why (66) when the run opens it.
    static func file(_ path: String) throws -> ConsumeCommand.Input {
        guard path != "-" else { return .file(path) }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .file(path) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return .file(path) }
        var head = [UInt8](repeating: 0, count: InputSniffer.window)
        let got = head.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard got >= 0, case .notAnnexB(let format) = InputSniffer.identify(head.prefix(got), atEnd: got < head.count),
              demuxedFormats.contains(format) else { return .file(path) }
        if let problem = FFmpegLibraries.problem {
            throw CommandError.unavailable("consume: --from \(path) is \(format.name): \(problem)")
        }
        // "file:" keeps a path with a colon in it from being taken for a protocol.
        return .demux(DemuxReader.Source(url: "file:" + path, shown: path, live: false, options: []))
    }
}
