import Media

/// The media playlist of `--hls DIR` (RFC 8216bis, Low-Latency HLS): the segments in the
/// sliding window, the partial segments of the newest ones, and the hint of the next part.
/// Pure: the writer (`HLSSink`) adds parts and segments as it cuts them, the `--web`
/// listener renders it and asks whether a blocked reload can be answered (`has`).
///
/// Names: `init.mp4` (the CMAF header; `initN.mp4` for the Nth new one, after a change of
/// the parameter sets), `segmentN.m4s` (N, the media sequence number). A part is a byte
/// range of its segment's file (`BYTERANGE="length@offset"`), so every byte is written
/// once; the preload hint names the segment and the offset the next part will begin at
/// (`BYTERANGE-START`).
public struct HLSPlaylist: Sendable, Equatable {
    public struct Part: Sendable, Equatable {
        /// Its segment's file.
        public let uri: String
        /// Where it is in that file.
        public let offset: Int
        public let length: Int
        public let duration: MediaTime
        /// Begins with an IDR: a decoder can start here.
        public let independent: Bool
    }

    public struct Segment: Sendable, Equatable {
        /// Its media sequence number.
        public let sequence: Int
        public var name: String { "segment\(sequence).m4s" }
        public var parts: [Part] = []
        /// Wall-clock time of its first picture (ns since the epoch): `EXT-X-PROGRAM-DATE-TIME`.
        public let programDateNs: UInt64
        /// Its timestamps do not follow the segment before (a new upstream): `EXT-X-DISCONTINUITY`.
        public let discontinuity: Bool
        /// The header it needs (`EXT-X-MAP`).
        public let initName: String
        /// False while it is being written (the last one).
        public var complete = false
        public var duration: MediaTime { parts.reduce(.zero) { $0 + $1.duration } }
        /// The bytes its parts hold: the length of its file once written.
        public var bytes: Int { parts.last.map { $0.offset + $0.length } ?? 0 }
    }

    public static let initName = "init.mp4"
    public static let playlistName = "index.m3u8"
    /// The name of the `generation`th header: `init.mp4`, then `init1.mp4`, `init2.mp4`...
    public static func initName(generation: Int) -> String { generation == 0 ? initName : "init\(generation).mp4" }

    /// `EXT-X-TARGETDURATION`, whole seconds: no segment is longer (rounded).
    public let targetDuration: Int
    /// `EXT-X-PART-INF:PART-TARGET`: no part is longer.
    public let partTarget: MediaTime
    /// Media time the complete segments of the window cover at least.
    public let window: MediaTime
    /// Media time after which a segment ends at its next IDR: where the hint expects the
    /// next part (the same segment, or the next one).
    public let segmentDuration: MediaTime
    public private(set) var segments: [Segment] = []
    /// Discontinuities that left the window: `EXT-X-DISCONTINUITY-SEQUENCE`.
    public private(set) var discontinuitySequence = 0
    /// True once the writer ended: no preload hint, `EXT-X-ENDLIST`.
    public private(set) var ended = false

    public init(targetDuration: Int, partTarget: MediaTime, window: MediaTime, segmentDuration: MediaTime? = nil) {
        self.targetDuration = max(1, targetDuration)
        self.partTarget = partTarget
        self.window = window
        self.segmentDuration = segmentDuration ?? .seconds(Double(max(1, targetDuration)))
    }

    /// Where the next part is expected: its segment's sequence number and the offset in its
    /// file. The open segment at its end until it holds `segmentDuration`, then the next
    /// segment at 0 (its next IDR ends it), unless the writer saw the open one go on
    /// (`openSegmentContinues`). nil once ended.
    public var hint: (sequence: Int, offset: Int)? {
        guard !ended, let last = segments.last else { return nil }
        if !last.complete && nextInOpenSegment { return (last.sequence, last.bytes) }
        return (last.sequence + 1, 0)
    }
    private var nextInOpenSegment = true

    /// The open segment, long enough to end, goes on (the next picture was no IDR): its
    /// next part is hinted in it.
    public mutating func openSegmentContinues() {
        nextInOpenSegment = true
    }
    /// True once a segment is complete: players (GStreamer's `hlsdemux`) take a playlist
    /// with no `EXTINF` for a multivariant one, so none is shown before.
    public var isPlayable: Bool { ended || segments.contains(where: \.complete) }
    /// The media sequence number of the newest segment (complete or not); -1 before any.
    public var lastSequence: Int { segments.last?.sequence ?? -1 }

    /// Opens the next segment (the previous one must be complete).
    public mutating func beginSegment(programDateNs: UInt64, discontinuity: Bool = false, initName: String = Self.initName) {
        segments.append(Segment(sequence: lastSequence + 1, programDateNs: programDateNs, discontinuity: discontinuity, initName: initName))
        nextInOpenSegment = true
    }

    /// One more part of the open segment: the next `length` bytes of its file.
    public mutating func addPart(duration: MediaTime, independent: Bool, length: Int) {
        precondition(segments.last.map { !$0.complete } ?? false, "a part needs an open segment")
        let last = segments.count - 1
        let segment = segments[last]
        segments[last].parts.append(Part(uri: segment.name, offset: segment.bytes, length: length, duration: duration, independent: independent))
        nextInOpenSegment = segments[last].duration < segmentDuration
    }

    /// Completes the open segment and slides the window: returns the segments that left
    /// it (their files may go once no reader can still be fetching them).
    public mutating func completeSegment() -> [Segment] {
        guard let last = segments.indices.last, !segments[last].complete else { return [] }
        segments[last].complete = true
        var removed: [Segment] = []
        // Keep the newest complete segments that cover the window, and at least three.
        while segments.count > 3 {
            let rest = segments.dropFirst().filter(\.complete).reduce(MediaTime.zero) { $0 + $1.duration }
            guard rest >= window else { break }
            let gone = segments.removeFirst()
            if gone.discontinuity { discontinuitySequence += 1 }
            removed.append(gone)
        }
        return removed
    }

    /// The writer stopped: the playlist ends (`EXT-X-ENDLIST`), an empty open segment goes.
    public mutating func end() {
        if let last = segments.last, !last.complete {
            if last.parts.isEmpty { segments.removeLast() } else { segments[segments.count - 1].complete = true }
        }
        ended = true
    }

    /// Whether a reload blocked on `_HLS_msn=sequence` (and `_HLS_part=part`) can be answered:
    /// the segment is complete, or (with `part`) that part of it exists. A part past the last
    /// of a complete segment stands for the next segment's first (RFC 8216bis 6.2.5.2).
    public func has(sequence: Int, part: Int?) -> Bool {
        if ended { return true }
        guard let segment = segments.last(where: { $0.sequence == sequence }) else { return sequence < (segments.first?.sequence ?? 0) }
        guard let part else { return segment.complete }
        if part < segment.parts.count { return true }
        return segment.complete && has(sequence: sequence + 1, part: 0)
    }

    /// The segment named `name` while it is in the window (complete or being written).
    public func segment(named name: String) -> Segment? {
        segments.last { $0.name == name }
    }

    /// Segments whose parts are listed: those ending within three target durations of the
    /// playlist's end (RFC 8216bis 4.4.4.9), here the open one and the two before it.
    private var firstWithParts: Int { max(0, segments.count - 3) }

    /// The playlist's text.
    public func render() -> String {
        var lines = [
            "#EXTM3U",
            "#EXT-X-VERSION:9",
            "#EXT-X-TARGETDURATION:\(targetDuration)",
            "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=\(Self.seconds(MediaTime(ticks: partTarget.ticks * 3)))",
            "#EXT-X-PART-INF:PART-TARGET=\(Self.seconds(partTarget))",
            "#EXT-X-MEDIA-SEQUENCE:\(segments.first?.sequence ?? 0)",
        ]
        if discontinuitySequence > 0 { lines.append("#EXT-X-DISCONTINUITY-SEQUENCE:\(discontinuitySequence)") }
        lines.append("#EXT-X-INDEPENDENT-SEGMENTS")
        if segments.isEmpty { lines.append("#EXT-X-MAP:URI=\"\(Self.initName)\"") }
        var map: String?
        for (index, segment) in segments.enumerated() {
            if segment.discontinuity { lines.append("#EXT-X-DISCONTINUITY") }
            if segment.initName != map {
                map = segment.initName
                lines.append("#EXT-X-MAP:URI=\"\(segment.initName)\"")
            }
            lines.append("#EXT-X-PROGRAM-DATE-TIME:\(Self.iso8601(segment.programDateNs))")
            if index >= firstWithParts {
                for part in segment.parts {
                    lines.append("#EXT-X-PART:DURATION=\(Self.seconds(part.duration)),URI=\"\(part.uri)\",BYTERANGE=\"\(part.length)@\(part.offset)\""
                                 + (part.independent ? ",INDEPENDENT=YES" : ""))
                }
            }
            if segment.complete {
                lines.append("#EXTINF:\(Self.seconds(segment.duration)),")
                lines.append(segment.name)
            }
        }
        if ended {
            lines.append("#EXT-X-ENDLIST")
        } else if let hint {
            lines.append("#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"segment\(hint.sequence).m4s\",BYTERANGE-START=\(hint.offset)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `0.200`: seconds with milliseconds.
    static func seconds(_ time: MediaTime) -> String {
        let ms = (time.ticks * 1000 + MediaTime.ticksPerSecond / 2) / MediaTime.ticksPerSecond
        let fraction = String(ms % 1000)
        return "\(ms / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }

    /// `2026-12-01T18:11:13.123Z` (RFC 3339, UTC, milliseconds).
    public static func iso8601(_ ns: UInt64) -> String {
        let ms = ns / 1_000_000
        let (date, time) = CivilTime.utc(seconds: Int64(ms / 1000))
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let milli = Int(ms % 1000)
        let m = milli < 10 ? "00\(milli)" : milli < 100 ? "0\(milli)" : "\(milli)"
        return "\(date.year)-\(two(date.month))-\(two(date.day))T\(two(time.hour)):\(two(time.minute)):\(two(time.second)).\(m)Z"
    }
}

/// Calendar arithmetic for RFC 3339 times, without Foundation (proleptic Gregorian, UTC).
public enum CivilTime {
    /// The date and time of `seconds` since the epoch.
    public static func utc(seconds: Int64) -> (date: (year: Int, month: Int, day: Int), time: (hour: Int, minute: Int, second: Int)) {
        let days = Int(seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400)
        let rest = Int(seconds - Int64(days) * 86_400)
        // Howard Hinnant's civil_from_days.
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        return ((year, month, day), (rest / 3600, rest % 3600 / 60, rest % 60))
    }

    /// Seconds since the epoch of a UTC date and time (days_from_civil).
    public static func seconds(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        return Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second)
    }
}
