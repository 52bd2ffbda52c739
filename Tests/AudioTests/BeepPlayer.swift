import CPulsePlayback
import Foundation
import Synchronization

/// Plays a 1 kHz, 100 ms beep at -6 dBFS into a PulseAudio server's default sink at each of
/// `count` whole seconds of CLOCK_REALTIME from `firstSecond` on: a playback stream that runs
/// all along, in 5 ms chunks. Before each chunk the stream's latency says when its next sample
/// will play, which gives when its first sample played (the anchor). One such reading is off
/// by up to 11 ms on a loaded machine (libpulse interpolates between timing updates, and the
/// thread can be held up between the latency and the clock), so the beeps are placed from the
/// median of the anchors read in the second before the first beep, once: every beep then lies
/// a whole number of seconds' samples after it, and where they are heard apart from their
/// seconds tells about the capture alone.
final class BeepPlayer: Sendable {
    static let rate = 48_000
    static let chunk = 240
    private let stopped = Atomic<Bool>(false)
    private let done = Mutex<Bool>(false)
    /// What went wrong, if anything (pa_strerror's text).
    let failure = Mutex<String?>(nil)

    /// Opens the stream `delay` seconds from now and plays the beeps (placed as the
    /// benchmark's `bench/c/flasher.c` places its own, but from the one anchor).
    func start(server: String, delay: TimeInterval, firstSecond: Int64, count: Int) {
        let thread = Thread { [self] in
            Thread.sleep(forTimeInterval: delay)
            self.run(server: server, firstSecond: firstSecond, count: count)
            self.done.withLock { $0 = true }
        }
        thread.start()
    }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        while !done.withLock({ $0 }) { Thread.sleep(forTimeInterval: 0.01) }
    }

    private func run(server: String, firstSecond: Int64, count: Int) {
        var spec = pa_sample_spec(format: PA_SAMPLE_S16LE, rate: UInt32(Self.rate), channels: 2)
        var attr = pa_buffer_attr(maxlength: UInt32.max, tlength: UInt32(Self.rate / 10 * 4), prebuf: UInt32.max,
                                  minreq: UInt32.max, fragsize: UInt32.max)
        var error: Int32 = 0
        guard let stream = pa_simple_new(server, "nalcast-tests", PA_STREAM_PLAYBACK, nil, "beeps", &spec, nil, &attr, &error) else {
            failure.withLock { $0 = String(cString: pa_strerror(error)) }
            return
        }
        defer { pa_simple_free(stream) }
        let ns: Int64 = 1_000_000_000
        let beepSamples: Int64 = Int64(Self.rate) / 10
        var buffer = [Int16](repeating: 0, count: Self.chunk * 2)
        var written: Int64 = 0
        var beepStart: Int64 = -1
        var next = firstSecond * ns
        let last = (firstSecond + Int64(count)) * ns
        var readings: [Int64] = []  // the last second's anchors, until the first beep is placed
        var anchor: Int64?  // when sample 0 played, CLOCK_REALTIME ns
        while !stopped.load(ordering: .relaxed) {
            let latency = pa_simple_get_latency(stream, &error)
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            let playsAt = Int64(now.tv_sec) * ns + Int64(now.tv_nsec) + Int64(latency) * 1000  // when `written` plays
            if anchor == nil {
                readings.append(playsAt - written * ns / Int64(Self.rate))
                if readings.count > Self.rate / Self.chunk { readings.removeFirst() }
            }
            // A beep is placed 50 ms ahead of its first sample's writing (the previous one,
            // a second earlier, is long over).
            if next < last && next < playsAt + 50_000_000 {
                let from = anchor ?? readings.sorted()[readings.count / 2]
                anchor = from
                beepStart = max(written, (next - from) * Int64(Self.rate) / ns)
                next += ns
            }
            for i in 0..<Self.chunk {
                let k = written + Int64(i) - beepStart
                var value: Int16 = 0
                if beepStart >= 0 && k >= 0 && k < beepSamples {
                    value = Int16((16384 * sin(2 * Double.pi * 1000 * Double(k) / Double(Self.rate))).rounded())
                }
                buffer[2 * i] = value
                buffer[2 * i + 1] = value
            }
            let ok = buffer.withUnsafeBytes { pa_simple_write(stream, $0.baseAddress, $0.count, &error) }
            guard ok >= 0 else {
                failure.withLock { $0 = String(cString: pa_strerror(error)) }
                return
            }
            written += Int64(Self.chunk)
        }
    }
}
