import Clocks
import IO

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One sink, its bounded queue and its worker thread.
///
/// Life: `init` (starts the thread) → `push` from the reader thread → `finish` (drain, close,
/// join). The reader never waits for the sink unless the queue's policy is `.wait`. When the
/// sink fails (EPIPE on stdout), it is closed, `onEvent` reports it once (`.closed`), and later items
/// are dropped and counted.
public final class SinkRunner: @unchecked Sendable {
    // @unchecked Sendable holds because: every mutable field below (`queue`, `finishing`,
    // `closed`, `done`, `thread`) is read and written only while `condition` is locked; `name`,
    // `counters` and `onEvent` are immutable and Sendable. The sink itself is not stored here:
    // it was given (`sending`) to the worker thread's closure and only that thread touches it.
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

    /// Starts the worker thread for `sink`. `onEvent` is called without any lock held.
    public init(sink: sending AccessUnitSink, queue: SinkQueue, counters: SinkCounters, onEvent: @escaping @Sendable (Event) -> Void = { _ in }) {
        self.name = sink.name
        self.carriesAudio = sink.carriesAudio
        self.queue = queue
        self.counters = counters
        self.onEvent = onEvent
        let thread = OSThread(name: "nalcast-sinkrunner") { [self] in self.work(sink) }
        condition.withLock { self.thread = thread }
    }

    /// Hands an item to the sink. With the `.wait` policy this blocks while the queue is full.
    public func push(_ item: SinkItem) {
        push(CollectionOfOne(item))
    }

    /// Hands items to the sink under one lock (the access units cut from one read).
    public func push(_ items: some Collection<SinkItem>) {
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
            if !carriesAudio {
                switch item {
                case .audio:
                    counters.droppedAudioPackets.increment()
                    continue
                case .audioFormat:
                    if !saidAudioNotCarried {
                        saidAudioNotCarried = true
                        audioNotCarried = true
                    }
                    continue
                case .unit, .discontinuity, .gap:
                    break
                }
            }
            while true {
                if closed || finishing {
                    switch item {
                    case .unit: counters.droppedUnits.increment()
                    case .audio: counters.droppedAudioPackets.increment()
                    case .discontinuity, .gap, .audioFormat: break
                    }
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
                    let report = try sink.write(batch)
                    counters.writtenUnits.increment(by: UInt64(report.units))
                    counters.writtenBytes.increment(by: UInt64(report.bytes))
                    if report.dropped > 0 { counters.droppedUnits.increment(by: UInt64(report.dropped)) }
                    if report.audioPackets > 0 { counters.writtenAudioPackets.increment(by: UInt64(report.audioPackets)) }
                    if report.droppedAudio > 0 { counters.droppedAudioPackets.increment(by: UInt64(report.droppedAudio)) }
                } catch {
                    failure = error
                    break
                }
            }
            if last { break }
        }
        if failure == nil {
            do { try sink.close() } catch { failure = error }
        } else {
            try? sink.close()
        }
        let lateAudio = sink.audioCountsAfterLastWrite()
        counters.writtenAudioPackets.increment(by: UInt64(lateAudio.written))
        counters.droppedAudioPackets.increment(by: UInt64(lateAudio.dropped))
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
}
