import Clocks
import Audio
import CommandOptions
import IO
import Media
import Output
import Synchronization

/// `produce --audio`: the options, the plan, and the wiring of an `AudioCapture` beside the
/// video pipeline (kept here so that ProduceCommand and ProduceSession carry one line each).
struct AudioPlan {
    var sources: [AudioSourceSpec]
    var bitrate: Int
    var rawFormat: PCMLayout

    static let specs: [OptionSpec] = [
        OptionSpec(name: "audio", value: "SRC", help: "also capture sound: monitor, mic, pulse:NAME, wav:PATH|-, raw:PATH|-, tone (see below); twice mixes two into one track", repeatable: true, values: AudioSourceSpec.forms),
        OptionSpec(name: "audio-bitrate", value: "RATE", help: "AAC bits per second (32k to 512k)", defaultText: "128k"),
        OptionSpec(name: "audio-format", value: "FMT:RATE:CH", help: "the layout of --audio raw: input: u8, s16le, s24le, s32le or f32le, rate, channels", defaultText: "s16le:48000:2"),
    ]

    static let notes = [
        "audio sources (--audio, up to two, mixed into one 48 kHz stereo AAC-LC track):",
        "  monitor            what the machine plays (the default sink's monitor, PulseAudio or PipeWire)",
        "  mic                the default source",
        "  pulse:NAME         a PulseAudio source by name (pactl list short sources)",
        "  wav:PATH, wav:-    a PCM WAV file or stdin, any rate and channels",
        "  raw:PATH, raw:-    headerless PCM laid out as --audio-format says",
        "  tone               a 100 ms 1 kHz beep at each whole second (A/V sync checks)",
        "  The first picture waits for each PulseAudio source's first samples (up to 3 s).",
        "  No sound server or no such device: exit 69; a missing file: exit 66.",
    ]

    /// nil without `--audio`. `videoReadsStdin`: the video source is `y4m:-` or `raw:-`.
    static func parse(_ o: ParsedOptions, videoReadsStdin: Bool) throws -> AudioPlan? {
        let texts = o.strings("audio")
        let rawFormat = try o.value("audio-format", default: PCMLayout(), expected: "expected FORMAT:RATE:CHANNELS, e.g. s16le:48000:2 (u8, s16le, s24le, s32le, f32le)") {
            PCMLayout(parsing: $0)
        }
        let bitrate = try o.value("audio-bitrate", default: 128_000, expected: "expected bits per second from 32k to 512k, e.g. 128k") {
            ValueFormat.quantity($0).flatMap { (32_000...512_000).contains($0) ? $0 : nil }
        }
        guard !texts.isEmpty else {
            for name in ["audio-bitrate", "audio-format"] where o.sources[name] != nil {
                throw CommandError.usage("--\(name) needs --audio")
            }
            return nil
        }
        guard texts.count <= 2 else { throw CommandError.usage("--audio: at most two sources (mixed into one track)") }
        let sources = try texts.map { text -> AudioSourceSpec in
            switch AudioSourceSpec.parse(text, raw: rawFormat) {
            case .success(let spec): return spec
            case .failure(let error): throw CommandError.usage(error.message)
            }
        }
        if sources.count == 2, sources[0] == sources[1] { throw CommandError.usage("--audio \(texts[0]) is given twice") }
        let readers = sources.filter { if case .wav(path: "-") = $0 { return true }; if case .raw(path: "-", _) = $0 { return true }; return false }
        if readers.count + (videoReadsStdin ? 1 : 0) > 1 {
            throw CommandError.usage("--audio \(readers[0]): stdin is read by \(readers.count > 1 ? "another --audio" : "--source") already")
        }
        return AudioPlan(sources: sources, bitrate: bitrate, rawFormat: rawFormat)
    }

    var lines: [String] {
        let described = sources.map { spec in
            if case .raw(_, let layout) = spec { return "\(spec) (\(layout))" }
            return spec.description
        }
        return ["audio: " + described.joined(separator: " + ") + ", AAC-LC 48000 Hz stereo \(bitrate / 1000)k"]
    }
}

/// Exit codes for audio: no server or device 69, a missing file 66, not a WAV 65.
func commandError(_ error: AudioError) -> CommandError {
    switch error.kind {
    case .usage: return .usage(error.message)
    case .unavailable: return .unavailable(error.message)
    case .noInput: return .noInput(error.message)
    case .badInput: return CommandError(code: .dataError, message: error.message)
    case .software: return CommandError(code: .software, message: error.message)
    }
}

/// produce's audio side: the capture, where its packets go, its events as lines and JSON.
final class ProduceAudio: Sendable {
    let capture: AudioCapture
    let delivery: AudioDelivery
    private let anchored = Atomic<Bool>(false)
    private let log: Log

    /// Opens the sources and the encoder (a missing server fails here, before any thread).
    init(plan: AudioPlan, log: Log, events: EventLog?) throws {
        let delivery = AudioDelivery()
        self.delivery = delivery
        self.log = log
        do {
            capture = try AudioCapture(sources: plan.sources, bitrate: plan.bitrate, onPacket: { delivery.deliver($0) }, onEvent: { event in
                let quietly: Bool = if case .connected = event { true } else { false }
                log.line(event.description, force: !quietly)
                var fields: [(String, any Sendable)] = []
                switch event {
                case .connected(let s), .ended(let s): fields = [("source", s)]
                case .lost(let s, let reason): fields = [("source", s), ("reason", reason)]
                case .resynced(let s, let ms): fields = [("source", s), ("milliseconds", ms)]
                case .failed(let reason): fields = [("reason", reason)]
                }
                events?.emit(event.name, fields)
            })
        } catch {
            throw commandError(error)
        }
    }

    /// Starts the sources and waits, before the first picture, until each live source's
    /// first samples are on the track (at most `AudioCapture.soundWait`): what plays when the
    /// capture starts is then heard from the first picture on. A wait that shows is said.
    func start() {
        capture.start()
        let began = MonotonicClock.seconds
        let missing = capture.waitForSound()
        let waited = MonotonicClock.seconds - began
        for name in missing {
            log.line("audio \(name): no sound from the server after \(fixed(waited, 2)) s; capturing without waiting for it", force: true)
        }
        if missing.isEmpty && waited >= 0.25 {
            log.line("audio: the first samples came after \(fixed(waited, 2)) s (the sink's buffer); the pictures start with them")
        }
    }

    /// The first encoded video frame fixes where audio sits on the media time line.
    func videoFrame(captureTimeNs: UInt64, pts90k: UInt64) {
        guard !anchored.load(ordering: .relaxed) else { return }
        anchored.store(true, ordering: .relaxed)
        capture.anchor(videoCaptureTimeNs: captureTimeNs, pts90k: pts90k)
    }

    /// ` audio=packets/dropped-samples` for the status line, and the source state when not capturing.
    var statusText: String {
        let s = capture.statistics()
        var text = " audio=\(s.packets)"
        if s.droppedSamples > 0 { text += "/\(s.droppedSamples)dropped" }
        for source in s.sources where source.state != .capturing { text += " \(source.name)=\(source.state.rawValue)" }
        return text
    }

    /// The closing line.
    var summary: String {
        let s = capture.statistics()
        var text = "audio: \(s.packets) packets (\(s.bytes / 1024) KiB)"
        text += ", \(s.droppedSamples) samples dropped (late \(s.lateSamples), overflow \(s.overflowSamples))"
        if s.slackMs > Int(capture.initialSlackMs) { text += ", encoded \(s.slackMs) ms after capture (late sources)" }
        if s.packetsBeforeVideo > 0 { text += ", \(s.packetsBeforeVideo) packets before the first video frame left out" }
        if delivery.unsentCount > 0 { text += ", \(delivery.unsentCount) packets not sent: no output carries audio" }
        for source in s.sources where source.losses > 0 { text += "; \(source.name) lost \(source.losses) times" }
        return text
    }
}
