/// An access unit placed in media time, as every sink gets it: from `consume`'s input (the
/// `MediaClock` decides the time) and from `produce`'s encoder (the timestamp SEI's).
/// Immutable and `Sendable`: every sink's queue holds the same value (the bytes are shared).
public struct TimedUnit: Sendable {
    public let unit: AccessUnit
    /// Where it sits in media time (90 kHz ticks): `consume`'s `MediaClock`, or the timestamp
    /// SEI of what `produce` encoded.
    public let mediaTime: MediaTime
    /// Monotonic nanoseconds when it was received (0 for an access unit `produce` encoded).
    public let arrivalNs: UInt64
    /// True for the first access unit after a gap (a skip or a reconnect): a sink writes
    /// `unit.nalUnitsForEntry`, so a decoder can start here.
    public var resumes: Bool

    public init(unit: AccessUnit, mediaTime: MediaTime, arrivalNs: UInt64, resumes: Bool = false) {
        self.unit = unit
        self.mediaTime = mediaTime
        self.arrivalNs = arrivalNs
        self.resumes = resumes
    }

    /// An access unit `produce` just encoded: its media time is its timestamp SEI's.
    public init(encoded unit: AccessUnit) {
        self.init(unit: unit, mediaTime: unit.timestamp?.mediaTime ?? .zero, arrivalNs: 0)
    }

    /// True when a decoder can start at this access unit: an IDR with its SPS and PPS
    /// (carried, or known from earlier in the same connection).
    public var isEntryPoint: Bool { unit.canStartDecoding }

    /// The NAL units to write: the access unit as received, or with its parameter sets
    /// in front when it resumes the stream.
    public var nalUnits: [NALUnit] { resumes ? unit.nalUnitsForEntry : unit.nalUnits }
}
