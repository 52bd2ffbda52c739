import Media

/// One access unit waiting in a reader's queue: one object per published access unit,
/// shared by the GOP cache and every reader's queue (each holds one reference, not a copy of
/// its arrays and forms). Nothing here copies a frame. Immutable.
public final class QueuedAccessUnit: Sendable {
    public let accessUnit: AccessUnit
    /// What goes on the wire: for an IDR, its SPS and PPS are in front (`nalUnitsForEntry`).
    public let nalUnits: [NALUnit]
    public let byteCount: Int
    /// Media time (90 kHz): the one it was published with (a relay's media time: the SEI's,
    /// else its media clock, kept rising across a source's restart), else the timestamp
    /// SEI's when the access unit carries one, else nil.
    public let pts90k: UInt64?
    /// When the access unit reached the relay, on the relay's clock.
    public let arrivalNs: UInt64
    /// The same moment in other wire forms, each made once for the readers that want it
    /// (MPEG-TS for a `ts:` listener's): opaque here, empty when no reader wants one.
    public let forms: WireForms

    public init(_ accessUnit: AccessUnit, arrivalNs: UInt64, pts90k: UInt64? = nil, forms: WireForms = WireForms()) {
        self.accessUnit = accessUnit
        self.nalUnits = accessUnit.isIDR ? accessUnit.nalUnitsForEntry : accessUnit.nalUnits
        self.byteCount = nalUnits.reduce(0) { $0 + $1.wire.count }
        self.pts90k = pts90k ?? accessUnit.timestamp?.pts90k
        self.arrivalNs = arrivalNs
        self.forms = forms
    }

    public var isIDR: Bool { accessUnit.isIDR }
}

extension QueuedAccessUnit: SkipQueueElement {
    /// Every IDR goes out with its SPS and PPS in front: a reader can start at any.
    public var isEntryPoint: Bool { isIDR }
    public var isMarker: Bool { false }

    /// Media time from `earlier` to `self`: from the timestamps when both have one, else from
    /// the arrival times. Never negative.
    public func mediaTimeNs(since earlier: QueuedAccessUnit) -> UInt64 {
        if let now = pts90k, let then = earlier.pts90k {
            return now > then ? (now - then) * 100_000 / 9 : 0
        }
        return arrivalNs > earlier.arrivalNs ? arrivalNs - earlier.arrivalNs : 0
    }

    /// A reader's resuming IDR carries its parameter sets already: no marker.
    public static func gapMarker(skipped: Int) -> QueuedAccessUnit? { nil }
    public func resuming() -> QueuedAccessUnit { self }
}

/// The queue of one TCP reader of the relay: a `SkipQueue` that drops what is queued to
/// stay within its bound (`.dropToEntry`) and starts at an IDR. Owned by the `Broadcaster`,
/// on the loop thread.
public typealias ReaderQueue = SkipQueue<QueuedAccessUnit>

extension SkipQueue where Element == QueuedAccessUnit {
    /// A reader's queue: waits for its first IDR, drops to the next one when over `limits`.
    public init(limits: QueueLimits = QueueLimits(), now: UInt64) {
        self.init(policy: .dropToEntry, limits: limits, waitsForEntryPoint: true, now: now)
    }

    /// Offers one live access unit to the reader.
    public mutating func enqueue(_ accessUnit: AccessUnit, arrivalNs now: UInt64) -> Offer {
        offer(QueuedAccessUnit(accessUnit, arrivalNs: now), now: now)
    }

    /// The NAL units of the head access unit, which is now in flight: the owner writes them and
    /// reports with `didWrite`. Nil when the queue is empty.
    public mutating func beginWrite() -> [NALUnit]? {
        startWrite()?.nalUnits
    }
}
