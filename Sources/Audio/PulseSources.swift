import CMedia

/// What a PulseAudio server has to record from: its sources by name, which of them are a
/// sink's monitor, and its default source. Asked once at start (libpulse's introspection,
/// which pa_simple lacks): to tell a monitor from a capture device whatever its name (`mic`
/// is a monitor on a machine without a microphone), and to name the sources there are when
/// `--audio pulse:NAME` names none of them.
struct PulseSources: Sendable {
    var defaultSource: String?
    var sources: [(name: String, isMonitor: Bool)] = []

    /// Asks `server` (nil: libpulse's choice); the error is PulseAudio's.
    static func list(server: String?) -> Result<PulseSources, PulseFailure> {
        var text = [CChar](repeating: 0, count: 16_384)
        var error: Int32 = 0
        let status = withServer(server) { CMedia_pulse_sources($0, &text, Int32(text.count), &error) }
        guard status == 0 else { return .failure(PulseFailure(code: error)) }
        return .success(PulseSources(parsing: String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)))
    }

    /// Reads `CMedia_pulse_sources`' lines: `d NAME`, `m NAME`, `s NAME`.
    init(parsing text: String) {
        for line in text.split(separator: "\n") where line.count > 2 {
            let name = String(line.dropFirst(2))
            switch line.first {
            case "d": defaultSource = name
            case "m": sources.append((name, true))
            case "s": sources.append((name, false))
            default: break
            }
        }
    }

    init() {}

    /// Whether `device` (nil: the default source; `@DEFAULT_MONITOR@`) is a sink's monitor;
    /// nil when the server has no such source.
    func isMonitor(_ device: String?) -> Bool? {
        if device == "@DEFAULT_MONITOR@" { return true }
        let name = device == nil || device == "@DEFAULT_SOURCE@" ? defaultSource : device
        return sources.first { $0.name == name }?.isMonitor
    }

    /// The line for a source the server does not have: which ones it has, and the two names
    /// that need none.
    func unknownSourceText(_ device: String?) -> String {
        let known = sources.map(\.name)
        let list = known.isEmpty ? "it has none" : "it has " + known.joined(separator: ", ")
        let what = device.map { "no source named \($0)" } ?? "no default source"
        return "PulseAudio has \(what); \(list) (--audio monitor records what the machine plays, --audio mic its default source)"
    }

    private static func withServer<R>(_ server: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
        guard let server else { return body(nil) }
        return server.withCString { body($0) }
    }
}

extension PulseSources {
    /// Opens the record stream of `spec` (monitor, mic, pulse:NAME) and tells whether it is a
    /// sink's monitor; a server or source that is not there is one line of the unavailable
    /// kind, which for a source names those the server has.
    static func open(_ spec: AudioSourceSpec, server: String?, rate: Int, channels: Int) throws(AudioError) -> (stream: PulseStream, isMonitor: Bool) {
        let device = spec.pulseDevice ?? nil
        switch PulseStream.open(server: server, device: device, rate: rate, channels: channels) {
        case .success(let stream):
            if device == "@DEFAULT_MONITOR@" { return (stream, true) }
            let asked = try? list(server: server).get()
            return (stream, asked?.isMonitor(device) ?? (device?.hasSuffix(".monitor") ?? false))
        case .failure(let failure):
            if failure.noServer { throw AudioError(.unavailable, "--audio \(spec): no PulseAudio server: \(failure.text)") }
            if failure.code == Int32(PA_ERR_NOENTITY.rawValue), let known = try? list(server: server).get() {
                throw AudioError(.unavailable, "--audio \(spec): \(known.unknownSourceText(device == "@DEFAULT_MONITOR@" ? nil : device))")
            }
            throw AudioError(.unavailable, "--audio \(spec): PulseAudio: \(failure.text)")
        }
    }
}
