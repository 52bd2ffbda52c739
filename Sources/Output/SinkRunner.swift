import Clocks
import IO

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One sink, its bounded queue and its worker thread; or, `.onCaller`, the sink written by
/// the thread that pushes, in batches, with no thread and no hand-off.
///
/// Life: `init` (starts the thread) → `push` from the reader thread → `finish` (drain, close,
/// join). The reader never waits for the sink unless the queue's policy is `.wait`. When the
/// sink fails (EPIPE on stdout), it is closed, `onEvent` reports it once (`.closed`), and later items
/// are dropped and counted.
///
/// `.onCaller` is for a reader that would wait for the sink anyway (a file read as fast as it
/// goes, a `.wait` queue): handing each access unit to a worker thread then costs a futex wake
/// and two context switches per unit and buys nothing, so the items gather into a batch
/// (`callerBatchBytes`, `batchSize`) that the pushing thread writes itself; `finish` writes
/// the rest and closes the sink on the thread that calls it. Events come from those threads.
public final class SinkRunner: @unchecked Sendable {
    // @unchecked Sendable holds because: every mutable field below (`queue`, `finishing`,
    // `closed`, `done`, `thread`) is read and written only while `condition` is locked; `name`,
    // `counters` and `onEvent` are immutable and Sendable. In the thread placement the sink is
    // not stored here: it was given (`sending`) to the worker thread's closure and only that
    // thread touches it. In `.onCaller` it is `onCaller`'s, whose every use (`pending`, the
    // sink, `stopped`) holds `callerLock`: one thread at a time, the pusher or the finisher.
    public let name: String
    public let counters: SinkCounters
    private let condition = ConditionLock()
    private var queue: SinkQueue
    private var finishing = false
    private var closed = false
    private var done = false
    private var thread: OSThread?
    /// The sink writes an audio track (`AccessUnitSink.carriesAudio`); immutable.
    public let carriesAudio: Bool
    /// Under `condition` (under `callerLock` `.onCaller`).
    private var saidAudioNotCarried = false
    private let onEvent: @Sendable (Event) -> Void

    /// What a runner reports, from the thread it happens on.
    public enum Event: Sendable {
        /// The sink fell behind and started skipping to the next entry point.
        case startedSkipping(sink: String)
        /// The sink closed: normally (nil) or failing.
        case closed(sink: String, error: SinkError?)
        /// The stream has audio and this sink carries video only (raw Annex-B): said once;
        /// its audio packets are counted as dropped.
        case audioNotCarried(sink: String)
    }

    /// Items handed to the sink per `write` call at most.
    static let batchSize = 512
    /// `.onCaller`: the bytes of access units gathered before the pushing thread writes them
    /// (one `writev` of a file sink, a few MP4 fragments).
    static let callerBatchBytes = 256 << 10

    /// Where the sink's writes run.
    public enum Placement: Sendable {
        /// A worker thread of its own, behind the queue.
        case ownThread
        /// The thread that pushes, in batches; no queue, no thread (a file read as fast as
        /// it goes, where the reader would wait for the sink anyway).
        case onCaller
    }

    /// The sink of an `.onCaller` runner and what is gathered for it.
    private final class CallerSide {
        let sink: AccessUnitSink
        var pending: [SinkItem] = []
        var pendingBytes = 0
        /// Closed (failed or finished): later items are dropped and counted.
        var stopped = false
        init(_ sink: AccessUnitSink) { self.sink = sink }
    }
    private let onCaller: CallerSide?
    private let callerLock = ConditionLock()

    /// Starts the worker thread for `sink` (none `.onCaller`). `onEvent` is called without
    /// any lock held.
    public init(sink: sending AccessUnitSink, queue: SinkQueue, counters: SinkCounters, placement: Placement = .ownThread,
                onEvent: @escaping @Sendable (Event) -> Void = { _ in }) {
        self.name = sink.name
        self.carriesAudio = sink.carriesAudio
        self.queue = queue
        self.counters = counters
        self.onEvent = onEvent
        if placement == .onCaller {
            onCaller = CallerSide(sink)
            return
        }
        onCaller = nil
        let thread = OSThread(name: "nalcast-sinkrunner") { [self] in self.work(sink) }
        condition.withLock { self.thread = thread }
    }

    /// Hands an item to the sink. With the `.wait` policy this blocks while the queue is full.
    public func push(_ item: SinkItem) {
        push(CollectionOfOne(item))
    }

    /// Whether `item` goes to the sink: a sink without an audio track gets no audio (each
    /// packet counted dropped, the format said once through `audioNotCarried`).
    private func admits(_ item: SinkItem, _ audioNotCarried: inout Bool) -> Bool {
        guard !carriesAudio else { return true }
        switch item {
        case .audio:
            counters.droppedAudioPackets.increment()
            return false
        case .audioFormat:
            if !saidAudioNotCarried {
                saidAudioNotCarried = true
                audioNotCarried = true
            }
            return false
        case .unit, .discontinuity, .gap:
            return true
        }
    }

    /// Hands items to the sink under one lock (the access units cut from one read).
    public func push(_ items: some Collection<SinkItem>) {
        if let onCaller {
            pushOnCaller(items, onCaller)
            return
        }
        var startedSkipping = false
        var audioNotCarried = false
        condition.lock()
        defer {
            condition.unlock()
            if startedSkipping { onEvent(.startedSkipping(sink: name)) }
            if audioNotCarried { onEvent(.audioNotCarried(sink: name)) }
        }
        var wake = false
        for item in items {
            guard admits(item, &audioNotCarried) else { continue }
            while true {
                if closed || finishing {
                    countDropped(item)
                    break
                }
                if queue.isEmpty { wake = true }
                let wasSkipping = queue.isSkipping
                switch queue.offer(item) {
                case .queued:
                    break
                case .skipped:
                    if case .audio = item { counters.droppedAudioPackets.increment() } else { counters.skippedUnits.increment() }
                    if !wasSkipping { startedSkipping = true }
                case .full:
                    // Let the worker at what is queued, then wait for room.
                    condition.broadcast()
                    wake = false
                    condition.wait()
                    continue
                }
                break
            }
        }
        if wake { condition.broadcast() }
    }

    /// True once the sink has closed (failed, or finished).
    public var isClosed: Bool { condition.withLock { closed } }

    /// Lets the sink write what is queued, close, and waits for it at most `timeout` seconds.
    /// Returns false when the sink did not finish in time (it is left behind).
    @discardableResult
    public func finish(timeout: Double) -> Bool {
        if let onCaller {
            finishOnCaller(onCaller)
            return true
        }
        let deadline = MonotonicClock.nanoseconds + UInt64(max(0, timeout) * 1e9)
        requestFinish()
        condition.lock()
        while !done {
            if !condition.wait(untilMonotonicNanoseconds: deadline) && MonotonicClock.nanoseconds >= deadline { break }
        }
        let finished = done
        let thread = finished ? self.thread : nil
        if finished { self.thread = nil }
        condition.unlock()
        if let thread { thread.join() }
        return finished
    }

    /// Tells the worker to write what is queued and close; does not wait. Later pushes are
    /// dropped.
    public func requestFinish() {
        condition.withLock {
            finishing = true
            condition.broadcast()
        }
    }

    private func work(_ sink: AccessUnitSink) {
        var failure: SinkError?
        while true {
            condition.lock()
            while queue.isEmpty && !finishing { condition.wait() }
            let batch = queue.take(maxItems: SinkRunner.batchSize)
            let last = finishing && queue.isEmpty
            condition.broadcast()  // room for a waiting reader
            condition.unlock()
            if !batch.isEmpty {
                do {
                    count(try sink.write(batch))
                } catch {
                    failure = error
                    break
                }
            }
            if last { break }
        }
        failure = close(sink, after: failure)
        condition.withLock {
            closed = true
            // What is still queued will never be written.
            let left = queue.take(maxItems: .max)
            var units: UInt64 = 0
            var audio: UInt64 = 0
            for item in left {
                if case .unit = item { units += 1 }
                if case .audio = item { audio += 1 }
            }
            counters.droppedUnits.increment(by: units)
            counters.droppedAudioPackets.increment(by: audio)
        }
        onEvent(.closed(sink: name, error: failure))
        condition.withLock {
            done = true
            condition.broadcast()
        }
    }

    private func count(_ report: WriteReport) {
        counters.writtenUnits.increment(by: UInt64(report.units))
        counters.writtenBytes.increment(by: UInt64(report.bytes))
        if report.dropped > 0 { counters.droppedUnits.increment(by: UInt64(report.dropped)) }
        if report.audioPackets > 0 { counters.writtenAudioPackets.increment(by: UInt64(report.audioPackets)) }
        if report.droppedAudio > 0 { counters.droppedAudioPackets.increment(by: UInt64(report.droppedAudio)) }
    }

    /// Closes the sink (after a failed write too) and counts the audio its close wrote or
    /// dropped; the failure to report.
    private func close(_ sink: AccessUnitSink, after failure: SinkError?) -> SinkError? {
        var failure = failure
        if failure == nil {
            do { try sink.close() } catch { failure = error }
        } else {
            try? sink.close()
        }
        let lateAudio = sink.audioCountsAfterLastWrite()
        counters.writtenAudioPackets.increment(by: UInt64(lateAudio.written))
        counters.droppedAudioPackets.increment(by: UInt64(lateAudio.dropped))
        return failure
    }

    // MARK: .onCaller

    /// Gathers `items`; writes the batch once it holds `callerBatchBytes` or `batchSize`
    /// items. After a failure or `finish`, items are dropped and counted.
    private func pushOnCaller(_ items: some Collection<SinkItem>, _ side: CallerSide) {
        var audioNotCarried = false
        var failure: SinkError?
        callerLock.lock()
        let finishing = condition.withLock { self.finishing }
        for item in items {
            guard admits(item, &audioNotCarried) else { continue }
            if side.stopped || finishing {
                countDropped(item)
                continue
            }
            side.pending.append(item)
            side.pendingBytes += item.byteCount
            if side.pendingBytes >= Self.callerBatchBytes || side.pending.count >= Self.batchSize {
                // After a failure the rest of `items` is dropped and counted (`stopped`).
                failure = writePending(side)
            }
        }
        callerLock.unlock()
        if audioNotCarried { onEvent(.audioNotCarried(sink: name)) }
        if let failure { onEvent(.closed(sink: name, error: failure)) }
    }

    /// Writes what is gathered; on a failure closes the sink and returns the failure.
    private func writePending(_ side: CallerSide) -> SinkError? {
        guard !side.pending.isEmpty else { return nil }
        defer {
            side.pending.removeAll(keepingCapacity: true)
            side.pendingBytes = 0
        }
        do {
            count(try side.sink.write(side.pending[...]))
            return nil
        } catch {
            side.stopped = true
            let failure = close(side.sink, after: error)
            condition.withLock {
                closed = true
                done = true
            }
            return failure
        }
    }

    /// Writes the rest and closes the sink, on the calling thread.
    private func finishOnCaller(_ side: CallerSide) {
        requestFinish()
        callerLock.lock()
        guard !side.stopped else { return callerLock.unlock() }
        var failure = writePending(side)
        if failure == nil {
            side.stopped = true
            failure = close(side.sink, after: nil)
            condition.withLock {
                closed = true
                done = true
            }
        }
        callerLock.unlock()
        onEvent(.closed(sink: name, error: failure))
    }

    private func countDropped(_ item: SinkItem) {
        switch item {
        case .unit: counters.droppedUnits.increment()
        case .audio: counters.droppedAudioPackets.increment()
        case .discontinuity, .gap, .audioFormat: break
        }
    }
}
