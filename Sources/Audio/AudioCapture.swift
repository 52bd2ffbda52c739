import Clocks
import CMedia
import IO
import Media
import Output
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Figures of the audio side, for the status line, events and metrics.
public struct AudioStatistics: Sendable {
    public var packets: UInt64 = 0
    public var bytes: UInt64 = 0
    /// Samples (per channel) lost: a source delivered after their place was encoded.
    public var lateSamples: UInt64 = 0
    /// Samples lost: a source ran further ahead of the encoder than the buffer (1.5 s) holds.
    public var overflowSamples: UInt64 = 0
    /// Packets' worth of sound captured before the first video frame (left out unencoded), and
    /// the encoder's priming packet: none has a place on the video's time line.
    public var packetsBeforeVideo: UInt64 = 0
    /// How long after capture samples are encoded now (grows after late deliveries).
    public var slackMs = Int(AudioCapture.slack / 1_000_000)
    /// Each source: its name, state, times it was lost, and its clock's drift against the
    /// system clock in ppm (live sources).
    public var sources: [(name: String, state: AudioSourceState, losses: Int, driftPPM: Double)] = []

    /// Samples dropped for any reason.
    public var droppedSamples: UInt64 { lateSamples + overflowSamples }
}

/// `produce --audio`: up to two sources mixed into one 48 kHz stereo track, encoded to
/// AAC-LC, each packet handed to `onPacket` with its capture time and its place on the
/// video's media time line.
///
/// Threads: one per live or file source (reads, timestamps, adds to the mix) and one audio
/// thread that, paced by the clock, takes 1024 samples once every source has had time to
/// deliver them (`slack`), adds the tone, encodes and hands the packets on. None of them
/// ever waits for video or for a consumer of the packets; video never waits for them, but for
/// their first samples at the start (`waitForSound`).
/// A source that is late or gone leaves silence; what it delivers too late is counted.
///
/// The packets' media times need the video's time line: `anchor(videoCaptureTimeNs:pts90k:)`
/// with the first encoded frame's pair. Sound captured before that frame is counted and left
/// out unencoded; the track begins at its instant.
public final class AudioCapture: Sendable {
    public static let sampleRate = 48_000
    public static let channels = 2
    /// How long after a sample's capture time the audio thread encodes it at first: time for
    /// a live source's read (20 ms), its scheduling and its latency to be behind us.
    public static let slack: UInt64 = 150_000_000
    /// Each time a source delivers too late (a loaded machine kept its thread from running),
    /// the slack grows by 50 ms, up to this: later audio, rather than more holes in it.
    public static let maxSlack: UInt64 = 1_000_000_000

    public let format: AudioFormat
    public let sourceSpecs: [AudioSourceSpec]
    let initialSlack: UInt64
    public var initialSlackMs: Int { Int(initialSlack / 1_000_000) }
    let track: TrackClock
    let mix: MixBuffer
    let hasTone: Bool
    let onPacket: @Sendable (AudioPacket) -> Void
    let onEvent: @Sendable (AudioEvent) -> Void

    private let pulseInputs: [PulseInput]
    private let soundStart: SoundStart
    private let fileInputs: [FileInput]
    private let work: Mutex<Work?>
    private let threads = Mutex<[OSThread]>([])
    /// Set first at stop, for the source threads; `encoderStopped` once they are joined.
    private let stopped = Atomic<Bool>(false)
    private let encoderStopped = Atomic<Bool>(false)
    private let encoderThread = Mutex<OSThread?>(nil)
    /// The video's time line, once its first frame is encoded.
    private let timeline = Mutex<AudioTimeline?>(nil)
    private let counters: Mutex<AudioStatistics>


    /// What the threads take when they start: the open streams and files, the encoder.
    ///
    /// @unchecked Sendable: built on the thread that makes the capture, then taken apart by
    /// `start()` (each piece moved to the one thread that uses it) and never touched again.
    private final class Work: @unchecked Sendable {
        let encoder: AACEncoder
        let pulse: [PulseStream]
        let files: [(PCMFile, PCMLayout)]

        init(encoder: AACEncoder, pulse: [PulseStream], files: [(PCMFile, PCMLayout)]) {
            self.encoder = encoder
            self.pulse = pulse
            self.files = files
        }
    }

    /// Opens everything (libraries, the encoder, each source) so that a missing server,
    /// device or file fails here with one line; `start()` then runs it.
    /// `pulseServer`: a PulseAudio server address (`unix:/run/user/1000/pulse/native`), nil
    /// for libpulse's own choice ($PULSE_SERVER, then the user's session server).
    /// `slack`: how long after capture the first packets are encoded (`AudioCapture.slack`).
    public init(sources: [AudioSourceSpec], bitrate: Int = 128_000, pulseServer: String? = nil, slack: UInt64 = AudioCapture.slack,
                onPacket: @escaping @Sendable (AudioPacket) -> Void,
                onEvent: @escaping @Sendable (AudioEvent) -> Void = { _ in }) throws(AudioError) {
        guard !sources.isEmpty, sources.count <= 2 else { throw .usage("--audio: one or two sources") }
        let loading = try AudioLibraries.load(pulse: sources.contains { $0.isPulse })
        let encoder = try AACEncoder(sampleRate: Self.sampleRate, channels: Self.channels, bitrate: bitrate)
        format = encoder.format
        sourceSpecs = sources
        initialSlack = min(slack, Self.maxSlack)
        var initial = AudioStatistics()
        initial.slackMs = Int(initialSlack / 1_000_000)
        counters = Mutex(initial)
        // Sample 0 is 100 ms before now: a live source's first read (captured a little
        // before it arrives) then lands on the track rather than before it.
        track = TrackClock(startNs: WallClock.nanoseconds - 100_000_000, rate: Self.sampleRate)
        // 1.5 s: more than the largest slack (1 s), a packet and a file source's lead (100 ms).
        // The tone alone adds nothing to the mix: one packet's worth of silence is enough
        // (562 KiB less).
        let capacity = sources.allSatisfy { $0 == .tone } ? encoder.format.samplesPerPacket : Self.sampleRate * 3 / 2
        let mix = MixBuffer(channels: Self.channels, capacity: capacity)
        self.mix = mix
        hasTone = sources.contains(.tone)
        self.onPacket = onPacket
        self.onEvent = onEvent
        let soundStart = SoundStart(sources: sources.filter(\.isPulse).count)
        self.soundStart = soundStart
        var pulse: [PulseInput] = []
        var streams: [PulseStream] = []
        var files: [FileInput] = []
        var opened: [(PCMFile, PCMLayout)] = []
        for spec in sources {
            switch spec {
            case .pulse, .monitor, .mic:
                let opened = try PulseSources.open(spec, server: pulseServer, rate: Self.sampleRate, channels: Self.channels)
                streams.append(opened.stream)
                pulse.append(PulseInput(label: spec.description, server: pulseServer, device: spec.pulseDevice ?? nil, isMonitor: opened.isMonitor,
                                        track: track, channels: Self.channels, mix: mix, start: soundStart, report: onEvent))
            case .wav(let path):
                let file = try Self.open(path, spec)
                let header = try WAVHeader.read(file, name: spec.description, stopped: { false })
                opened.append((file, header.layout))
                files.append(FileInput(label: spec.description, track: track, channels: Self.channels, mix: mix, report: onEvent))
            case .raw(let path, let layout):
                opened.append((try Self.open(path, spec), layout))
                files.append(FileInput(label: spec.description, track: track, channels: Self.channels, mix: mix, report: onEvent))
            case .tone:
                break
            }
        }
        pulseInputs = pulse
        fileInputs = files
        work = Mutex(Work(encoder: encoder, pulse: streams, files: opened))
        // Loaded, the encoder and the streams open: what loading alone touched goes back now,
        // before the video encoder's allocations, so that it does not add to the peak either.
        loading.release()
    }

    private static func open(_ path: String, _ spec: AudioSourceSpec) throws(AudioError) -> PCMFile {
        do {
            return try PCMFile(path: path)
        } catch {
            throw AudioError(error.kind, "--audio \(spec): \(error.message)")
        }
    }

    /// Starts the source threads and the audio thread.
    public func start() {
        guard let work = work.withLock({ w -> Work? in defer { w = nil }; return w }) else { return }
        let stopped: @Sendable () -> Bool = { [self] in self.stopped.load(ordering: .relaxed) }
        var started: [OSThread] = []
        let now = WallClock.nanoseconds
        for (input, stream) in zip(pulseInputs, work.pulse) {
            started.append(OSThread(name: "nalcast-pulse") { CMedia_name_thread("nalcast-pulse"); input.run(first: stream, startNs: now, stopped: stopped) })
        }
        for (input, file) in zip(fileInputs, work.files) {
            started.append(OSThread(name: "nalcast-pcm") { CMedia_name_thread("nalcast-pcm"); input.run(file: file.0, layout: file.1, stopped: stopped) })
        }
        let encoder = work.encoder
        let encoding = OSThread(name: "nalcast-audio") { [self] in
            CMedia_name_thread("nalcast-audio")
            self.encodeLoop(encoder)
        }
        threads.withLock { $0 = started }
        encoderThread.withLock { $0 = encoding }
    }

    /// How long `waitForSound` waits at most: a null sink's monitor may give nothing for its
    /// sink's buffer, up to 2 s (`SoundStart`), and a loaded machine adds to that.
    public static let soundWait: UInt64 = 3_000_000_000

    /// After `start()`: waits until every live source (PulseAudio) has its first samples on
    /// the track, at most `timeout`; returns the names of those that have none yet.
    public func waitForSound(timeout: UInt64 = AudioCapture.soundWait) -> [String] {
        soundStart.wait(timeout: timeout)
        return pulseInputs.filter { !$0.heard.load(ordering: .acquiring) }.map(\.label)
    }

    /// Stops every thread and joins them; the encoder's last packets are handed on. The
    /// sources first: what they read up to now is in the mix before the audio thread
    /// encodes its last packets (stopping both at once left the last read of a live source,
    /// up to 20 ms, arriving after its place was encoded).
    public func stop() {
        stopped.store(true, ordering: .relaxed)
        let sources = threads.withLock { t -> [OSThread] in defer { t = [] }; return t }
        for thread in sources { thread.join() }
        encoderStopped.store(true, ordering: .relaxed)
        encoderThread.withLock { t -> OSThread? in defer { t = nil }; return t }?.join()
    }

    /// The video's time line, from its first frame's capture time and pts: the audio thread
    /// encodes from that frame's instant on.
    public func anchor(_ timeline: AudioTimeline) {
        self.timeline.withLock { t in
            if t == nil { t = timeline }
        }
    }

    public func anchor(videoCaptureTimeNs: UInt64, pts90k: UInt64) {
        anchor(AudioTimeline(videoCaptureTimeNs: videoCaptureTimeNs, pts90k: pts90k))
    }

    public func statistics() -> AudioStatistics {
        var s = counters.withLock { $0 }
        let counts = mix.counts
        s.lateSamples = counts.late
        s.overflowSamples = counts.overflow
        s.sources = sourceSpecs.map { spec in
            if let p = pulseInputs.first(where: { $0.label == spec.description }) {
                return (spec.description, p.state.withLock { $0 }, p.losses.load(ordering: .relaxed), p.drift.withLock { $0 })
            }
            if let f = fileInputs.first(where: { $0.label == spec.description }) {
                return (spec.description, f.state.withLock { $0 }, 0, 0)
            }
            return (spec.description, .capturing, 0, 0)
        }
        return s
    }

    /// The audio thread: one packet's worth at a time, once its last sample is `slack` old.
    ///
    /// Until the video's first frame is known, what the sources delivered has no place on its
    /// time line and is left out unencoded; then the encoder starts at that frame's capture
    /// instant, so that the track's first packet begins with the first picture (a packet
    /// grid laid before it put the start up to a packet, 21 ms, after the picture).
    private func encodeLoop(_ encoder: AACEncoder) {
        let samples = format.samplesPerPacket
        var frame = [Float](repeating: 0, count: samples * Self.channels)
        var next: Int64 = 0
        var encoding = false
        var slack = initialSlack
        var lateSeen: UInt64 = 0
        let stop = { [self] in self.encoderStopped.load(ordering: .relaxed) }
        func encodeNext() throws(AudioError) {
            if !encoding {
                guard let anchor = timeline.withLock({ $0 }) else {
                    next = mix.discard(samples) + Int64(samples)
                    counters.withLock { $0.packetsBeforeVideo += 1 }
                    return
                }
                // The first sample captured at or after the first picture's instant.
                let first = Int64(track.position(atRealtime: anchor.captureTimeNs).rounded(.up))
                if first > next {
                    next = mix.discard(Int(first - next)) + (first - next)
                    counters.withLock { $0.packetsBeforeVideo += 1 }
                }
                encoding = true
                // Its time may not have come yet.
                return
            }
            let position = mix.take(samples, into: &frame)
            next = position + Int64(samples)
            if hasTone { ToneSignal.add(into: &frame, channels: Self.channels, track: track, from: position) }
            for i in frame.indices { frame[i] = max(-1, min(1, frame[i])) }
            try frame.withUnsafeBufferPointer { buffer throws(AudioError) in
                try encoder.encode(interleaved: buffer, position: position) { data, pts in deliver(data, pts: pts) }
            }
        }
        do {
            while true {
                let late = mix.counts.late
                if late > lateSeen {
                    lateSeen = late
                    slack = min(Self.maxSlack, slack + 50_000_000)
                    counters.withLock { $0.slackMs = Int(slack / 1_000_000) }
                }
                let due = track.realtime(at: next + Int64(samples)) + slack
                guard sleep(untilRealtime: due, unless: stop) else { break }
                try encodeNext()
            }
            // Stopping: what was captured up to now is encoded too, not left in the buffer.
            let end = Int64(track.position(atRealtime: WallClock.nanoseconds))
            while encoding && next + Int64(samples) <= end { try encodeNext() }
            if encoding { try encoder.encode(interleaved: nil, position: next) { data, pts in deliver(data, pts: pts) } }
        } catch {
            onEvent(.failed(reason: error.message))
        }
    }

    private func deliver(_ data: UnsafeBufferPointer<UInt8>, pts: Int64) {
        counters.withLock {
            $0.packets += 1
            $0.bytes += UInt64(data.count)
        }
        let captureTimeNs = track.realtime(at: pts)
        // Encoding starts once the anchor is known.
        guard let anchor = timeline.withLock({ $0 }) else { return }
        // The encoder's priming packet comes before the first sample given to it.
        if captureTimeNs < anchor.captureTimeNs {
            counters.withLock { $0.packetsBeforeVideo += 1 }
            return
        }
        onPacket(AudioPacket(data: Array(data), mediaTime: anchor.mediaTime(forCaptureTimeNs: captureTimeNs), captureTimeNs: captureTimeNs))
    }
}

/// The `tone` source: 100 ms of a 1 kHz sine at -6 dBFS starting at each whole second of
/// CLOCK_REALTIME, silence between. Computed from each sample's capture time, so the beep
/// starts on the same instant as the test pattern's white flash (the frame captured at each
/// whole second) whatever the track's start.
enum ToneSignal {
    static let amplitude: Float = 0.501187  // -6 dBFS
    static let frequency = 1000.0
    static let lengthNs: UInt64 = 100_000_000

    static func add(into frame: inout [Float], channels: Int, track: TrackClock, from position: Int64) {
        let count = frame.count / channels
        for i in 0..<count {
            let ns = track.realtime(at: position + Int64(i))
            let phase = ns % 1_000_000_000
            guard phase < lengthNs else { continue }
            let value = amplitude * Float(sin(2 * Double.pi * frequency * Double(phase) / 1e9))
            for c in 0..<channels { frame[i * channels + c] += value }
        }
    }
}
