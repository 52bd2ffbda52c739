/// One `--audio SOURCE` of `produce`, as parsed from the command line.
public enum AudioSourceSpec: Sendable, Hashable, CustomStringConvertible {
    /// A PulseAudio source by name (`pulse:NAME`; PipeWire's pulse server works the same).
    case pulse(String)
    /// What the machine plays: the default sink's monitor (`@DEFAULT_MONITOR@`).
    case monitor
    /// The default source, usually a microphone.
    case mic
    /// PCM WAV from a file or stdin (`-`), any rate and channel count.
    case wav(path: String)
    /// Headerless PCM from a file or stdin (`-`), in the given layout.
    case raw(path: String, format: PCMLayout)
    /// The generated test signal: a 100 ms 1 kHz beep at -6 dBFS at each whole second of
    /// CLOCK_REALTIME, silence between.
    case tone

    /// The PulseAudio device name, or nil for a source that is not PulseAudio.
    public var pulseDevice: String?? {
        switch self {
        case .pulse(let name): return .some(name)
        case .monitor: return .some("@DEFAULT_MONITOR@")
        case .mic: return .some(nil)  // the server's default source
        default: return nil
        }
    }

    public var isPulse: Bool { pulseDevice != nil }

    public var description: String {
        switch self {
        case .pulse(let name): return "pulse:\(name)"
        case .monitor: return "monitor"
        case .mic: return "mic"
        case .wav(let path): return "wav:\(path)"
        case .raw(let path, _): return "raw:\(path)"
        case .tone: return "tone"
        }
    }

    /// The forms `--audio` takes, as `--help` and the completions name them.
    public static let forms = ["monitor", "mic", "pulse:NAME", "wav:PATH", "raw:PATH", "tone"]

    /// Parses `pulse:NAME`, `monitor`, `mic`, `wav:PATH|-`, `raw:PATH|-` (laid out as `raw`
    /// says) or `tone`; a usage error naming the forms when the text is none of them.
    public static func parse(_ text: String, raw: PCMLayout) -> Result<AudioSourceSpec, AudioError> {
        func path(_ prefix: String) -> Result<String, AudioError> {
            let rest = String(text.dropFirst(prefix.count))
            return rest.isEmpty ? .failure(.usage("--audio \(text): needs a path (- for stdin)")) : .success(rest)
        }
        switch text {
        case "monitor": return .success(.monitor)
        case "mic": return .success(.mic)
        case "tone": return .success(.tone)
        case _ where text.hasPrefix("pulse:"):
            let name = String(text.dropFirst(6))
            return name.isEmpty ? .failure(.usage("--audio pulse: needs a source name (pactl list short sources)")) : .success(.pulse(name))
        case _ where text.hasPrefix("wav:"): return path("wav:").map { .wav(path: $0) }
        case _ where text.hasPrefix("raw:"): return path("raw:").map { .raw(path: $0, format: raw) }
        default:
            return .failure(.usage("--audio \(text): expected monitor, mic, pulse:NAME, wav:PATH, raw:PATH or tone"))
        }
    }
}

/// The layout of headerless PCM (`--audio-format FORMAT:RATE:CHANNELS`, e.g. `s16le:48000:2`).
public struct PCMLayout: Sendable, Hashable, CustomStringConvertible {
    public enum Sample: String, Sendable, Hashable, CaseIterable {
        case u8, s16le, s24le, s32le, f32le

        public var bytes: Int {
            switch self {
            case .u8: return 1
            case .s16le: return 2
            case .s24le: return 3
            case .s32le, .f32le: return 4
            }
        }
    }

    public var sample: Sample
    public var rate: Int
    public var channels: Int

    public init(sample: Sample = .s16le, rate: Int = 48_000, channels: Int = 2) {
        self.sample = sample
        self.rate = rate
        self.channels = channels
    }

    public var frameBytes: Int { sample.bytes * channels }

    public var description: String { "\(sample.rawValue):\(rate):\(channels)" }

    /// `s16le:48000:2`; the rate and channels may be left out (48000, 2).
    public init?(parsing text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard (1...3).contains(parts.count), let sample = Sample(rawValue: parts[0]) else { return nil }
        let rate = parts.count > 1 ? Int(parts[1]) : 48_000
        let channels = parts.count > 2 ? Int(parts[2]) : 2
        guard let rate, let channels, (8_000...384_000).contains(rate), (1...8).contains(channels) else { return nil }
        self.init(sample: sample, rate: rate, channels: channels)
    }
}

/// Why audio could not start, with the kind of failure the command maps to an exit code.
public struct AudioError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable {
        /// A bad option value.
        case usage
        /// No sound server, no such device, or the libraries are missing.
        case unavailable
        /// A file that does not exist or cannot be read.
        case noInput
        /// A file that is not what it claims (not a WAV, an unsupported encoding).
        case badInput
        /// The encoder refused its settings.
        case software
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    static func usage(_ message: String) -> AudioError { AudioError(.usage, message) }

    public var description: String { message }
}
