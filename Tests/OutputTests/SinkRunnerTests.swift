import Media

import Output
import Foundation
import H264
import Synchronization
import Testing

/// Runners with real threads: a failing sink closes alone; a waiting queue loses nothing.
@Suite struct SinkRunnerTests {
    /// Records what it is given; fails on the `failAt`-th unit.
    final class Recorder: AccessUnitSink {
        let name: String
        let failAt: Int?
        let seen: Tally
        let delay: UInt32
        init(name: String, failAt: Int? = nil, delay: UInt32 = 0, seen: Tally) {
            self.name = name
            self.failAt = failAt
            self.delay = delay
            self.seen = seen
        }
        func write(_ items: ArraySlice<SinkItem>) throws(SinkError) -> WriteReport {
            var report = WriteReport()
            for item in items {
                guard case .unit(let u) = item else { continue }
                let n = seen.next()
                if let failAt, n >= failAt { throw SinkError(sink: name, message: "write: Broken pipe", peerClosed: true) }
                report.units += 1
                report.bytes += u.unit.byteCount
                if delay > 0 { usleep(delay) }
            }
            return report
        }
        func close() throws(SinkError) {}
    }

    final class Tally: Sendable {
        private let count = Mutex(0)
        func next() -> Int { count.withLock { $0 += 1; return $0 } }
    }

    final class Counts: Sendable {
        let seenA = Tally()
        let seenB = Tally()
    }

    @Test func aFailingSinkClosesAloneAndTheOtherGetsEverything() throws {
        let units = try Fixtures.accessUnits("FREXT01_JVC_D.264")
        let counts = Counts()
        let closed = Names()
        let a = SinkRunner(sink: Recorder(name: "a", failAt: 3, seen: counts.seenA), queue: SinkQueue(policy: .wait, highWater: 1 << 20), counters: SinkCounters()) { event in
            if case .closed(let sink, let error) = event, error?.peerClosed == true { closed.add(sink) }
        }
        let b = SinkRunner(sink: Recorder(name: "b", seen: counts.seenB), queue: SinkQueue(policy: .wait, highWater: 1 << 20), counters: SinkCounters())
        let fanout = SinkFanout(runners: [a, b])
        for u in units { fanout.push(SinkItem.unit(TimedUnit(unit: u, mediaTime: .zero, arrivalNs: 0))) }
        #expect(fanout.finish(timeout: 30).isEmpty)
        #expect(closed.all == ["a"])
        #expect(b.counters.writtenUnits.value == UInt64(units.count))
        #expect(a.counters.writtenUnits.value + a.counters.droppedUnits.value <= UInt64(units.count))
        #expect(a.isClosed && b.isClosed)
    }

    @Test func aSlowLiveSinkSkipsAndCountsWhileTheReaderNeverWaits() throws {
        let units = try Fixtures.accessUnits("FRExt1_Panasonic.avc")
        let counts = Counts()
        // 20 ms per access unit and room for about two: most of a fast burst is skipped.
        let slow = SinkRunner(sink: Recorder(name: "slow", delay: 20_000, seen: counts.seenA), queue: SinkQueue(policy: .skipToEntry, highWater: 10_000), counters: SinkCounters())
        for _ in 0..<20 {
            for (i, u) in units.enumerated() { slow.push(SinkItem.unit(TimedUnit(unit: u, mediaTime: .seconds(Double(i)), arrivalNs: 0))) }
        }
        #expect(slow.finish(timeout: 30))
        let written = slow.counters.writtenUnits.value
        let skipped = slow.counters.skippedUnits.value
        #expect(skipped > 0)
        #expect(written + skipped == UInt64(20 * units.count))
    }
}

/// A runner `.onCaller`: no thread; the pushing thread writes in batches, `finish` the rest.
@Suite struct SinkRunnerOnCallerTests {
    /// Counts its write calls and units, and notes whether every call ran on `thread`.
    /// `@unchecked Sendable`: the runner `.onCaller` has no thread; the test's own thread is
    /// the only one that writes to it, closes it and reads its counts.
    final class Batches: AccessUnitSink, @unchecked Sendable {
        let name = "batches"
        let thread = pthread_self()
        var calls = 0
        var units = 0
        var onOtherThread = false
        var closes = 0
        let failAt: Int?
        init(failAt: Int? = nil) { self.failAt = failAt }
        func write(_ items: ArraySlice<SinkItem>) throws(SinkError) -> WriteReport {
            calls += 1
            if pthread_self() != thread { onOtherThread = true }
            var report = WriteReport()
            for item in items {
                guard case .unit(let u) = item else { continue }
                if let failAt, units >= failAt { throw SinkError(sink: name, message: "write: No space left on device") }
                units += 1
                report.units += 1
                report.bytes += u.unit.byteCount
            }
            return report
        }
        func close() throws(SinkError) { closes += 1 }
    }

    @Test func thePushingThreadWritesInBatchesAndFinishWritesTheRest() throws {
        let units = try Fixtures.accessUnits("FRExt1_Panasonic.avc")
        let sink = Batches()
        let closed = Names()
        let runner = SinkRunner(sink: sink, queue: SinkQueue(policy: .wait, highWater: 1 << 20), counters: SinkCounters(), placement: .onCaller) { event in
            if case .closed(let name, let error) = event { closed.add(name + (error == nil ? "" : " failed")) }
        }
        let rounds = 40
        for _ in 0..<rounds {
            for u in units { runner.push(SinkItem.unit(TimedUnit(unit: u, mediaTime: .zero, arrivalNs: 0))) }
        }
        #expect(runner.finish(timeout: 1))
        let total = rounds * units.count
        #expect(sink.units == total)
        #expect(runner.counters.writtenUnits.value == UInt64(total))
        // One write per batch, not one per access unit; all on this thread.
        #expect(sink.calls < total / 4)
        #expect(!sink.onOtherThread)
        #expect(sink.closes == 1)
        #expect(closed.all == ["batches"])
        #expect(runner.isClosed)
        runner.push(SinkItem.unit(TimedUnit(unit: units[0], mediaTime: .zero, arrivalNs: 0)))
        #expect(runner.counters.droppedUnits.value == 1)
    }

    @Test func aFailedWriteClosesTheSinkAndLaterUnitsAreCounted() throws {
        let units = try Fixtures.accessUnits("FRExt1_Panasonic.avc")
        let sink = Batches(failAt: 0)
        let closed = Names()
        let runner = SinkRunner(sink: sink, queue: SinkQueue(policy: .wait, highWater: 1 << 20), counters: SinkCounters(), placement: .onCaller) { event in
            if case .closed(let name, let error) = event { closed.add(name + (error == nil ? "" : " failed")) }
        }
        let rounds = 40
        for _ in 0..<rounds {
            for u in units { runner.push(SinkItem.unit(TimedUnit(unit: u, mediaTime: .zero, arrivalNs: 0))) }
        }
        #expect(closed.all == ["batches failed"])
        #expect(runner.isClosed)
        #expect(runner.finish(timeout: 1))
        #expect(closed.all == ["batches failed"])
        #expect(sink.closes == 1)
        #expect(runner.counters.writtenUnits.value == 0)
        // The failed batch was the sink's to report; everything pushed after it is counted.
        let failedBatch = UInt64(rounds * units.count) - runner.counters.droppedUnits.value
        #expect(failedBatch > 0 && failedBatch <= UInt64(SinkRunnerBatch.size))
    }
}

enum SinkRunnerBatch { static let size = 512 }

final class Names: Sendable {
    private let list = Mutex<[String]>([])
    func add(_ s: String) { list.withLock { $0.append(s) } }
    var all: [String] { list.withLock { $0 } }
}
