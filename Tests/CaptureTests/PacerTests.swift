import Capture
import Testing

@Suite struct PacerTests {
    @Test func sixtyInThirtyOutKeepsEveryOtherFrame() {
        var pacer = Pacer(rate: FrameRate(30))
        let input = FrameRate(60)
        var kept: [Int] = []
        for i in 0..<600 where pacer.admit(timeNs: input.nanoseconds(ofFrame: Int64(i)), sequence: UInt64(i)) { kept.append(i) }
        #expect(kept == Array(stride(from: 0, to: 600, by: 2)))
        #expect(pacer.drops.rate == 300)
        #expect(pacer.drops.late == 0)
        #expect(pacer.kept == 300)
    }

    @Test func ntscRatesIn30000Over1001Out() {
        var pacer = Pacer(rate: FrameRate(numerator: 30000, denominator: 1001)!)
        let input = FrameRate(numerator: 60000, denominator: 1001)!
        var kept = 0
        for i in 0..<6000 where pacer.admit(timeNs: input.nanoseconds(ofFrame: Int64(i)), sequence: UInt64(i)) { kept += 1 }
        #expect(kept == 3000)
    }

    @Test func jitterAtTheTargetRateDropsNothing() {
        var pacer = Pacer(rate: FrameRate(30))
        let jitter: [Int64] = [0, 3_000_000, -4_000_000, 7_000_000, -7_000_000, 1_000_000]
        for i in 0..<300 {
            let t = 1_000_000_000_000 + FrameRate(30).nanoseconds(ofFrame: Int64(i)) + jitter[i % jitter.count]
            let kept = pacer.admit(timeNs: t, sequence: UInt64(i))
            #expect(kept, "frame \(i)")
        }
        #expect(pacer.drops.total == 0)
    }

    @Test func fiftyInThirtyOutKeepsThirtyASecond() {
        var pacer = Pacer(rate: FrameRate(30))
        var kept = 0
        for i in 0..<500 where pacer.admit(timeNs: FrameRate(50).nanoseconds(ofFrame: Int64(i)), sequence: UInt64(i)) { kept += 1 }
        #expect(kept == 300)
        #expect(pacer.drops.rate == 200)
    }

    @Test func slotsSkippedByALiveSourceCountAsLate() {
        var pacer = Pacer(rate: FrameRate(30))
        let rate = FrameRate(30)
        // The source skipped slots 3, 4 and 8 (the encoder was behind): sequence gaps.
        for seq in [0, 1, 2, 5, 6, 7, 9, 10] as [Int64] {
            let kept = pacer.admit(timeNs: rate.nanoseconds(ofFrame: seq), sequence: UInt64(seq))
            #expect(kept)
        }
        #expect(pacer.drops.late == 3)
        #expect(pacer.drops.rate == 0)
    }

    @Test func aGapInTimeRestartsTheGrid() {
        var pacer = Pacer(rate: FrameRate(30))
        let ms: Int64 = 1_000_000
        let decisions = [
            pacer.admit(timeNs: 0, sequence: 0),
            pacer.admit(timeNs: 1000 * ms, sequence: 1),  // after a second of nothing
            pacer.admit(timeNs: 1010 * ms, sequence: 2),  // too soon after it
            pacer.admit(timeNs: 1034 * ms, sequence: 3),
        ]
        #expect(decisions == [true, true, false, true])
    }
}
