/// The bounded queue in front of one sink, and its decisions. Pure: `SinkRunner` does the
/// locking and the waiting.
///
/// Bounded by bytes, with watermarks: past `highWater` a live queue starts skipping, and
/// skips everything up to an entry point (IDR with SPS/PPS) that arrives once the backlog
/// is down to `lowWater`; that access unit is marked `resumes` and a `.gap` item tells the
/// sink how many were skipped. A `.wait` queue never skips: the producer of items waits
/// (for file input, which has no live edge to keep up with). A queue always takes one item
/// when it is empty, whatever its size, so nothing is too big to pass.
public struct SinkQueue: Sendable {
    public enum Policy: String, Sendable {
        /// Live input: a slow sink skips to the next entry point.
        case skipToEntry = "skip"
        /// File input: the reader waits for the sink.
        case wait
    }

    public enum Offer: Sendable, Equatable {
        case queued
        /// Not queued: the sink is behind (counted in `skippedUnits`).
        case skipped
        /// Not queued: the queue is full and the policy is `.wait`.
        case full
    }

    public let policy: Policy
    public let highWater: Int
    public let lowWater: Int
    public private(set) var bytes = 0
    public private(set) var isSkipping = false
    /// Access units skipped since the queue was made.
    public private(set) var skippedUnits = 0
    /// Times the queue started skipping.
    public private(set) var skipEpisodes = 0
    private var skippedInEpisode = 0
    private var items: [SinkItem] = []
    private var head = 0

    public init(policy: Policy, highWater: Int, lowWater: Int? = nil) {
        precondition(highWater > 0)
        self.policy = policy
        self.highWater = highWater
        self.lowWater = min(highWater, lowWater ?? highWater / 2)
    }

    public var count: Int { items.count - head }
    public var isEmpty: Bool { count == 0 }

    /// Offers the next item from the reader.
    public mutating func offer(_ item: SinkItem) -> Offer {
        guard case .unit(var unit) = item else {
            append(item, bytes: 0)
            return .queued
        }
        let size = unit.unit.byteCount
        if isSkipping {
            guard unit.isEntryPoint && bytes <= lowWater else {
                skip()
                return .skipped
            }
            isSkipping = false
            append(.gap(skipped: skippedInEpisode), bytes: 0)
            skippedInEpisode = 0
            unit.resumes = true
            append(.unit(unit), bytes: size)
            return .queued
        }
        if bytes > 0 && bytes + size > highWater {
            if policy == .wait { return .full }
            isSkipping = true
            skipEpisodes += 1
            skip()
            return .skipped
        }
        append(item, bytes: size)
        return .queued
    }

    /// Takes up to `maxItems` items from the front.
    public mutating func take(maxItems: Int) -> ArraySlice<SinkItem> {
        let n = min(maxItems, count)
        let out = items[head..<(head + n)]
        head += n
        for item in out { if case .unit(let u) = item { bytes -= u.unit.byteCount } }
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 4096 {
            items.removeFirst(head)
            head = 0
        }
        return out
    }

    private mutating func skip() {
        skippedUnits += 1
        skippedInEpisode += 1
    }

    private mutating func append(_ item: SinkItem, bytes size: Int) {
        items.append(item)
        bytes += size
    }
}
