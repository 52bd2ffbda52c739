import Clocks
import Media

/// A reader of the broadcast, as the `Broadcaster` knows it.
public struct ReaderID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }
    public var description: String { "reader-\(rawValue)" }
    public static func < (a: ReaderID, b: ReaderID) -> Bool { a.rawValue < b.rawValue }
}

extension RandomAccessCollection where Index == Int {
    /// Where the element with reader id `id` is, in a collection in ascending order of ids
    /// (a server's readers: ids only grow, so joining appends), or nil; `idOf` reads an
    /// element's id. A binary search.
    @inlinable
    public func index(ofReader id: ReaderID, _ idOf: (Element) -> ReaderID) -> Int? {
        var low = startIndex
        var high = endIndex
        while low < high {
            let middle = low + (high - low) / 2
            if idOf(self[middle]) < id { low = middle + 1 } else { high = middle }
        }
        return low < endIndex && idOf(self[low]) == id ? low : nil
    }
}

/// Where a new reader starts (`--join`).
public enum JoinPolicy: String, Sendable, CaseIterable {
    /// Ask the encoder for a fresh IDR (coalesced) and start there: live at once, no backlog.
    case idr
    /// Send the cached GOP from its IDR at once, then live: nothing missed, starts behind live.
    /// Without a cached GOP (none yet, or too long to cache) the reader waits as for `next`.
    case gop
    /// Wait for the next natural IDR.
    case next
}

public struct BroadcasterConfig: Sendable, Equatable {
    public var joinPolicy: JoinPolicy
    /// How far a reader may fall behind before it skips to the next IDR (the `--reader-*`
    /// options): the bounds of its queue.
    public var readerLimits: QueueLimits
    /// A reader with something to write that writes nothing for this long is closed.
    public var readerTimeoutNs: UInt64
    /// At most one IDR request per this interval.
    public var idrMinIntervalNs: UInt64
    public var maxReaders: Int
    /// The GOP cache gives up (until the next IDR) past this much media time...
    public var gopMaxDurationNs: UInt64
    /// ...or this many bytes.
    public var gopMaxBytes: Int

    public init(
        joinPolicy: JoinPolicy = .idr,
        readerLimits: QueueLimits = QueueLimits(),
        readerTimeoutNs: UInt64 = 10_000_000_000,
        idrMinIntervalNs: UInt64 = Nanoseconds.milliseconds(250),
        maxReaders: Int = 16,
        gopMaxDurationNs: UInt64 = 10_000_000_000,
        gopMaxBytes: Int = 16 << 20
    ) {
        self.joinPolicy = joinPolicy
        self.readerLimits = readerLimits
        self.readerTimeoutNs = readerTimeoutNs
        self.idrMinIntervalNs = idrMinIntervalNs
        self.maxReaders = maxReaders
        self.gopMaxDurationNs = gopMaxDurationNs
        self.gopMaxBytes = gopMaxBytes
    }
}

/// Something the owner of a `Broadcaster` has to act on or may want to report.
public enum BroadcastEvent: Sendable, Equatable {
    /// Ask the encoder for an IDR (the producer calls its force-IDR).
    case requestIDR
    /// The reader's first entry point (SPS + PPS + IDR) is queued, `latencyNs` after it joined.
    case readerStarted(ReaderID, latencyNs: UInt64)
    /// The reader fell too far behind and skipped to the next IDR.
    case readerSkipped(ReaderID, accessUnits: Int, bytes: Int)
    /// After a skip, an access unit the reader does not get while it waits for the IDR.
    case readerPassedOver(ReaderID, accessUnits: Int, bytes: Int)
    /// The reader made no progress for the reader timeout. It is already removed: close its
    /// connection.
    case readerTimedOut(ReaderID)
}

/// Fans one stream of access units out to many readers, each with its own bounded queue of
/// shared references.
///
/// Pure: it performs no I/O and keeps no threads. Time comes from a `Clock`; what the owner
/// must do comes back as `BroadcastEvent`s. The owner (the producer's loop-side glue) calls it
/// from one thread only.
///
/// Writing to a reader: `nextToWrite(id)` hands out the head access unit's NAL units, the
/// owner writes them, and reports with `didWrite(id, bytes:, finished:)`.
public struct Broadcaster: Sendable {
    public let config: BroadcasterConfig
    private let clock: any Clock

    private struct Reader: Sendable {
        let id: ReaderID
        var queue: ReaderQueue
        let policy: JoinPolicy
        let joinedAtNs: UInt64
        /// When it last asked to start again at the cached GOP (`restartAtCachedGOP`).
        var lastRestartNs: UInt64?
        /// It asked while an access unit of its was being written: the restart happens when
        /// that unit is out (`didWrite`), not half-way through it.
        var restartPending = false
    }

    /// The readers in ascending order of their ids (the order events come in): ids only
    /// grow, so a new reader is appended and the order holds without sorting. Found by id
    /// with a binary search (`index(of:)`), and walked in place for every access unit: no
    /// hashing and no copy of a reader's queue out of a table and back for each one.
    private var readers: [Reader] = []
    /// The index last found: a server asks about one reader three times in a row for each
    /// access unit (the unit to write, whether there is another, what was written) and walks
    /// the readers in the order of their ids, so most lookups are this index or the next one
    /// instead of a search.
    private var lastIndex = 0
    private var nextID: UInt64 = 1

    /// The current GOP, from its IDR; empty when unavailable.
    private var gop: [QueuedAccessUnit] = []
    private var gopBytes = 0

    private var idrRequestPending = false
    private var idrRequestDeferred = false
    private var lastIDRRequestNs: UInt64?

    /// Readers refused because `maxReaders` were connected.
    public private(set) var refusedReaders = 0
    /// IDR requests returned as events.
    public private(set) var idrRequests = 0
    /// Access units published.
    public private(set) var published = 0

    public init(config: BroadcasterConfig = BroadcasterConfig(), clock: any Clock) {
        self.config = config
        self.clock = clock
    }

    /// What `addReader` did.
    public struct JoinOutcome: Sendable, Equatable {
        /// Nil when the reader was refused (`maxReaders`).
        public let id: ReaderID?
        public let events: [BroadcastEvent]
    }

    public var readerCount: Int { readers.count }
    public var readerIDs: [ReaderID] { readers.map(\.id) }

    /// The cached GOP, from its IDR; empty when there is none or it grew past the cache bounds.
    public var cachedGOP: [AccessUnit] { gop.map(\.accessUnit) }

    /// The reader's queue, for stats and inspection.
    public func queue(of id: ReaderID) -> ReaderQueue? { index(of: id).map { readers[$0].queue } }

    /// Adds a reader with the configured join policy, or `policy`.
    public mutating func addReader(policy: JoinPolicy? = nil) -> JoinOutcome {
        guard readers.count < config.maxReaders else {
            refusedReaders += 1
            return JoinOutcome(id: nil, events: [])
        }
        let now = clock.nowNanoseconds
        let policy = policy ?? config.joinPolicy
        let id = ReaderID(nextID)
        nextID += 1
        var reader = Reader(id: id, queue: ReaderQueue(limits: config.readerLimits, now: now), policy: policy, joinedAtNs: now)
        var events: [BroadcastEvent] = []
        switch policy {
        case .idr:
            events += requestIDR(now: now)
        case .gop:
            if reader.queue.enqueueBacklog(gop, now: now) {
                events.append(.readerStarted(id, latencyNs: 0))
            }
        case .next:
            break
        }
        // Ids only grow: the newest reader sorts last.
        readers.append(reader)
        return JoinOutcome(id: id, events: events)
    }

    /// Forgets the cached GOP: the source it came from is gone (a relay's input was lost),
    /// and a reader joining now must not be sent its old pictures as if they were live. It
    /// waits for the next IDR, which the source's return brings. Readers already there keep
    /// their queues.
    public mutating func forgetCachedGOP() {
        gop = []
        gopBytes = 0
    }

    /// Forgets a reader (its connection closed). Unknown ids are ignored.
    public mutating func removeReader(_ id: ReaderID) {
        guard let index = index(of: id) else { return }
        readers.remove(at: index)
    }

    /// Hands one access unit to every reader. The capture side never waits: slow readers skip.
    /// `pts90k` is the media time readers get with it, in place of its timestamp SEI's (a
    /// relay's media clock, which also times streams without a SEI). `forms` are the same
    /// moment in the wire forms the owner's readers want (carried, never read, here).
    public mutating func publish(_ accessUnit: AccessUnit, pts90k: UInt64? = nil, forms: WireForms = WireForms()) -> [BroadcastEvent] {
        publish(accessUnit, pts90k: pts90k, forms: forms) { _, _ in nil }.events
    }

    /// What `publish(_:pts90k:forms:writingAtOnce:)` did.
    public struct Publication: Sendable {
        public var events: [BroadcastEvent] = []
        /// The readers the access unit was not written to at once, in the order of their
        /// ids: their owner writes what they have queued as they take it.
        public var waiting: [ReaderID] = []
    }

    /// `publish`, with the access unit written at once to every reader in step with the
    /// stream (its queue holds nothing, it has started, and the unit alone is within its
    /// bounds: `SkipQueue.takesAtOnce`), in the one walk over the readers: `write` writes it
    /// to the reader and says what it wrote (as `didWrite` would be told), or nil when the
    /// reader does not take it now. A unit written whole never enters the reader's queue;
    /// one written in part is the reader's unit in flight, finished by `didWrite`. `write`
    /// must not call the `Broadcaster`. A reader that starts at this unit (its first entry
    /// point, reported with its burst) is never written at once.
    public mutating func publish(
        _ accessUnit: AccessUnit, pts90k: UInt64? = nil, forms: WireForms = WireForms(),
        writingAtOnce write: (ReaderID, QueuedAccessUnit) -> (bytes: Int, finished: Bool)?
    ) -> Publication {
        let now = clock.nowNanoseconds
        published += 1
        // One entry for the cache and every reader's queue: its wire list (SPS and PPS in
        // front of an IDR) and byte count are worked out once, not once per reader.
        let entry = QueuedAccessUnit(accessUnit, arrivalNs: now, pts90k: pts90k, forms: forms)
        cache(entry)
        if accessUnit.isIDR {
            idrRequestPending = false
            idrRequestDeferred = false
        }
        var publication = Publication()
        // The readers walked in place: the array's uniqueness is checked once for the walk,
        // not at each reader's queue (`write` must not call the `Broadcaster`).
        readers.withUnsafeMutableBufferPointer { readers in
            for index in readers.indices {
                let id = readers[index].id
                if readers[index].queue.takesAtOnce(entry), let written = write(id, entry) {
                    if written.finished {
                        readers[index].queue.wroteAtOnce(now: now)
                    } else {
                        // Part of it: queued alone (as `takesAtOnce` found), in flight.
                        _ = readers[index].queue.offer(entry, now: now)
                        _ = readers[index].queue.startWrite()
                        readers[index].queue.didWrite(bytes: written.bytes, finished: false, now: now)
                    }
                    continue
                }
                let result = readers[index].queue.offer(entry, now: now)
                if result.didSkip {
                    publication.events.append(.readerSkipped(id, accessUnits: result.skippedAccessUnits, bytes: result.skippedBytes))
                } else if result.skippedAccessUnits > 0 {
                    publication.events.append(.readerPassedOver(id, accessUnits: result.skippedAccessUnits, bytes: result.skippedBytes))
                }
                if result.isStart {
                    let joined = readers[index].joinedAtNs
                    publication.events.append(.readerStarted(id, latencyNs: now - joined))
                }
                publication.waiting.append(id)
            }
        }
        return publication
    }

    /// The NAL units of the next access unit to write to the reader, now in flight; nil when
    /// there is nothing to write (or the reader is unknown). Call again only after `didWrite`
    /// with `finished: true`.
    public mutating func nextToWrite(_ id: ReaderID) -> [NALUnit]? {
        guard let index = locate(id) else { return nil }
        return readers[index].queue.beginWrite()
    }

    /// The head access unit itself, now in flight, for an owner that frames it (a WebSocket
    /// viewer's message header needs its keyframe flag and timestamp): writes
    /// `nalUnits` and reports with `didWrite`. Nil when the queue is empty.
    public mutating func nextUnitToWrite(_ id: ReaderID) -> QueuedAccessUnit? {
        guard let index = locate(id) else { return nil }
        return readers[index].queue.startWrite()
    }

    /// Reports bytes written to the reader; `finished` when the in-flight access unit is all out.
    public mutating func didWrite(_ id: ReaderID, bytes: Int, finished: Bool) {
        guard let index = locate(id) else { return }
        readers[index].queue.didWrite(bytes: bytes, finished: finished, now: clock.nowNanoseconds)
        if finished && readers[index].restartPending {
            readers[index].restartPending = false
            restart(id, now: clock.nowNanoseconds)
        }
    }

    /// A reader lost its picture and asks for an entry point (a WebRTC viewer's PLI or FIR):
    /// an IDR of the encoder, through the same coalescing and `idrMinIntervalNs` as joins.
    public mutating func requestKeyframe() -> [BroadcastEvent] {
        requestIDR(now: clock.nowNanoseconds)
    }

    /// The same for a relay, which has no encoder to ask: the reader's queue starts again at
    /// the cached GOP's IDR (what it had queued is dropped), at most once every
    /// `idrMinIntervalNs` for a reader (a viewer asks again while the GOP is on its way). False
    /// when too soon or when there is no cached GOP; false too when an access unit of the
    /// reader is being written (a paced viewer's, packet by packet): the restart then comes
    /// once that unit is out, at its `didWrite(finished: true)`, whose owner writes on.
    public mutating func restartAtCachedGOP(_ id: ReaderID) -> Bool {
        guard let index = index(of: id) else { return false }
        let now = clock.nowNanoseconds
        if let last = readers[index].lastRestartNs, now - last < config.idrMinIntervalNs { return false }
        readers[index].lastRestartNs = now
        if readers[index].queue.isHeadInFlight {
            readers[index].restartPending = true
            return false
        }
        return restart(id, now: now)
    }

    @discardableResult
    private mutating func restart(_ id: ReaderID, now: UInt64) -> Bool {
        var queue = ReaderQueue(limits: config.readerLimits, now: now)
        guard queue.enqueueBacklog(gop, now: now), let index = index(of: id) else { return false }
        readers[index].queue = queue
        return true
    }

    /// When `tick` next has something to do beyond timeouts (a deferred IDR request).
    public var nextDeadlineNs: UInt64? {
        guard idrRequestDeferred, let last = lastIDRRequestNs else { return nil }
        return last + config.idrMinIntervalNs
    }

    /// Whether `tick` has anything to look at: a deferred IDR request, or a reader with
    /// something queued (only such a reader can time out). False while every reader has
    /// taken what was published: its owner's timer may sleep until this is true again.
    public var needsTicks: Bool {
        idrRequestDeferred || readers.contains { !$0.queue.isEmpty }
    }

    /// Time-driven work: deferred IDR requests and reader timeouts. Call it from a timer
    /// (every few hundred milliseconds, and at `nextDeadlineNs`).
    public mutating func tick() -> [BroadcastEvent] {
        let now = clock.nowNanoseconds
        var events: [BroadcastEvent] = []
        if idrRequestDeferred, let due = nextDeadlineNs, now >= due {
            idrRequestDeferred = false
            events += requestIDR(now: now)
        }
        let timedOut = readers.filter { $0.queue.isTimedOut(now: now, timeoutNs: config.readerTimeoutNs) }.map(\.id)
        for id in timedOut {
            removeReader(id)
            events.append(.readerTimedOut(id))
        }
        return events
    }

    // MARK: - Private

    /// `index(of:)`, trying the index last found and the next one first.
    private mutating func locate(_ id: ReaderID) -> Int? {
        if lastIndex < readers.count && readers[lastIndex].id == id { return lastIndex }
        if lastIndex + 1 < readers.count && readers[lastIndex + 1].id == id {
            lastIndex += 1
            return lastIndex
        }
        guard let index = index(of: id) else { return nil }
        lastIndex = index
        return index
    }

    /// Where the reader `id` is in `readers`, or nil.
    private func index(of id: ReaderID) -> Int? { readers.index(ofReader: id) { $0.id } }

    /// Asks for an IDR unless one is already on its way; too soon after the last request,
    /// defers it to `nextDeadlineNs`.
    private mutating func requestIDR(now: UInt64) -> [BroadcastEvent] {
        if idrRequestPending || idrRequestDeferred { return [] }
        if let last = lastIDRRequestNs, now - last < config.idrMinIntervalNs {
            idrRequestDeferred = true
            return []
        }
        idrRequestPending = true
        lastIDRRequestNs = now
        idrRequests += 1
        return [.requestIDR]
    }

    private mutating func cache(_ entry: QueuedAccessUnit) {
        if entry.isIDR {
            gop = [entry]
            gopBytes = entry.byteCount
            return
        }
        guard let first = gop.first else { return }
        gop.append(entry)
        gopBytes += entry.byteCount
        if gopBytes > config.gopMaxBytes || entry.mediaTimeNs(since: first) > config.gopMaxDurationNs {
            gop = []
            gopBytes = 0
        }
    }
}
