import H264

/// How far a reader may fall behind before it skips to the next IDR.
///
/// The high marks start a skip; a reader that skipped resumes (at an IDR) only once what is
/// still queued is at or under the low marks, so a reader stuck on one access unit does not
/// bounce between skipping and resuming at every IDR.
public struct ReaderQueueLimits: Sendable, Equatable {
    /// High mark for the media time between the oldest and the newest queued access unit.
    public var maxLagNs: UInt64
    /// High mark for the queued bytes.
    public var maxBytes: Int
    /// The low marks as a fraction of the high marks.
    public var lowWatermark: Double

    public init(maxLagNs: UInt64 = Nanoseconds.milliseconds(500), maxBytes: Int = 8 << 20, lowWatermark: Double = 0.5) {
        precondition(maxBytes > 0 && lowWatermark >= 0 && lowWatermark <= 1)
        self.maxLagNs = maxLagNs
        self.maxBytes = maxBytes
        self.lowWatermark = lowWatermark
    }

    var lowLagNs: UInt64 { UInt64(Double(maxLagNs) * lowWatermark) }
    var lowBytes: Int { Int(Double(maxBytes) * lowWatermark) }
}

/// One access unit waiting in a reader's queue. The NAL units are shared with every other
/// reader's queue: nothing here copies a frame.
public struct QueuedAccessUnit: Sendable {
    public let accessUnit: AccessUnit
    /// What goes on the wire: for an IDR, its SPS and PPS are in front (`nalUnitsForEntry`).
    public let nalUnits: [NALUnit]
    public let byteCount: Int
    /// Media time from the timestamp SEI, when the access unit carries one.
    public let pts90k: UInt64?
    /// When the access unit reached the relay, on the relay's clock.
    public let arrivalNs: UInt64

    public init(_ accessUnit: AccessUnit, arrivalNs: UInt64) {
        self.accessUnit = accessUnit
        self.nalUnits = accessUnit.isIDR ? accessUnit.nalUnitsForEntry : accessUnit.nalUnits
        self.byteCount = nalUnits.reduce(0) { $0 + $1.wire.count }
        self.pts90k = accessUnit.timestamp?.pts90k
        self.arrivalNs = arrivalNs
    }

    public var isIDR: Bool { accessUnit.isIDR }

    /// Media time from `earlier` to `self`: from the timestamps when both have one, else from
    /// the arrival times. Never negative.
    func mediaTimeNs(since earlier: QueuedAccessUnit) -> UInt64 {
        if let now = pts90k, let then = earlier.pts90k {
            return now > then ? (now - then) * 100_000 / 9 : 0
        }
        return arrivalNs > earlier.arrivalNs ? arrivalNs - earlier.arrivalNs : 0
    }
}

/// Counts of what a reader missed because it was too slow.
public struct SkipStats: Sendable, Equatable {
    /// Times the reader went over its bound and skipped to the next IDR.
    public var skips = 0
    /// Access units the reader never got after it started (dropped from its queue, or not
    /// queued while it waited for an IDR).
    public var skippedAccessUnits = 0
    public var skippedBytes = 0

    public init() {}
}

/// The bounded FIFO of access units for one reader (a TCP client, a sink).
///
/// Bounded by media time and by bytes. Over a bound, everything queued up to the next IDR is
/// dropped, or everything if no IDR is queued; then nothing but an IDR is accepted, and the
/// IDR comes with its SPS and PPS in front: the reader's stream stays decodable.
///
/// The head access unit may be in flight (its owner has started writing it). It is never
/// dropped: a partly written access unit must be finished or the stream breaks.
///
/// A value type with no locks: its owner (the `Broadcaster`, on the loop thread) serializes use.
public struct ReaderQueue: Sendable {
    /// What happened to one access unit offered to the queue.
    public struct EnqueueResult: Sendable, Equatable {
        /// The access unit is in the queue (it may still have caused a skip of older ones).
        public var enqueued = false
        /// The reader starts (or resumes after a skip) at this access unit, an IDR.
        public var isEntryPoint = false
        /// This entry point is the reader's first: it joined and starts here.
        public var isStart = false
        /// The bound was crossed: the reader skipped. The counts say what was dropped, this
        /// access unit included when it was not kept. Without `didSkip`, a count of 1 is this
        /// access unit, passed over because the reader waits for the IDR after a skip.
        public var didSkip = false
        public var skippedAccessUnits = 0
        public var skippedBytes = 0

        public init() {}
    }

    public let limits: ReaderQueueLimits

    private var entries: [QueuedAccessUnit] = []
    private var head = 0
    /// True while the head access unit is being written by the queue's owner.
    public private(set) var isHeadInFlight = false
    /// True until an IDR enters the queue: at first (the reader has not started yet) and after a skip.
    public private(set) var isWaitingForIDR = true
    /// True once the reader got its first entry point.
    public private(set) var hasStarted = false
    public private(set) var queuedBytes = 0
    public private(set) var stats = SkipStats()
    /// Bytes the owner reported written.
    public private(set) var bytesWritten = 0
    /// Last time the reader made progress (bytes written), or the queue went from empty to not.
    public private(set) var lastProgressNs: UInt64

    /// Extra room for a backlog given at join (`gop` policy), until the reader catches up.
    private var graceLagNs: UInt64 = 0
    private var graceBytes = 0

    public init(limits: ReaderQueueLimits = ReaderQueueLimits(), now: UInt64) {
        self.limits = limits
        self.lastProgressNs = now
    }

    /// Access units queued, the in-flight head included.
    public var count: Int { entries.count - head }
    public var isEmpty: Bool { count == 0 }

    /// Media time between the oldest and the newest queued access unit.
    public var lagNs: UInt64 {
        guard let first = entries[head...].first, let last = entries.last else { return 0 }
        return last.mediaTimeNs(since: first)
    }

    /// The queued access units, oldest first (for inspection and tests).
    public var queued: ArraySlice<QueuedAccessUnit> { entries[head...] }

    /// Offers one live access unit to the reader.
    public mutating func enqueue(_ accessUnit: AccessUnit, arrivalNs now: UInt64) -> EnqueueResult {
        let entry = QueuedAccessUnit(accessUnit, arrivalNs: now)
        var result = EnqueueResult()
        let wasStarted = hasStarted
        if isWaitingForIDR {
            guard entry.isIDR, !hasStarted || isUnderLowMarks(adding: entry) else {
                if hasStarted {
                    stats.skippedAccessUnits += 1
                    stats.skippedBytes += entry.byteCount
                    result.skippedAccessUnits = 1
                    result.skippedBytes = entry.byteCount
                }
                return result
            }
            isWaitingForIDR = false
            hasStarted = true
            result.isEntryPoint = true
            result.isStart = !wasStarted
        }
        append(entry, now: now)
        result.enqueued = true
        if let dropped = skipIfOverBound() {
            result.didSkip = true
            result.skippedAccessUnits = dropped.accessUnits
            result.skippedBytes = dropped.bytes
            if isWaitingForIDR {
                result.enqueued = false
                result.isEntryPoint = false
                result.isStart = false
                hasStarted = wasStarted
            }
        }
        return result
    }

    /// Queues a backlog at once (the cached GOP for a `gop` join), which must start at an IDR.
    /// The bounds grow by the backlog's own span and size until the reader has caught up.
    /// Returns false, queuing nothing, when the backlog does not start at an IDR.
    public mutating func enqueueBacklog(_ backlog: [QueuedAccessUnit], now: UInt64) -> Bool {
        guard let first = backlog.first, first.isIDR, let last = backlog.last else { return false }
        graceLagNs = last.mediaTimeNs(since: first)
        graceBytes = backlog.reduce(0) { $0 + $1.byteCount }
        isWaitingForIDR = false
        hasStarted = true
        for entry in backlog { append(entry, now: now) }
        return true
    }

    /// The NAL units of the head access unit, which is now in flight: the owner writes them and
    /// reports with `didWrite`. Nil when the queue is empty. Must not be called while the head
    /// is already in flight.
    public mutating func beginWrite() -> [NALUnit]? {
        precondition(!isHeadInFlight, "the head access unit is already being written")
        guard head < entries.count else { return nil }
        isHeadInFlight = true
        return entries[head].nalUnits
    }

    /// Records bytes written of the in-flight access unit; `finished` pops it.
    public mutating func didWrite(bytes: Int, finished: Bool, now: UInt64) {
        if bytes > 0 {
            bytesWritten += bytes
            lastProgressNs = now
        }
        guard finished else { return }
        precondition(isHeadInFlight, "no access unit is being written")
        isHeadInFlight = false
        queuedBytes -= entries[head].byteCount
        head += 1
        if head == entries.count {
            entries.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64 && head * 2 >= entries.count {
            entries.removeFirst(head)
            head = 0
        }
        clearGraceIfCaughtUp()
    }

    /// True when there is something to write and the reader made no progress for `timeoutNs`.
    public func isTimedOut(now: UInt64, timeoutNs: UInt64) -> Bool {
        !isEmpty && now >= lastProgressNs && now - lastProgressNs >= timeoutNs
    }

    // MARK: - Bounds

    private mutating func append(_ entry: QueuedAccessUnit, now: UInt64) {
        if isEmpty { lastProgressNs = max(lastProgressNs, now) }
        entries.append(entry)
        queuedBytes += entry.byteCount
    }

    private var isOverHighMarks: Bool {
        lagNs > limits.maxLagNs + graceLagNs || queuedBytes > limits.maxBytes + graceBytes
    }

    private func isUnderLowMarks(adding entry: QueuedAccessUnit) -> Bool {
        let lag = entries[head...].first.map { entry.mediaTimeNs(since: $0) } ?? 0
        return lag <= limits.lowLagNs && queuedBytes <= limits.lowBytes
    }

    private mutating func clearGraceIfCaughtUp() {
        if lagNs <= limits.maxLagNs && queuedBytes <= limits.maxBytes {
            graceLagNs = 0
            graceBytes = 0
        }
    }

    /// Drops what the bound requires; returns what was dropped, or nil when under the bound.
    private mutating func skipIfOverBound() -> (accessUnits: Int, bytes: Int)? {
        clearGraceIfCaughtUp()
        guard isOverHighMarks else { return nil }
        graceLagNs = 0
        graceBytes = 0
        let firstDroppable = head + (isHeadInFlight ? 1 : 0)
        var dropped = (accessUnits: 0, bytes: 0)
        // Keep the newest queued IDR and what follows it, if that is under the bound.
        if let idr = entries[firstDroppable...].lastIndex(where: \.isIDR), idr > firstDroppable {
            dropped = drop(firstDroppable..<idr)
        }
        if isOverHighMarks {
            let rest = drop(firstDroppable..<entries.count)
            dropped.accessUnits += rest.accessUnits
            dropped.bytes += rest.bytes
            isWaitingForIDR = true
        }
        stats.skips += 1
        stats.skippedAccessUnits += dropped.accessUnits
        stats.skippedBytes += dropped.bytes
        return dropped
    }

    private mutating func drop(_ range: Range<Int>) -> (accessUnits: Int, bytes: Int) {
        let bytes = entries[range].reduce(0) { $0 + $1.byteCount }
        entries.removeSubrange(range)
        queuedBytes -= bytes
        return (range.count, bytes)
    }
}
