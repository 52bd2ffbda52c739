import FIFO
/// Decode and presentation times for a container, in decode order, for streams whose
/// pictures may be coded out of presentation order (B-frames).
///
/// Each access unit comes with its decode time (`dts`, 90 kHz ticks, strictly rising: the
/// media time nalcast gives it) and, when it has one, its place in presentation order
/// (`AccessUnitOrder.Info.key`, comparable within a run that starts at an IDR or MMCO 5).
///
/// The rule: the access units of a run, sorted by key, take the decode times of the run's
/// access units in turn, shifted by a constant `delay` (in access units) chosen so that no
/// picture is presented before it is decoded:
///
///     pts(unit) = dts of the access unit at index (run start + rank in run + delay)
///
/// A stream without reordering has rank = index in run and delay 0, so pts = dts. Times
/// follow the decode times, gaps included: a dropped frame stays a jump in time. An access
/// unit without a key (the timestamp SEI gave its time, or its slice header is unreadable)
/// has pts = dts.
///
/// A rank is final once `window` more access units of its run have come (no decoder holds
/// more pictures back than a DPB holds: 16 frames, 32 fields) or the run has ended; so
/// access units come out at most `window` + `delay` behind, and at `finish` all of them.
/// Pure; one thread.
public struct PresentationTimeline: Sendable {
    public struct Times: Sendable, Equatable {
        public var dts: Int64
        public var pts: Int64
        public init(dts: Int64, pts: Int64) {
            self.dts = dts
            self.pts = pts
        }
    }

    private struct Entry: Sendable {
        var index: Int
        var run: Int
        var key: Int?
    }

    public let window: Int
    /// Decode times by access unit index, from `slotBase`.
    private var slots: [Int64] = []
    private var slotBase = 0
    private var count = 0
    private var pending = FIFO<Entry>()
    /// The keys seen in each run still needed, sorted; by the run's first index.
    private var keysByRun: [Int: [Int]] = [:]
    private var currentRun = 0
    /// Chosen from the first `window` access units (or all, when fewer); only grows.
    public private(set) var delay: Int?

    public init(window: Int = 32) {
        precondition(window > 0)
        self.window = window
    }

    /// Access units pushed and not yet taken by `pop`.
    public var pendingCount: Int { pending.count }

    /// The next access unit in decode order.
    public mutating func push(dts: Int64, key: Int?, startsRun: Bool) {
        if startsRun && count > 0 { currentRun = count }
        slots.append(dts)
        pending.append(Entry(index: count, run: currentRun, key: key))
        if let key { Self.insert(key, into: &keysByRun[currentRun, default: []]) }
        count += 1
    }

    /// The times of the oldest access unit not taken yet, when they are settled (always,
    /// with `finishing`: nothing more will come).
    public mutating func pop(finishing: Bool = false) -> Times? {
        guard let entry = pending.first else { return nil }
        let dts = slots[entry.index - slotBase]
        guard let key = entry.key else {
            take()
            return Times(dts: dts, pts: dts)
        }
        let runEnded = entry.run != currentRun
        guard finishing || runEnded || count - 1 - entry.index >= window else { return nil }
        if delay == nil {
            guard finishing || runEnded || count > window else { return nil }
            var d = 0
            for e in pending.elements {
                guard let k = e.key else { continue }
                d = max(d, e.index - e.run - rank(k, run: e.run))
            }
            delay = d
        }
        let r = rank(key, run: entry.run)
        let needed = entry.index - entry.run - r
        if needed > delay! { delay = needed }
        let slot = entry.run + r + delay!
        let pts: Int64
        if slot < count {
            pts = slots[slot - slotBase]
        } else if finishing {
            // Past the last access unit: continue at its step.
            let last = slots[slots.count - 1]
            let step = slots.count >= 2 ? max(1, last - slots[slots.count - 2]) : 3000
            pts = last + Int64(slot - (count - 1)) * step
        } else {
            return nil
        }
        take()
        return Times(dts: dts, pts: max(pts, dts))
    }

    /// Drops the head entry and what no pending entry needs any more.
    private mutating func take() {
        _ = pending.popFirst()
        let oldestRun = pending.first?.run ?? currentRun
        let keepFrom = min(oldestRun, currentRun)
        if keepFrom - slotBase >= 64 {
            slots.removeFirst(keepFrom - slotBase)
            slotBase = keepFrom
        }
        if keysByRun.count > 1 {
            for run in keysByRun.keys where run < keepFrom { keysByRun[run] = nil }
        }
    }

    /// How many keys of `run` sort before `key`.
    private func rank(_ key: Int, run: Int) -> Int {
        guard let keys = keysByRun[run] else { return 0 }
        var lo = 0
        var hi = keys.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if keys[mid] < key { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    private static func insert(_ key: Int, into keys: inout [Int]) {
        var lo = 0
        var hi = keys.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if keys[mid] < key { lo = mid + 1 } else { hi = mid }
        }
        keys.insert(key, at: lo)
    }
}
