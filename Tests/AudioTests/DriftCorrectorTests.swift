@testable import Audio
import Testing

/// What libswresample does with `swr_set_compensation(delta, distance)`: `delta` samples
/// added (or dropped) spread over the next `distance` input samples.
struct Compensation {
    var delta = 0.0
    var left = 0.0

    /// The samples `frames` input samples become.
    mutating func resample(_ frames: Double) -> Double {
        guard left > 0 else { return frames }
        let step = min(frames, left)
        let share = delta * step / left
        delta -= share
        left -= step
        return frames + share
    }
}

/// The drift correction against simulated sound cards: the written samples are what a card
/// delivers, resampled as the corrector asked; the measure is where the system clock says
/// they end, with the jitter of a real read.
@Suite struct DriftCorrectorTests {
    @Test("a card 1000 ppm slow or fast stays within 5 ms of the system clock over 10 minutes", arguments: [1000.0, -1000.0, 300.0])
    func drift(ppm: Double) {
        // Model: the card's samples arrive `ppm` slower than the system clock.
        var corrector = DriftCorrector(rate: 48_000)
        var written = 0.0
        var pending = Compensation()
        var worst = 0.0
        for i in 1...60_000 {  // 10 minutes of 10 ms reads
            written += pending.resample(480.0 * (1 - ppm / 1e6))
            let measured = Double(i) * 480 + Double((i * 7919) % 97 - 48)  // ±1 ms of read jitter
            switch corrector.observe(measured: measured, written: written, frames: 480) {
            case .compensate(let delta, let distance): pending = Compensation(delta: Double(delta), left: Double(distance))
            case .jump(let samples): written += Double(samples)
            case .none: break
            }
            if i > 3000 { worst = max(worst, abs(written - Double(i) * 480) / 48) }
        }
        #expect(worst < 5, "\(worst) ms off")
        #expect(abs(corrector.driftPPM - ppm) < 100, "measured \(corrector.driftPPM) ppm")
    }

    @Test("a stall of half a second is a jump, not a slow correction")
    func stall() {
        var corrector = DriftCorrector(rate: 48_000)
        var decisions: [DriftCorrector.Decision] = []
        for i in 1...200 {
            let measured = Double(i) * 480 + (i > 50 ? 24_000 : 0)
            decisions.append(corrector.observe(measured: measured, written: Double(i) * 480, frames: 480))
        }
        #expect(decisions.contains { if case .jump(let n) = $0 { return abs(n - 24_000) < 2_400 }; return false }, "\(decisions.filter { $0 != .none })")
    }
}

@Suite struct DriftCorrectorStepTests {
    /// Reads of 10 ms on time, resampled as asked, with `lateBy(i)` ms of wake-up delay in read i (a measurement
    /// only ever later), and the track stepping by `step` samples after read 100.
    private static func run(reads: Int = 400, step: Double = 0, lateBy: (Int) -> Double = { _ in 0 }) -> (decisions: [DriftCorrector.Decision], offset: Double) {
        var corrector = DriftCorrector(rate: 48_000)
        var written = 0.0
        var decisions: [DriftCorrector.Decision] = []
        var pending = Compensation()
        for i in 1...reads {
            written += pending.resample(480)
            let measured = Double(i) * 480 + (i > 100 ? step : 0) + lateBy(i) * 48
            let decision = corrector.observe(measured: measured, written: written, frames: 480)
            switch decision {
            case .jump(let n): written += Double(n)
            case .compensate(let delta, let distance): pending = Compensation(delta: Double(delta), left: Double(distance))
            case .none: break
            }
            if decision != .none { decisions.append(decision) }
        }
        return (decisions, Double(reads) * 480 + step - written)
    }

    @Test("a step of 30 ms (a gap in the samples) is jumped over within half a second")
    func stepIsJumped() {
        let r = Self.run(reads: 150, step: 1_440)
        #expect(r.decisions.contains { if case .jump(let n) = $0 { return abs(n - 1_440) < 48 }; return false }, "\(r.decisions)")
        #expect(abs(r.offset) < 48, "\(r.offset / 48) ms off")
    }

    @Test("late wake-ups of the reading thread, up to 80 ms, move nothing")
    func lateWakeUpsAreNoError() {
        let r = Self.run(lateBy: { i in i % 7 == 0 ? Double(i % 80) : 0 })
        #expect(r.decisions.isEmpty, "\(r.decisions)")
        #expect(r.offset == 0)
    }

    @Test("a quarter second of odd measurements alone is not a jump")
    func oneOddQuarterIsNotAJump() {
        // 25 reads (one quarter) all measured 50 ms late, or early.
        for sign in [1.0, -1.0] {
            let r = Self.run(lateBy: { i in (126...150).contains(i) ? sign * 50 : 0 })
            #expect(!r.decisions.contains { if case .jump = $0 { return true }; return false }, "\(r.decisions)")
        }
    }

    @Test("a server that falls 2 ms behind under load (or runs 2 ms ahead) and catches up is not resampled: the pitch stays")
    func loadWanderIsNotResampled() {
        // As measured on a loaded machine: a null sink's monitor delivering 0.2 % slow for a
        // second, then catching up at once; and the same the other way.
        for sign in [1.0, -1.0] {
            let r = Self.run(lateBy: { i in (101...200).contains(i) ? sign * Double(i - 100) * 0.02 : 0 })
            #expect(r.decisions.isEmpty, "\(r.decisions)")
            #expect(r.offset == 0)
        }
    }

    @Test("no resampling moves the pitch by more than 0.2 %, however far off the track is short of a jump")
    func resamplingIsBounded() {
        for step in [240.0, 480, 900, -900] {  // 5, 10, 18.75 ms behind, and ahead
            let r = Self.run(reads: 1200, step: step)
            let compensations = r.decisions.compactMap { if case .compensate(let delta, let distance) = $0 { return (delta, distance) }; return nil }
            #expect(!compensations.isEmpty, "step \(step): nothing resampled")
            #expect(compensations.allSatisfy { abs(Double($0.0)) <= Double($0.1) * 0.002 }, "step \(step): \(compensations)")
        }
    }

    @Test("a step of 10 ms is resampled away within 6 s (at most 0.2 %: 2 ms a second), without a jump")
    func smallStepIsResampled() {
        let r = Self.run(reads: 700, step: 480)
        #expect(!r.decisions.contains { if case .jump = $0 { return true }; return false }, "\(r.decisions)")
        #expect(abs(r.offset) < 48, "\(r.offset / 48) ms off")
    }
}
