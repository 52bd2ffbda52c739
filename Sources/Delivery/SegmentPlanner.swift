import Media

/// Decides where segment files begin: at an IDR, so every segment plays alone.
///
/// Rules, checked at each IDR once a segment is open:
/// - after a reconnect (marked by the caller): rotate;
/// - the resolution changed: rotate;
/// - `segmentDuration` of media time passed since the segment began: rotate;
/// - the segment holds `maxBytes` or more: rotate.
/// Access units before the first IDR, and between a reconnect and the next IDR, cannot be
/// decoded from the segment's start: they are skipped.
///
/// Pure: the caller (a segment sink) performs the file operations the decisions ask for.
public struct SegmentPlanner: Sendable {
    public struct Config: Sendable, Equatable {
        /// Media time per segment (rotation waits for the first IDR at or past it).
        public var segmentDuration: MediaTime
        /// Rotate at the first IDR once a segment holds this many bytes; nil for no limit.
        public var maxBytes: Int?

        public init(segmentDuration: MediaTime = .seconds(5), maxBytes: Int? = nil) {
            self.segmentDuration = segmentDuration
            self.maxBytes = maxBytes
        }
    }

    /// What the planner needs to know of one access unit.
    public struct Unit: Sendable, Equatable {
        public var isIDR: Bool
        /// Media time (timestamp SEI, else counted or arrival time).
        public var mediaTime: MediaTime
        public var bytes: Int
        public var resolution: Resolution?

        public init(isIDR: Bool, mediaTime: MediaTime, bytes: Int, resolution: Resolution? = nil) {
            self.isIDR = isIDR
            self.mediaTime = mediaTime
            self.bytes = bytes
            self.resolution = resolution
        }
    }

    public enum RotateReason: String, Sendable, Equatable {
        case duration, size, resolutionChange = "resolution-change", reconnect
    }

    public enum Decision: Sendable, Equatable {
        /// No segment is open and this access unit cannot start one: drop it.
        case skip
        /// Open the first segment with this access unit.
        case start
        /// Close the current segment and open a new one with this access unit.
        case rotate(RotateReason)
        /// Append to the current segment.
        case append
    }

    public let config: Config
    private var isOpen = false
    private var reconnected = false
    private var segmentStart = MediaTime.zero
    private var segmentBytes = 0
    private var segmentResolution: Resolution?

    public init(config: Config = Config()) {
        self.config = config
    }

    /// The stream was cut and resumed: the next IDR begins a new segment, and nothing before
    /// it is kept.
    public mutating func markReconnect() {
        if isOpen { reconnected = true }
    }

    /// Decides for one access unit, in stream order.
    public mutating func plan(_ unit: Unit) -> Decision {
        guard isOpen else {
            guard unit.isIDR else { return .skip }
            begin(unit)
            return .start
        }
        if !unit.isIDR {
            if reconnected { return .skip }
            add(unit)
            return .append
        }
        let reason: RotateReason?
        if reconnected {
            reason = .reconnect
        } else if let was = segmentResolution, let now = unit.resolution, was != now {
            reason = .resolutionChange
        } else if unit.mediaTime - segmentStart >= config.segmentDuration {
            reason = .duration
        } else if let maxBytes = config.maxBytes, segmentBytes >= maxBytes {
            reason = .size
        } else {
            reason = nil
        }
        guard let reason else {
            add(unit)
            return .append
        }
        begin(unit)
        return .rotate(reason)
    }

    private mutating func begin(_ unit: Unit) {
        isOpen = true
        reconnected = false
        segmentStart = unit.mediaTime
        segmentBytes = unit.bytes
        segmentResolution = unit.resolution ?? segmentResolution
    }

    private mutating func add(_ unit: Unit) {
        // Media time that went backwards without a reconnect (a restarted source): count the
        // segment's duration from here rather than rotating at every IDR or never.
        if unit.mediaTime < segmentStart { segmentStart = unit.mediaTime }
        segmentBytes += unit.bytes
    }
}
