import Output
import H264
import Media
import Testing

/// The per-sink queue: skip to the next entry point past the high mark, resume below the
/// low mark; or make the reader wait.
@Suite struct SinkQueueTests {
    /// An access unit of `size` bytes: IDR with SPS/PPS, or a P slice.
    static func unit(idr: Bool, size: Int) -> SinkItem {
        var nals: [NALUnit] = []
        if idr {
            nals.append(NALUnit(escapedBody: [0x67, 0x42, 0x00, 0x1e]))  // SPS header + bytes
            nals.append(NALUnit(escapedBody: [0x68, 0xce]))  // PPS
        }
        let filler = [UInt8](repeating: 0x11, count: max(1, size - (idr ? 15 : 0) - 5))
        nals.append(NALUnit(escapedBody: [idr ? 0x65 : 0x41] + filler))
        let au = AccessUnit(codec: H264Codec(), nalUnits: nals, isIDR: idr, resolution: nil, timestamp: nil)
        return .unit(TimedUnit(unit: au, mediaTime: .zero, arrivalNs: 0))
    }

    @Test func liveQueueSkipsToTheNextEntryPointBelowTheLowMark() {
        var q = SinkQueue(policy: .skipToEntry, highWater: 1000, lowWater: 500)
        #expect(q.offer(Self.unit(idr: true, size: 400)) == .queued)
        #expect(q.offer(Self.unit(idr: false, size: 400)) == .queued)
        // 800 + 400 > 1000: skipping starts.
        #expect(q.offer(Self.unit(idr: false, size: 400)) == .skipped)
        #expect(q.isSkipping)
        // An IDR while still above the low mark is skipped too.
        #expect(q.offer(Self.unit(idr: true, size: 100)) == .skipped)
        _ = q.take(maxItems: 1)  // 400 left: below the low mark
        #expect(q.offer(Self.unit(idr: false, size: 100)) == .skipped)
        #expect(q.offer(Self.unit(idr: true, size: 100)) == .queued)
        #expect(!q.isSkipping)
        #expect(q.stats.skippedAccessUnits == 3)
        #expect(q.stats.skips == 1)
        let rest = q.take(maxItems: 10)
        #expect(rest.count == 3)  // the P slice, the gap marker, the IDR
        guard case .gap(let skipped) = rest[rest.startIndex + 1] else {
            Issue.record("expected a gap marker, got \(rest)")
            return
        }
        #expect(skipped == 3)
        guard case .unit(let resumed) = rest[rest.startIndex + 2] else {
            Issue.record("expected a unit")
            return
        }
        #expect(resumed.resumes)
        #expect(q.queuedBytes == 0)
    }

    @Test func waitingQueueReportsFullInsteadOfSkipping() {
        var q = SinkQueue(policy: .wait, highWater: 1000)
        #expect(q.offer(Self.unit(idr: true, size: 600)) == .queued)
        #expect(q.offer(Self.unit(idr: false, size: 600)) == .full)
        #expect(!q.isSkipping)
        #expect(q.stats.skippedAccessUnits == 0)
        _ = q.take(maxItems: 1)
        #expect(q.offer(Self.unit(idr: false, size: 600)) == .queued)
    }

    @Test func anEmptyQueueTakesAnythingAndMarkersAlwaysPass() {
        var q = SinkQueue(policy: .skipToEntry, highWater: 100)
        #expect(q.offer(Self.unit(idr: true, size: 5000)) == .queued)
        #expect(q.offer(Self.unit(idr: false, size: 10)) == .skipped)
        #expect(q.offer(.discontinuity) == .queued)
        #expect(q.count == 2)
    }
}
