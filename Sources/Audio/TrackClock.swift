#if canImport(Glibc)
import Glibc
#endif

/// The track's time line: sample `n` of the track was captured at `startNs + n / rate`
/// seconds of CLOCK_REALTIME (the clock of the timestamp SEI's capture time).
struct TrackClock: Sendable {
    let startNs: UInt64
    let rate: Int

    /// The place on the track of a sample captured at `ns` (rounded down; may be negative).
    func position(atRealtime ns: UInt64) -> Double {
        Double(Int64(bitPattern: ns &- startNs)) * Double(rate) / 1e9
    }

    /// When the sample at `position` was captured.
    func realtime(at position: Int64) -> UInt64 {
        let offset = Int64((Double(position) * 1e9 / Double(rate)).rounded())
        return UInt64(bitPattern: Int64(bitPattern: startNs) &+ offset)
    }
}

/// CLOCK_REALTIME in nanoseconds.
func realtimeNow() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_REALTIME, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// Sleeps until CLOCK_REALTIME reaches `ns`, in steps of at most 20 ms so that `stopped`
/// is seen soon; returns false when stopped first.
func sleep(untilRealtime ns: UInt64, unless stopped: () -> Bool) -> Bool {
    while true {
        if stopped() { return false }
        let now = realtimeNow()
        if now >= ns { return true }
        var ts = timespec(tv_sec: 0, tv_nsec: Int(min(ns - now, 20_000_000)))
        nanosleep(&ts, nil)
    }
}

/// Keeps a live source's samples where its capture times say, against a sound card whose
/// clock differs from the system's (by up to ~0.1 %: 600 ms in 10 minutes).
///
/// Each read gives one noisy measurement: where on the track the end of what was read
/// belongs (now minus the device's latency) against where the samples written so far
/// end. The difference is smoothed; once a second a steady difference is corrected by
/// resampling (swr_set_compensation: up to 0.5 % of samples added or dropped over the next
/// second, inaudible) so that the track keeps exactly `rate` samples per system second and
/// every later timestamp stays right; a jump larger than 100 ms (the server stalled, the
/// clock stepped) moves the write position instead.
struct DriftCorrector {
    enum Decision: Equatable {
        case none
        case compensate(delta: Int, distance: Int)
        case jump(Int64)
    }

    let rate: Int
    /// Smoothed (measured - written), in samples: positive when the source delivers fewer
    /// samples than the system clock says have passed.
    private(set) var error: Double = 0
    private var primed = false
    private var sinceDecision = 0
    /// Samples added (positive) or dropped by compensation so far.
    private(set) var compensated: Int64 = 0
    /// Samples the source ran for, for the drift figure.
    private(set) var observed: Int64 = 0

    init(rate: Int) { self.rate = rate }

    mutating func observe(measured: Double, written: Double, frames: Int) -> Decision {
        let sample = measured - written
        if primed { error += (sample - error) * 0.05 } else { error = sample; primed = true }
        sinceDecision += frames
        observed += Int64(frames)
        guard sinceDecision >= rate else { return .none }
        sinceDecision = 0
        if abs(error) > Double(rate) / 10 {
            let jump = Int64(error.rounded())
            error = 0
            primed = false
            return .jump(jump)
        }
        guard abs(error) > Double(rate) / 1000 else { return .none }
        let limit = rate / 200
        let delta = max(-limit, min(limit, Int((error * 0.5).rounded())))
        guard delta != 0 else { return .none }
        compensated += Int64(delta)
        error -= Double(delta)  // what the next second's resampling will make up
        return .compensate(delta: delta, distance: rate)
    }

    /// The source's clock against the system's, in parts per million (positive: slow).
    var driftPPM: Double { observed > 0 ? Double(compensated) / Double(observed) * 1e6 : 0 }
}
