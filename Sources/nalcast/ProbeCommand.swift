import Clocks
import CommandOptions
import IO
#if canImport(Glibc)
import Glibc
#endif
import H264
import Media

/// `nalcast probe ADDR`: connect, wait for the first decodable picture, measure for a while,
/// report. The container health check, and a quick look at any Annex-B stream server.
enum ProbeCommand: Command {
    static let name = "probe"
    static let summary = "Connect to a stream, wait for a decodable picture, report resolution, frame rate, bitrate and join time."
    static let usage = "nalcast probe [--seconds TIME] [--timeout TIME] [--json] [--dry-run] [ADDR]"
    static let specs: [OptionSpec] = [
        OptionSpec(name: "seconds", value: "TIME", help: "measure the bitrate for this long after the first picture", defaultText: "1s"),
        OptionSpec(name: "timeout", value: "TIME", help: "give up (exit 69) when no decodable picture arrives in TIME", defaultText: "5s"),
        OptionSpec(name: "json", value: nil, help: "print one JSON object"),
        OptionSpec(name: "quiet", value: nil, help: "print nothing; the exit code says it all", short: "q"),
        OptionSpec(name: "dry-run", value: nil, help: "check the options, print the resolved configuration and exit"),
    ]
    static let notes = ["ADDR: tcp://HOST:PORT or unix:PATH (default: tcp://127.0.0.1:\(Endpoint.defaultPort), where produce listens by default)"]
    static let operand: ValueKind? = .address
    static let environmentExample = "NALCAST_TIMEOUT=2s NALCAST_JSON=1 nalcast probe unix:/run/nalcast/stream.sock"

    static func run(_ options: ParsedOptions) throws -> ExitCode {
        guard options.positionals.count <= 1 else { throw CommandError.usage("probe: expected at most one ADDR") }
        let text = options.positionals.first ?? "tcp://127.0.0.1:\(Endpoint.defaultPort)"
        let endpoint: Endpoint
        do { endpoint = try Endpoint(parsing: text) } catch { throw CommandError.usage("probe: \(error)") }
        // --seconds names its unit: a bare number is seconds there.
        let seconds = try options.duration("seconds", default: 1.0, bareUnit: 1)
        let timeout = try options.duration("timeout", default: 5.0, above: true)
        if options.has("dry-run") {
            printOut("probe\n  endpoint: \(printable(endpoint.description))\n  seconds: \(short(seconds))\n  timeout: \(short(timeout))\n"
                + "  output: \(options.has("quiet") ? "none" : options.has("json") ? "json" : "text")\n")
            return .ok
        }

        let started = MonotonicClock.seconds
        let socket = try connect(endpoint, deadline: started + timeout)
        defer { socket.close() }
        var probe = StreamProbe(codec: H264Codec())
        do {
            try probe.read(socket, seconds: seconds, deadline: started + timeout)
        } catch {
            throw CommandError.unavailable("probe \(endpoint): \(error)")
        }
        guard let first = probe.firstPicture else {
            throw CommandError.unavailable("probe \(endpoint): no decodable picture within \(short(timeout)) s\(probe.ended ? " (the stream ended)" : "")")
        }
        if options.has("quiet") { return .ok }
        printOut(report(probe, first: first, started: started, endpoint: endpoint, json: options.has("json")))
        return .ok
    }

    /// The line (or JSON object) `probe` prints.
    private static func report(_ probe: StreamProbe, first: (at: Double, unit: AccessUnit), started: Double, endpoint: Endpoint,
                               json: Bool) -> String {
        let joinMs = (first.at - started) * 1000
        let window = MonotonicClock.seconds - first.at
        let fps = probe.frameRate
        let kbps = window > 0 ? Double(probe.bytes) * 8 / window / 1000 : 0
        if json {
            return "{\"endpoint\":\(jsonString(endpoint.description)),\"width\":\(first.unit.resolution.map { String($0.width) } ?? "null"),"
                + "\"height\":\(first.unit.resolution.map { String($0.height) } ?? "null"),\"frameRate\":\(fps.map { fixed($0, 3) } ?? "null"),"
                + "\"kbps\":\(fixed(kbps, 1)),\"joinMs\":\(fixed(joinMs, 1)),\"accessUnits\":\(probe.units),"
                + "\"timestamped\":\(probe.firstPTS != nil)}\n"
        }
        let resolution = first.unit.resolution.map(\.description) ?? "unknown"
        return "\(endpoint): \(resolution) \(fps.map { "\(short($0)) fps" } ?? "fps unknown"), "
            + "\(fixed(kbps, 0)) kbit/s over \(fixed(window, 1)) s, first picture after \(fixed(joinMs, 1)) ms\n"
    }

    /// Connects with a deadline; failures are "unavailable" (exit 69).
    static func connect(_ endpoint: Endpoint, deadline: Double) throws -> Socket {
        do {
            return try Connector.connect(to: endpoint, timeout: deadline - MonotonicClock.seconds)
        } catch {
            throw CommandError.unavailable("probe \(endpoint): \(error)")
        }
    }
}

/// What `probe` reads from a stream: the first decodable picture and when it came, then the
/// access units and bytes of the measuring window.
struct StreamProbe {
    private var parser: any AccessUnitParser

    /// Reads a stream of `codec` (raw Annex-B).
    init(codec: any VideoCodec) { parser = codec.makeParser(maxNALUnitSize: AnnexB.defaultMaxNALUnitSize) }
    private(set) var firstPicture: (at: Double, unit: AccessUnit)?
    private(set) var units = 0
    private(set) var bytes = 0
    private(set) var firstPTS: UInt64?
    private var lastPTS: UInt64?
    /// The stream ended before the window did.
    private(set) var ended = false

    /// Reads until `seconds` after the first picture, or `deadline` without one, or the end.
    mutating func read(_ socket: Socket, seconds: Double, deadline: Double) throws {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while !ended {
            let now = MonotonicClock.seconds
            let until = firstPicture.map { $0.at + seconds } ?? deadline
            if now >= until { break }
            guard try waitUntilReady(socket.fd, for: Int32(POLLIN), timeout: until - now) else { continue }
            guard let n = try buffer.withUnsafeMutableBytes({ raw throws(Errno) in try socket.read(into: raw) }) else { continue }
            var assembled: [AccessUnit] = []
            if n == 0 {
                ended = true
                parser.finish { assembled.append($0) }
            } else {
                parser.push(Array(buffer[0..<n])) { assembled.append($0) }
            }
            for unit in assembled { take(unit) }
        }
    }

    private mutating func take(_ unit: AccessUnit) {
        if firstPicture == nil {
            guard unit.canStartDecoding else { return }
            firstPicture = (MonotonicClock.seconds, unit)
        }
        units += 1
        bytes += unit.byteCount
        if let pts = unit.timestamp?.pts90k {
            if firstPTS == nil { firstPTS = pts }
            lastPTS = pts
        }
    }

    /// The stream's frame rate: its parameter sets', else from the timestamps' pace.
    var frameRate: Double? {
        if let fps = parser.frameRate { return fps }
        guard let a = firstPTS, let b = lastPTS, units > 1, b > a else { return nil }
        return Double(units - 1) * 90_000 / Double(b - a)
    }
}
