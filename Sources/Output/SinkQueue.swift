import Delivery

/// The bounded queue in front of one sink: a `SkipQueue` of `SinkItem`s. `SinkRunner` does
/// the locking and the waiting.
///
/// Bounded by bytes, with watermarks: past `highWater` a live queue (`.skipToEntry`) skips
/// the access unit that would cross it and everything after, up to an entry point (IDR with
/// SPS/PPS) that arrives once the backlog is down to `lowWater`; that access unit is marked
/// `resumes` and a `.gap` item in front tells the sink how many were skipped. A `.wait` queue
/// never skips: the producer of items waits (for file input, which has no live edge to keep
/// up with). A queue always takes one item when it holds no bytes, whatever its size, so
/// nothing is too big to pass; markers always pass.
public typealias SinkQueue = SkipQueue<SinkItem>

extension SinkItem: SkipQueueElement {
    public var byteCount: Int {
        switch self {
        case .unit(let received): return received.unit.byteCount
        case .audio(let packet): return packet.data.count
        case .discontinuity, .gap, .audioFormat: return 0
        }
    }

    public var isEntryPoint: Bool {
        if case .unit(let received) = self { return received.isEntryPoint }
        return false
    }

    /// Audio packets are not markers: a sink that skips to catch up skips them too (and
    /// counts them), up to the next video entry point.
    public var isMarker: Bool {
        switch self {
        case .unit, .audio: return false
        case .discontinuity, .gap, .audioFormat: return true
        }
    }

    /// Sinks are bounded by bytes only.
    public func mediaTimeNs(since earlier: SinkItem) -> UInt64 { 0 }

    public static func gapMarker(skipped: Int) -> SinkItem? { .gap(skipped: skipped) }

    public func resuming() -> SinkItem {
        guard case .unit(var received) = self else { return self }
        received.resumes = true
        return .unit(received)
    }
}

extension SkipQueue where Element == SinkItem {
    /// A sink's queue: `.skipToEntry` behind live input, `.wait` behind a file.
    public init(policy: Policy, highWater: Int, lowWater: Int? = nil) {
        precondition(policy != .dropToEntry, "a sink keeps what is queued: .skipToEntry or .wait")
        self.init(policy: policy, limits: .bytes(high: highWater, low: lowWater), waitsForEntryPoint: false)
    }

    /// Offers the next item from the reader.
    public mutating func offer(_ item: SinkItem) -> Offer.Outcome {
        offer(item, now: 0).outcome
    }
}
