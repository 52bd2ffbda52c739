/// Decides which frames go to the encoder so that at most `rate` frames a second do.
///
/// Pure: it sees only the times and sequence numbers it is given.
///
/// Slots lie on a grid `t0 + k * interval` from the first frame's time. A frame is kept
/// when its time reaches the next slot (less a quarter interval of tolerance for jitter);
/// the next slot is then the first one more than that tolerance after the frame. So 60 fps
/// in with 30 out keeps exactly every other frame, and 30 in with 30 out keeps all of them
/// even when capture times jitter.
///
/// Drops are counted by reason:
/// - `rate`: the frame came before its slot (the source is faster than the target).
/// - `late`: the source skipped frames because the encoder was behind; a live source
///   shows this as a gap in the frame sequence numbers.
public struct Pacer: Sendable {
    public struct Drops: Sendable, Hashable {
        public var rate: UInt64 = 0
        public var late: UInt64 = 0
        public var total: UInt64 { rate + late }
        public init() {}
    }

    public let rate: FrameRate
    public private(set) var drops = Drops()
    public private(set) var kept: UInt64 = 0

    private var origin: Int64?
    private var nextSlot: Int64 = 0
    private var lastSequence: UInt64?

    public init(rate: FrameRate) { self.rate = rate }

    /// One frame at `timeNs` (media time, or capture time for live sources), with the
    /// source's sequence number. Returns true when the frame should be encoded.
    public mutating func admit(timeNs: Int64, sequence: UInt64) -> Bool {
        if let last = lastSequence, sequence > last + 1 { drops.late += sequence - last - 1 }
        lastSequence = sequence
        let tolerance = rate.nanoseconds(ofFrame: 1) / 4
        guard let origin else {
            origin = timeNs
            nextSlot = 1
            kept += 1
            return true
        }
        let elapsed = timeNs - origin
        guard elapsed >= rate.nanoseconds(ofFrame: nextSlot) - tolerance else {
            drops.rate += 1
            return false
        }
        // First slot whose early edge lies after this frame.
        let k = Int64(Int128(elapsed + tolerance) * Int128(rate.numerator) / (1_000_000_000 * Int128(rate.denominator))) + 1
        nextSlot = Swift.max(nextSlot + 1, k)
        kept += 1
        return true
    }

    /// Frames the source skipped that no later frame will show as a gap: the run ended at a
    /// frame past its end, and those skipped before it that fell inside it are late too.
    public mutating func countLate(_ frames: UInt64) { drops.late += frames }

    /// Same for a frame, by capture time when `live`, else by media time.
    public mutating func admit(_ frame: Frame, live: Bool) -> Bool {
        let time = live ? Int64(frame.captureTimeNs) : Int64(Int128(frame.pts90k) * 1_000_000_000 / 90_000)
        return admit(timeNs: time, sequence: frame.sequence)
    }
}
