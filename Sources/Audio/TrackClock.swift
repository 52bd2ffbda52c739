#if canImport(Glibc)
import Clocks
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

/// Sleeps until CLOCK_REALTIME reaches `ns`, in steps of at most 20 ms so that `stopped`
/// is seen soon; returns false when stopped first.
func sleep(untilRealtime ns: UInt64, unless stopped: () -> Bool) -> Bool {
    while true {
        if stopped() { return false }
        let now = WallClock.nanoseconds
        if now >= ns { return true }
        var ts = timespec(tv_sec: 0, tv_nsec: Int(min(ns - now, 20_000_000)))
        nanosleep(&ts, nil)
    }
}

/// Keeps a live source's samples where its capture times say, against a sound card whose
/// clock differs from the system's (by up to ~0.1 %: 600 ms in 10 minutes) and a server
/// that now and then skips or repeats (a null sink's monitor moving between its idle and
/// its low-latency timing, a stall, a clock step).
///
/// Each read gives one measurement: where on the track the end of what was read belongs
/// (now minus the device's latency) against where the samples written so far end. A late
/// wake-up of the reading thread only makes a measurement later, never earlier, so each
/// quarter of a second the smallest difference of its reads is taken as the error then:
/// - past 20 ms in two quarters running (one odd latency report is not enough), the
///   write position jumps by it: a gap of silence, or a step back over what was written;
/// - otherwise it is smoothed, and a steady difference past 3 ms (a scheduling delay of the
///   server under load stays within that and catches up by itself) is corrected by resampling
///   (swr_set_compensation: at most 0.5 % of samples added or dropped over the next quarter,
///   inaudible), so that the track keeps exactly `rate` samples per system second and every
///   later timestamp stays right.
struct DriftCorrector {
    enum Decision: Equatable {
        case none
        case compensate(delta: Int, distance: Int)
        case jump(Int64)
    }

    let rate: Int
    /// Samples between two decisions: a quarter of a second.
    let period: Int
    /// The error past which the position jumps rather than resamples: 20 ms.
    let jumpThreshold: Double
    /// Smoothed error, in samples: positive when the source delivers fewer samples than the
    /// system clock says have passed.
    private(set) var error: Double = 0
    private var primed = false
    /// The smallest (measured - written) of this quarter's reads.
    private var windowLeast = Double.infinity
    private var sinceDecision = 0
    /// The previous quarter's error when it was past the threshold, waiting for a second one.
    private var pendingJump: Double?
    /// The error (3 ms) past which a correction starts. A loaded machine delays the server
    /// (a null sink's rendering, the monitor's delivery) by a few ms and then catches up:
    /// resampled, each such wander moved the pitch by up to 0.5 % (440 Hz captured at 442)
    /// and its catch-up moved it back the other way. A card's drift (ppm: 1000 ppm is 3 ms
    /// in 3 s) crosses the band and is corrected; a steady offset past it too.
    let deadBand: Double
    private var correcting = false
    /// Samples added (positive) or dropped by compensation so far.
    private(set) var compensated: Int64 = 0
    /// Samples the source ran for, for the drift figure.
    private(set) var observed: Int64 = 0

    init(rate: Int) {
        self.rate = rate
        period = rate / 4
        jumpThreshold = Double(rate) / 50
        deadBand = Double(rate) * 3 / 1000
    }

    mutating func observe(measured: Double, written: Double, frames: Int) -> Decision {
        windowLeast = min(windowLeast, measured - written)
        sinceDecision += frames
        observed += Int64(frames)
        guard sinceDecision >= period else { return .none }
        sinceDecision = 0
        let least = windowLeast
        windowLeast = .infinity
        if abs(least) > jumpThreshold {
            guard let previous = pendingJump, (previous > 0) == (least > 0) else {
                pendingJump = least
                return .none
            }
            pendingJump = nil
            error = 0
            primed = false
            correcting = false
            return .jump(Int64(least.rounded()))
        }
        pendingJump = nil
        if primed { error += (least - error) * 0.5 } else { error = least; primed = true }
        // Hysteresis: a correction starts past `deadBand` and runs until the error is
        // under half a millisecond; within the band nothing is resampled.
        if !correcting && abs(error) > deadBand { correcting = true }
        if correcting && abs(error) <= Double(rate) / 2000 { correcting = false }
        guard correcting else { return .none }
        // At most 0.2 % (24 samples a quarter at 48 kHz): 2 ms of error made up a second,
        // twice what a card 1000 ppm off drifts, and a sine moved by 0.9 Hz at 440 (3.5
        // cents) at worst. At 0.5 % a wander past the band that outlasted the correction
        // took a 440 Hz sine to 442.
        let limit = period / 500
        let delta = max(-limit, min(limit, Int((error * 0.5).rounded())))
        guard delta != 0 else { return .none }
        compensated += Int64(delta)
        error -= Double(delta)  // what the next quarter's resampling will make up
        return .compensate(delta: delta, distance: period)
    }

    /// The source's clock against the system's, in parts per million (positive: slow).
    var driftPPM: Double { observed > 0 ? Double(compensated) / Double(observed) * 1e6 : 0 }
}
