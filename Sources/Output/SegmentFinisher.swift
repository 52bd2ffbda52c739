import Media
import IO
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Finishes written segments on a thread of its own, so the segment writer goes on with
/// the next one while the disk catches up: `fsync`, close, rename `NAME.part` to `NAME`,
/// remove the index, `fsync` the directory; then the segment is reported, `--on-segment`
/// runs and `--keep` deletes the oldest finished files.
///
/// At most `maxPending` segments wait to be finished: past that, `submit` waits (dirty data
/// stays bounded). A finished name is always a complete, synced file; until then the
/// segment is a `.part` with its index, which recovery handles like any other.
///
/// Life: `init` (starts the thread) → `submit` from the segment writer → `finish()` (drains,
/// joins) → the first error, if any, from `takeError()`.
final class SegmentFinisher: @unchecked Sendable {
    // @unchecked Sendable holds because: `jobs`, `stopping`, `error` and `busy` are touched
    // only with `condition` locked; `finished` (the --keep list) only by the finisher thread,
    // and by `init` before that thread starts; the rest is immutable.

    struct Job: Sendable {
        let fd: Int32
        let indexFD: Int32
        let partPath: String
        let info: SegmentSink.SegmentInfo
    }

    private let condition = ConditionLock()
    private var jobs: [Job] = []
    private var busy = false
    private var stopping = false
    private var error: SinkError?
    private var thread: OSThread?
    private var finished: [String]
    private let directoryFD: Int32
    private let sync: Bool
    private let keep: Int?
    private let hook: [String]?
    private let onEvent: @Sendable (SegmentSink.Event) -> Void
    let maxPending = 2

    init(directoryFD: Int32, sync: Bool, keep: Int?, hook: [String]?, alreadyFinished: [String], onEvent: @escaping @Sendable (SegmentSink.Event) -> Void) {
        self.directoryFD = directoryFD
        self.sync = sync
        self.keep = keep
        self.hook = hook
        self.finished = alreadyFinished
        self.onEvent = onEvent
        let t = OSThread(name: "nalcast-segmentfinisher") { [self] in self.work() }
        condition.withLock { thread = t }
    }

    /// Hands over a written segment (its descriptors now belong to the finisher).
    func submit(_ job: Job) {
        condition.lock()
        while jobs.count >= maxPending && !stopping { condition.wait() }
        jobs.append(job)
        condition.broadcast()
        condition.unlock()
    }

    /// Finishes what was submitted and ends the thread.
    func finish() {
        condition.lock()
        stopping = true
        condition.broadcast()
        let t = thread
        thread = nil
        condition.unlock()
        if let t { t.join() }
    }

    /// The first error since the last call (a failed fsync or rename), if any.
    func takeError() -> SinkError? {
        condition.withLock {
            defer { error = nil }
            return error
        }
    }

    private func work() {
        while true {
            condition.lock()
            while jobs.isEmpty && !stopping { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.broadcast()
            condition.unlock()
            do {
                try complete(job)
            } catch {
                condition.withLock { if self.error == nil { self.error = error } }
            }
        }
    }

    private func complete(_ job: Job) throws(SinkError) {
        defer { Glibc.close(job.indexFD) }
        if sync && fsync(job.fd) != 0 {
            let message = String(cString: strerror(errno))
            Glibc.close(job.fd)
            throw SinkError(sink: "segments", message: "fsync \(job.partPath): \(message)")
        }
        Glibc.close(job.fd)
        guard rename(job.partPath, job.info.path) == 0 else {
            throw SinkError(sink: "segments", message: "rename \(job.partPath): \(String(cString: strerror(errno)))")
        }
        unlink(job.partPath + ".idx")
        if sync { fsync(directoryFD) }
        onEvent(.closed(job.info))
        if let hook { runHook(hook, job.info) }
        finished.append(job.info.path)
        if let keep {
            while finished.count > keep {
                let path = finished.removeFirst()
                unlink(path)
                onEvent(.removed(path: path))
            }
        }
    }

    private func runHook(_ command: [String], _ info: SegmentSink.SegmentInfo) {
        var environment: [String] = []
        var e = environ
        while let entry = e.pointee {
            let text = String(cString: entry)
            if !text.hasPrefix("NALCAST_SEGMENT_") { environment.append(text) }
            e += 1
        }
        environment += [
            "NALCAST_SEGMENT_PATH=\(info.path)",
            "NALCAST_SEGMENT_DURATION=\(info.duration.secondsText)",
            "NALCAST_SEGMENT_FRAMES=\(info.frames)",
            "NALCAST_SEGMENT_BYTES=\(info.bytes)",
        ]
        do {
            try ChildProcess.spawn(command + [info.path], environment: environment)
        } catch {
            onEvent(.hookFailed(command: command[0], message: error.description))
        }
    }
}
