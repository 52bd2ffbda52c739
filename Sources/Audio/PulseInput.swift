import Clocks
import CMedia
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One record stream from PulseAudio (pa_simple), owned by one thread at a time.
///
/// @unchecked Sendable: the stream is opened on the thread that starts capture (to fail
/// early with a clear line) and then handed to the source's thread, which alone uses and
/// frees it; never two threads at once.
final class PulseStream: @unchecked Sendable {
    let handle: OpaquePointer

    private init(handle: OpaquePointer) { self.handle = handle }

    deinit { CMedia_pa_simple_free(handle) }

    /// What one read takes: 20 ms (50 reads a second; 10 ms reads cost the reading thread
    /// and libpulse's own twice the wake-ups for no better timing, which comes from the
    /// latency or the arrival of each read, not from its length).
    static func readFrames(rate: Int) -> Int { rate / 50 }

    /// Opens `device` (nil: the default source) as float32 stereo at `rate`, `readFrames` per
    /// read; the error is pa_strerror's text.
    static func open(server: String?, device: String?, rate: Int, channels: Int) -> Result<PulseStream, PulseFailure> {
        var error: Int32 = 0
        let fragment = UInt32(readFrames(rate: rate) * channels * 4)
        let handle = withOptionalCString(server) { server in
            withOptionalCString(device) { device in
                CMedia_record(server, device, Int32(rate), Int32(channels), fragment, &error)
            }
        }
        guard let handle else { return .failure(PulseFailure(code: error)) }
        return .success(PulseStream(handle: handle))
    }
}

private func withOptionalCString<R>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}

/// A PulseAudio error code and its text.
struct PulseFailure: Error {
    let code: Int32
    var text: String { String(cString: CMedia_pa_strerror(code)) }
    /// The server is not there (as opposed to a device it does not have).
    var noServer: Bool { code == Int32(PA_ERR_CONNECTIONREFUSED.rawValue) || code == Int32(PA_ERR_INVALIDSERVER.rawValue) }
}

/// A PulseAudio source (or PipeWire's pulse server): its thread reads 20 ms at a time,
/// timestamps each read from the server's latency, corrects the card's clock drift and adds
/// the samples to the track. A server that goes away is reported and reconnected with
/// backoff (0.25 s doubling to 4 s); the track holds silence meanwhile and the samples that
/// follow go where their capture time says, so later timestamps stay right.
final class PulseInput: Sendable {
    let label: String
    let server: String?
    let device: String?
    let track: TrackClock
    let channels: Int
    let mix: MixBuffer
    let report: @Sendable (AudioEvent) -> Void
    let state = Mutex<AudioSourceState>(.starting)
    let drift = Mutex<Double>(0)
    let losses = Atomic<Int>(0)
    /// A sink's monitor (`monitor`, `pulse:NAME.monitor`, and `mic` where the default source
    /// is one: `PulseSources`): see `capture` for its latency.
    let isMonitor: Bool
    /// Set when the first samples are on the track; `start` hears of it too.
    let heard = Atomic<Bool>(false)
    let start: SoundStart

    init(label: String, server: String?, device: String?, isMonitor: Bool, track: TrackClock, channels: Int, mix: MixBuffer,
         start: SoundStart, report: @escaping @Sendable (AudioEvent) -> Void) {
        self.label = label
        self.start = start
        self.server = server
        self.device = device
        self.isMonitor = isMonitor
        self.track = track
        self.channels = channels
        self.mix = mix
        self.report = report
    }

    /// Runs until `stopped`, starting with `first` (already open); samples captured before
    /// `startNs` (CLOCK_REALTIME) are left out.
    func run(first: PulseStream, startNs: UInt64, stopped: () -> Bool) {
        var stream: PulseStream? = first
        var backoff: UInt64 = 250_000_000
        while !stopped() {
            if stream == nil {
                switch PulseStream.open(server: server, device: device, rate: track.rate, channels: channels) {
                case .success(let s):
                    stream = s
                    backoff = 250_000_000
                case .failure:
                    _ = sleep(untilRealtime: WallClock.nanoseconds + backoff, unless: stopped)
                    backoff = min(backoff * 2, 4_000_000_000)
                    continue
                }
            }
            guard let open = stream else { continue }
            state.withLock { $0 = .capturing }
            report(.connected(source: label))
            let reason = capture(open, startNs: startNs, stopped: stopped)
            stream = nil
            if let reason {
                state.withLock { $0 = .lost }
                losses.add(1, ordering: .relaxed)
                report(.lost(source: label, reason: reason))
            }
        }
    }

    /// Reads until the stream fails (its reason) or `stopped` (nil).
    private func capture(_ stream: PulseStream, startNs: UInt64, stopped: () -> Bool) -> String? {
        let startPosition = track.position(atRealtime: startNs)
        let frames = PulseStream.readFrames(rate: track.rate)
        var buffer = [Float](repeating: 0, count: frames * channels)
        let resampler: Resampler
        do {
            resampler = try Resampler(input: .f32, rate: track.rate, channels: channels, outRate: track.rate, outChannels: channels)
        } catch {
            return error.message
        }
        var corrector = DriftCorrector(rate: track.rate)
        var backlog: [Float] = []
        let maxBacklog = track.rate * 2 * channels  // 2 s
        var position: Int64?
        var error: Int32 = 0
        // The flush drops what the server recorded since the stream was opened (before the
        // video started, to fail early), but not what is already on its way to us: that comes
        // as a burst, whose part from before `startNs` is left out below.
        _ = CMedia_pa_simple_flush(stream.handle, &error)
        while !stopped() {
            let asked = WallClock.nanoseconds
            let ok = buffer.withUnsafeMutableBytes { CMedia_pa_simple_read(stream.handle, $0.baseAddress, $0.count, &error) }
            guard ok >= 0 else { return PulseFailure(code: error).text }
            let now = WallClock.nanoseconds
            let reported = CMedia_pa_simple_get_latency(stream.handle, &error)
            let latencyUs = reported == UInt64.max ? 0 : reported
            let measuredEnd = readEnd(asked: asked, now: now, latencyUs: latencyUs)
            if position == nil {
                guard let end = measuredEnd else {
                    // A monitor's reads before the first that waits (what queued while the
                    // capture started) wait for it: they end where it begins.
                    backlog.append(contentsOf: buffer)
                    if backlog.count > maxBacklog { backlog.removeFirst(backlog.count - maxBacklog) }
                    continue
                }
                guard var first = firstPosition(end: end, startPosition: startPosition, frames: frames, backlog: &backlog) else { continue }
                if !heard.exchange(true, ordering: .acquiringAndReleasing) { start.arrived() }
                backlog.withUnsafeBytes { add($0, frames: backlog.count / channels, resampler: resampler, at: &first) }
                backlog = []
                position = first
            }
            buffer.withUnsafeBytes { add($0, frames: frames, resampler: resampler, at: &position!) }
            guard let measuredEnd else { continue }
            let written = Double(position! + resampler.delay)
            switch corrector.observe(measured: measuredEnd, written: written, frames: frames) {
            case .none: break
            case .compensate(let delta, let distance):
                resampler.compensate(delta: delta, distance: distance)
                drift.withLock { $0 = corrector.driftPPM }
            case .jump(let samples):
                position! += samples
                report(.resynced(source: label, milliseconds: Double(samples) * 1000 / Double(track.rate)))
            }
        }
        return nil
    }

    /// Where on the track the end of what was just read belongs, when the read says.
    /// A source's samples were captured the reported latency ago. A monitor's are what
    /// its sink renders: when the read had to wait for them they were rendered just
    /// now, whatever latency the monitor reports. A null sink's monitor says 0.1 to
    /// 0.5 s for its first seconds, until its sink takes the low-latency timing a
    /// reader asks for, while a beep played into it at known instants arrives as it
    /// plays (measured against `bench/c/flasher.c`). A monitor's read that did not
    /// wait (samples queued while this thread was away) says nothing.
    private func readEnd(asked: UInt64, now: UInt64, latencyUs: UInt64) -> Double? {
        let waited = now &- asked > 2_000_000
        if isMonitor { return waited ? track.position(atRealtime: now) : nil }
        return track.position(atRealtime: now &- latencyUs * 1000)
    }

    /// The track place of the first sample kept, for the first read whose end is known:
    /// what was recorded before the capture started (`startPosition`) is not part of the
    /// recording and leaves `backlog`; nil while the read ends before the start.
    private func firstPosition(end: Double, startPosition: Double, frames: Int, backlog: inout [Float]) -> Int64? {
        var first = Int64(end.rounded()) - Int64(frames + backlog.count / channels)
        if Double(first) < startPosition {
            let before = min(backlog.count / channels, Int(startPosition.rounded(.up)) - Int(first))
            backlog.removeFirst(before * channels)
            first += Int64(before)
        }
        return end >= startPosition ? first : nil
    }

    /// Resamples `frames` read frames into the mix at `position`, which moves past them.
    private func add(_ samples: UnsafeRawBufferPointer, frames: Int, resampler: Resampler, at position: inout Int64) {
        guard frames > 0 else { return }
        resampler.convert(samples.baseAddress, frames: frames) { out in
            mix.add(out, at: position)
            position += Int64(out.count / channels)
        }
    }
}
