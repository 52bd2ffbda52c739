import FIFO
import Clocks

/// What a `SkipQueue` holds: an access unit (with its size, whether a decoder can start
/// there, its media time), or a marker that is not an access unit.
public protocol SkipQueueElement: Sendable {
    /// Bytes counted against the queue's bound; 0 for a marker.
    var byteCount: Int { get }
    /// A reader can start (or resume) decoding here: an IDR, with its SPS and PPS.
    var isEntryPoint: Bool { get }
    /// Not an access unit (a sink's discontinuity or gap marker): always queued, never
    /// skipped nor counted, whatever the bound.
    var isMarker: Bool { get }
    /// Media time from `earlier` to `self`, never negative; 0 when unknown.
    func mediaTimeNs(since earlier: Self) -> UInt64
    /// The marker to queue in front of the entry point that ends a skip, saying how many
    /// access units were skipped; nil when the element type has none (a reader's resuming IDR
    /// speaks for itself).
    static func gapMarker(skipped: Int) -> Self?
    /// The element as the first after a skip (a sink then writes SPS/PPS in front).
    func resuming() -> Self
}

/// How a `SkipQueue` stays within its bound.
public enum SkipPolicy: String, Sendable {
    /// A live TCP reader: over the bound, drop what is queued (never the access unit being
    /// written) up to the newest queued entry point, or all of it, then take nothing but an
    /// entry point. The reader gets the freshest picture it can decode.
    case dropToEntry = "drop"
    /// A sink behind live input: the access unit that would cross the bound is skipped, and
    /// so is everything after it up to an entry point; what is queued stays queued.
    case skipToEntry = "skip"
    /// A sink behind file input: nothing is skipped; `offer` answers `.full` and the producer
    /// of items waits.
    case wait
}

/// The bounds of a `SkipQueue`. The high marks start a skip; a queue that skipped resumes
/// (at an entry point) only once what is still queued is at or under the low marks, so a
/// reader stuck on one access unit does not bounce between skipping and resuming.
public struct QueueLimits: Sendable, Equatable {
    /// High mark for the media time between the oldest and the newest queued access unit.
    public var maxLagNs: UInt64
    /// High mark for the queued bytes.
    public var maxBytes: Int
    /// The low marks as a fraction of the high marks.
    public var lowWatermark: Double
    /// A low mark for bytes given as such, instead of `lowWatermark` × `maxBytes`.
    public var lowBytesMark: Int?

    public init(maxLagNs: UInt64 = Nanoseconds.milliseconds(500), maxBytes: Int = 8 << 20, lowWatermark: Double = 0.5) {
        precondition(maxBytes > 0 && lowWatermark >= 0 && lowWatermark <= 1)
        self.maxLagNs = maxLagNs
        self.maxBytes = maxBytes
        self.lowWatermark = lowWatermark
    }

    /// Bounded by bytes only: `high`, and `low` (half of `high` unless given).
    public static func bytes(high: Int, low: Int? = nil) -> QueueLimits {
        precondition(high > 0)
        var limits = QueueLimits(maxLagNs: .max, maxBytes: high)
        limits.lowBytesMark = Swift.min(high, low ?? high / 2)
        return limits
    }

    public var lowLagNs: UInt64 { maxLagNs == .max ? .max : UInt64(Double(maxLagNs) * lowWatermark) }
    public var lowBytes: Int { lowBytesMark ?? Int(Double(maxBytes) * lowWatermark) }
}

/// Counts of what a reader missed because it was too slow.
public struct SkipStats: Sendable, Equatable {
    /// Times the reader went over its bound and skipped to the next entry point.
    public var skips = 0
    /// Access units the reader never got after it started (dropped from its queue, or not
    /// queued while it waited for an entry point).
    public var skippedAccessUnits = 0
    public var skippedBytes = 0

    public init() {}
}

/// The bounded FIFO in front of one reader: a TCP client of the relay (`ReaderQueue`, on the
/// loop thread) or a consumer sink (`SinkQueue`, under its runner's lock). Over its bound it
/// skips to the next entry point (IDR with SPS/PPS), so what the reader gets stays
/// decodable; see `SkipPolicy` for what is skipped. Under `.skipToEntry` and `.wait`, a queue
/// holding no bytes takes one access unit whatever its size: nothing is too big to pass to a
/// sink. Markers always pass.
///
/// The head may be in flight (`startWrite`: its owner has started writing it). It is never
/// dropped: a partly written access unit must be finished or the stream breaks.
///
/// A value type with no locks: its owner serializes use.
public struct SkipQueue<Element: SkipQueueElement>: Sendable {
    public typealias Policy = SkipPolicy

    /// What happened to one element offered to the queue.
    public struct Offer: Sendable, Equatable {
        public enum Outcome: Sendable, Equatable {
            case queued
            /// Not queued: the reader is behind, or waits for its first entry point.
            case skipped
            /// Not queued: the queue is full and the policy is `.wait`.
            case full
        }

        public var outcome: Outcome = .skipped
        /// The reader starts (or resumes after a skip) at this access unit.
        public var isEntryPoint = false
        /// This entry point is the reader's first: it joined and starts here.
        public var isStart = false
        /// The bound was crossed: the reader skipped. The counts say what was dropped, this
        /// access unit included when it was not kept. Without `didSkip`, a count of 1 is this
        /// access unit, passed over because the reader waits for the entry point after a skip.
        public var didSkip = false
        public var skippedAccessUnits = 0
        public var skippedBytes = 0

        public init() {}

        /// The element is in the queue (it may still have caused a skip of older ones).
        public var enqueued: Bool { outcome == .queued }
    }

    public let policy: Policy
    public let limits: QueueLimits

    private var entries = FIFO<Element>()
    /// True while the head is being written by the queue's owner.
    public private(set) var isHeadInFlight = false
    /// True while only an entry point is taken: at first for a reader that must start at one,
    /// and after a skip.
    public private(set) var isWaitingForEntry: Bool
    /// True once the reader got its first entry point (at once for a queue that need not wait for one).
    public private(set) var hasStarted: Bool
    public private(set) var queuedBytes = 0
    public private(set) var stats = SkipStats()
    /// Last time the reader made progress (bytes written), or the queue went from empty to not.
    public private(set) var lastProgressNs: UInt64
    /// Access units skipped since the last entry point: what the next gap marker says.
    private var skippedSinceEntry = 0

    /// Extra room for a backlog given at join (`gop` policy), until the reader catches up.
    private var graceLagNs: UInt64 = 0
    private var graceBytes = 0

    /// A queue; with `waitsForEntryPoint` it takes nothing before the first entry point.
    public init(policy: Policy, limits: QueueLimits, waitsForEntryPoint: Bool, now: UInt64 = 0) {
        self.policy = policy
        self.limits = limits
        self.isWaitingForEntry = waitsForEntryPoint
        self.hasStarted = !waitsForEntryPoint
        self.lastProgressNs = now
    }

    /// Elements queued, markers and the in-flight head included.
    public var count: Int { entries.count }
    public var isEmpty: Bool { count == 0 }
    /// True while a reader that had started skips to the next entry point.
    public var isSkipping: Bool { hasStarted && isWaitingForEntry }

    /// Media time between the oldest and the newest queued element.
    public var lagNs: UInt64 {
        // One entry or none (a reader at the live edge): no lag, and no entries copied out.
        guard entries.count > 1, let first = entries.first, let last = entries.last else { return 0 }
        return last.mediaTimeNs(since: first)
    }

    /// Within half the lag bound (or half the byte bound) of passing its bound, grace
    /// included: the owner of a reader that holds its queue back by choice (a paced WebRTC
    /// viewer) writes on rather than let the next element skip it to the next entry point.
    public var isNearItsBound: Bool {
        lagNs.saturatingAdd(limits.maxLagNs / 2) > limits.maxLagNs.saturatingAdd(graceLagNs)
            || queuedBytes + limits.maxBytes / 2 > limits.maxBytes + graceBytes
    }

    /// The queued elements, oldest first (for inspection and tests).
    public var queued: ArraySlice<Element> { entries.elements }

    // MARK: - In

    /// Offers the next element from the source (`now`: its arrival, on the owner's clock).
    public mutating func offer(_ element: Element, now: UInt64) -> Offer {
        var result = Offer()
        if element.isMarker {
            append(element, now: now)
            result.outcome = .queued
            return result
        }
        let wasStarted = hasStarted
        // The element as it resumes after a skip, when it does (kept apart so that the
        // common case queues the element it was given, with no copy of it made first).
        var resumed: Element?
        if isWaitingForEntry {
            guard element.isEntryPoint, !hasStarted || isUnderLowMarks(adding: element) else {
                if hasStarted {
                    countSkipped(element)
                    result.skippedAccessUnits = 1
                    result.skippedBytes = element.byteCount
                }
                return result
            }
            isWaitingForEntry = false
            hasStarted = true
            result.isEntryPoint = true
            result.isStart = !wasStarted
            if wasStarted {
                if let gap = Element.gapMarker(skipped: skippedSinceEntry) { append(gap, now: now) }
                resumed = element.resuming()
            }
            skippedSinceEntry = 0
        } else if policy != .dropToEntry && queuedBytes > 0 && isOverHighMarks(adding: element) {
            if policy == .wait {
                result.outcome = .full
                return result
            }
            // .skipToEntry: this one and what follows, up to an entry point.
            isWaitingForEntry = true
            stats.skips += 1
            countSkipped(element)
            result.didSkip = true
            result.skippedAccessUnits = 1
            result.skippedBytes = element.byteCount
            return result
        }
        append(resumed ?? element, now: now)
        result.outcome = .queued
        if policy == .dropToEntry, let dropped = dropIfOverBound() {
            result.didSkip = true
            result.skippedAccessUnits = dropped.accessUnits
            result.skippedBytes = dropped.bytes
            if isWaitingForEntry {
                result.outcome = .skipped
                result.isEntryPoint = false
                result.isStart = false
                hasStarted = wasStarted
            }
        }
        return result
    }

    /// True when `element` would be queued alone and could go out at once: nothing is
    /// queued or in flight, the queue has started (it waits for no entry point) and the
    /// element alone is within the bounds. Its owner may then write it and, once it is out
    /// whole, say so with `wroteAtOnce` instead of queuing it.
    public func takesAtOnce(_ element: Element) -> Bool {
        entries.isEmpty && !isHeadInFlight && !isWaitingForEntry && !element.isMarker && !isOverHighMarks(adding: element)
    }

    /// An element `takesAtOnce` allowed was written whole at `now`: the queue is as `offer`,
    /// `startWrite` and `didWrite` would leave it (empty, its progress at `now`, no grace
    /// left), without the element passing through it.
    public mutating func wroteAtOnce(now: UInt64) {
        lastProgressNs = Swift.max(lastProgressNs, now)
        graceLagNs = 0
        graceBytes = 0
    }

    /// Queues a backlog at once (the cached GOP for a `gop` join), which must start at an
    /// entry point. The bounds grow by the backlog's own span and size until the reader has
    /// caught up. Returns false, queuing nothing, when the backlog does not start at one.
    public mutating func enqueueBacklog(_ backlog: [Element], now: UInt64) -> Bool {
        guard let first = backlog.first, first.isEntryPoint, let last = backlog.last else { return false }
        graceLagNs = last.mediaTimeNs(since: first)
        graceBytes = backlog.reduce(0) { $0 + $1.byteCount }
        isWaitingForEntry = false
        hasStarted = true
        for element in backlog { append(element, now: now) }
        return true
    }

    // MARK: - Out

    /// The head, now in flight: the owner writes it and reports with `didWrite`. Nil when the
    /// queue is empty. Must not be called while the head is already in flight.
    public mutating func startWrite() -> Element? {
        precondition(!isHeadInFlight, "the head is already being written")
        guard let first = entries.first else { return nil }
        isHeadInFlight = true
        return first
    }

    /// Records bytes written of the in-flight head; `finished` pops it.
    public mutating func didWrite(bytes: Int, finished: Bool, now: UInt64) {
        if bytes > 0 { lastProgressNs = now }
        guard finished else { return }
        precondition(isHeadInFlight, "nothing is being written")
        isHeadInFlight = false
        queuedBytes -= entries.popFirst()!.byteCount
        clearGraceIfCaughtUp()
    }

    /// Takes up to `maxItems` elements from the front at once (a sink's batch).
    public mutating func take(maxItems: Int) -> ArraySlice<Element> {
        precondition(!isHeadInFlight, "the head is being written")
        let out = entries.removeFirst(maxItems)
        for element in out { queuedBytes -= element.byteCount }
        return out
    }

    /// True when there is something to write and the reader made no progress for `timeoutNs`.
    public func isTimedOut(now: UInt64, timeoutNs: UInt64) -> Bool {
        !isEmpty && now >= lastProgressNs && now - lastProgressNs >= timeoutNs
    }

    // MARK: - Bounds

    private mutating func append(_ element: Element, now: UInt64) {
        if isEmpty { lastProgressNs = Swift.max(lastProgressNs, now) }
        entries.append(element)
        queuedBytes += element.byteCount
    }

    private mutating func countSkipped(_ element: Element) {
        stats.skippedAccessUnits += 1
        stats.skippedBytes += element.byteCount
        skippedSinceEntry += 1
    }

    private var isOverHighMarks: Bool {
        lagNs > limits.maxLagNs.saturatingAdd(graceLagNs) || queuedBytes > limits.maxBytes + graceBytes
    }

    private func isOverHighMarks(adding element: Element) -> Bool {
        let lag = entries.first.map { element.mediaTimeNs(since: $0) } ?? 0
        return lag > limits.maxLagNs.saturatingAdd(graceLagNs) || queuedBytes + element.byteCount > limits.maxBytes + graceBytes
    }

    private func isUnderLowMarks(adding element: Element) -> Bool {
        let lag = entries.first.map { element.mediaTimeNs(since: $0) } ?? 0
        return lag <= limits.lowLagNs && queuedBytes <= limits.lowBytes
    }

    private mutating func clearGraceIfCaughtUp() {
        guard graceLagNs != 0 || graceBytes != 0 else { return }
        if lagNs <= limits.maxLagNs && queuedBytes <= limits.maxBytes {
            graceLagNs = 0
            graceBytes = 0
        }
    }

    /// `.dropToEntry`: drops what the bound requires; returns what was dropped, or nil when
    /// under the bound.
    private mutating func dropIfOverBound() -> (accessUnits: Int, bytes: Int)? {
        clearGraceIfCaughtUp()
        guard isOverHighMarks else { return nil }
        graceLagNs = 0
        graceBytes = 0
        let firstDroppable = isHeadInFlight ? 1 : 0
        var dropped = (accessUnits: 0, bytes: 0)
        // Keep the newest queued entry point and what follows it, if that is under the bound.
        if let entry = entries.elements.dropFirst(firstDroppable).lastIndex(where: \.isEntryPoint).map({ $0 - entries.elements.startIndex }), entry > firstDroppable {
            dropped = drop(firstDroppable..<entry)
        }
        if isOverHighMarks {
            let rest = drop(firstDroppable..<entries.count)
            dropped.accessUnits += rest.accessUnits
            dropped.bytes += rest.bytes
            isWaitingForEntry = true
        }
        stats.skips += 1
        stats.skippedAccessUnits += dropped.accessUnits
        stats.skippedBytes += dropped.bytes
        skippedSinceEntry += dropped.accessUnits
        return dropped
    }

    private mutating func drop(_ range: Range<Int>) -> (accessUnits: Int, bytes: Int) {
        let dropped = entries.elements.dropFirst(range.lowerBound).prefix(range.count)
        let bytes = dropped.reduce(0) { $0 + $1.byteCount }
        let units = dropped.reduce(0) { $0 + ($1.isMarker ? 0 : 1) }
        entries.removeSubrange(range)
        queuedBytes -= bytes
        return (units, bytes)
    }
}

extension UInt64 {
    fileprivate func saturatingAdd(_ other: UInt64) -> UInt64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}
