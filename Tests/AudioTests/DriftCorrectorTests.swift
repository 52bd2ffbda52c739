@testable import Audio
import Testing

/// The drift correction against simulated sound cards: the written samples are what a card
/// delivers, resampled as the corrector asked; the measure is where the system clock says
/// they end, with the jitter of a real read.
@Suite struct DriftCorrectorTests {
    @Test("a card 1000 ppm slow or fast stays within 5 ms of the system clock over 10 minutes", arguments: [1000.0, -1000.0, 300.0])
    func drift(ppm: Double) {
        // Model: the card's samples arrive `ppm` slower than the system clock.
        var corrector = DriftCorrector(rate: 48_000)
        var written = 0.0
        var pending: (delta: Double, left: Double) = (0, 0)
        var worst = 0.0
        for i in 1...60_000 {  // 10 minutes of 10 ms reads
            var frames = 480.0 * (1 - ppm / 1e6)
            if pending.left > 0 {
                let step = min(frames, pending.left)
                let share = pending.delta * step / pending.left
                frames += share
                pending.delta -= share
                pending.left -= step
            }
            written += frames
            let measured = Double(i) * 480 + Double((i * 7919) % 97 - 48)  // ±1 ms of read jitter
            switch corrector.observe(measured: measured, written: written, frames: 480) {
            case .compensate(let delta, let distance): pending = (Double(delta), Double(distance))
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
