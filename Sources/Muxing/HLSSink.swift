import Clocks
import FIFO
import Delivery
import Media
import Output

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `--hls DIR`: the stream as HLS with Low-Latency parts, on its own sink thread. One
/// fragmented MP4 muxer (`Muxer(fragmentedInMemory:)`) runs for the whole stream (a new one,
/// and a new header, when the parameter sets change); its header (ftyp + moov) is
/// `init.mp4`, and each fragment it is told to close (moof + mdat, every track) is a
/// partial segment of at most `--hls-part`, appended to its segment's file and named by the
/// playlist as a byte range of it: every byte is written once. A segment (`segmentN.m4s`)
/// begins at an IDR: `SegmentPlanner` decides where, on the packets as they are written.
/// The segment being written is `segmentN.m4s.part`, renamed when whole (the `--web`
/// listener serves the parts in it as they are published); the header and the playlist
/// (`index.m3u8`, rewritten at each segment's end) are written as `.part` and renamed.
/// `HLSLive` shows the playlist to the `--web` listener at every part.
public final class HLSSink: AccessUnitSink {
    public struct Config: Sendable {
        public var directory: String
        public var partTarget: MediaTime
        /// Segments begin at the first IDR at or past this much media time.
        public var segmentDuration: MediaTime
        /// `EXT-X-TARGETDURATION`, whole seconds.
        public var targetDuration: Int
        public var window: MediaTime
        public var countedClock: Bool

        public init(directory: String, partTarget: MediaTime, segmentDuration: MediaTime, targetDuration: Int, window: MediaTime, countedClock: Bool = false) {
            self.directory = directory
            self.partTarget = partTarget
            self.segmentDuration = segmentDuration
            self.targetDuration = targetDuration
            self.window = window
            self.countedClock = countedClock
        }
    }

    /// A segment finished, or one came out longer than the target duration (said once).
    public enum Event: Sendable {
        case segment(name: String, duration: MediaTime, parts: Int)
        case overlong(MediaTime)
    }

    /// What changes at a packet: a new upstream from here (its wall-clock anchor), or new
    /// parameter sets (the entry point a new header is made from).
    private enum Mark {
        case reconnect(wallAnchorNs: Int64)
        case header(TimedUnit)
    }

    public let name = "hls"
    public var carriesAudio: Bool { true }
    private let config: Config
    private let live: HLSLive
    private let onEvent: @Sendable (Event) -> Void
    private var muxer: Muxer?
    private var timer: PacketTimer
    private var audio = AudioInterleaver()
    private var audioFormat: AudioFormat?
    private var planner: SegmentPlanner
    private var playlist: HLSPlaylist
    /// The header being written (`initName(generation:)`); nil once its file is there.
    private var headerPending: String?
    private var generation = 0
    /// What the muxer wrote before its first moof came (the header is all of it).
    private var beforeHeader: [UInt8] = []
    private var parameterSets: [[UInt8]] = []
    /// Marks by the index of the packet they apply at (packets counted as the timer hands them out).
    private var marks = FIFO<(packet: Int, mark: Mark)>()
    private var packetsTaken = 0
    private var awaitingAnchor = false
    private var discontinuityNext = false
    /// The open segment's `.part` file.
    private var segmentFD: Int32 = -1
    private var partDuration: Int64 = 0
    private var partIndependent = false
    /// A part cut but not published yet: its segment is long enough to end, and the next
    /// picture says whether it does (an IDR) or goes on, which the preload hint must name.
    private var heldBack = false
    /// Wall clock minus container time (ns), from the first access unit (and again from the
    /// first of each new upstream): program date-times.
    private var wallAnchorNs: Int64 = 0
    /// Files of segments that left the window, deleted a window later.
    private var retired: [String] = []
    private var saidOverlong = false

    public init(config: Config, live: HLSLive, onEvent: @escaping @Sendable (Event) -> Void) throws(SinkError) {
        self.config = config
        self.live = live
        self.onEvent = onEvent
        timer = PacketTimer(countedClock: config.countedClock, waitsForDuration: true)
        planner = SegmentPlanner(config: SegmentPlanner.Config(segmentDuration: config.segmentDuration))
        playlist = HLSPlaylist(targetDuration: config.targetDuration, partTarget: config.partTarget, window: config.window,
                               segmentDuration: config.segmentDuration)
        if mkdir(config.directory, 0o755) != 0 && errno != EEXIST {
            throw SinkError(sink: "hls", message: "\(config.directory): \(String(cString: strerror(errno)))")
        }
        guard access(config.directory, W_OK) == 0 else { throw SinkError(sink: "hls", message: "\(config.directory): not writable") }
        if let problem = FFmpegLibraries.problem { throw SinkError(sink: "hls", message: problem) }
    }

    public func write(_ items: ArraySlice<SinkItem>) throws(SinkError) -> WriteReport {
        var report = WriteReport()
        do {
            for item in items {
                switch item {
                case .unit(let unit):
                    if try add(unit) { report.units += 1 } else { report.dropped += 1 }
                case .discontinuity:
                    // A new upstream: its first IDR begins a segment after EXT-X-DISCONTINUITY.
                    timer.discontinuity()
                    awaitingAnchor = true
                case .gap:
                    timer.discontinuity()
                case .audioFormat(let format):
                    audioFormat = format
                case .audio(let packet):
                    if let muxer {
                        try audio.add(packet, format: audioFormat, offset: timer.mediaToContainer, muxer: muxer)
                    } else {
                        report.droppedAudio += 1  // before the first picture: no header yet
                    }
                }
            }
            try writeSettled(finishing: false)
        } catch {
            throw SinkError(sink: "hls", message: error.message)
        }
        let (written, dropped) = audio.takeCounts()
        report.audioPackets = written
        report.droppedAudio += dropped
        return report
    }

    public func close() throws(SinkError) {
        do {
            if muxer != nil {
                try writeSettled(finishing: true)
                if let muxer { try audio.write(upTo: nil, muxer: muxer) }
                try endSegment()
            }
        } catch {
            throw SinkError(sink: "hls", message: error.message)
        }
        playlist.end()
        try? writePlaylist()
        publishHeldBack()
    }

    public func audioCountsAfterLastWrite() -> (written: Int, dropped: Int) { audio.takeCounts() }

    /// Places one access unit; false when it came before the first entry point.
    private func add(_ unit: TimedUnit) throws(MuxError) -> Bool {
        if muxer == nil {
            guard unit.isEntryPoint else { return false }
            muxer = try makeMuxer(unit)
            awaitingAnchor = true
        }
        let index = packetsTaken + timer.pendingCount
        if unit.isEntryPoint {
            let sets = Self.parameterSets(of: unit)
            if sets != parameterSets {
                if !parameterSets.isEmpty { marks.append((index, Mark.header(unit))) }
                parameterSets = sets
            }
        }
        timer.add(unit)
        if awaitingAnchor, let offset = timer.mediaToContainer {
            awaitingAnchor = false
            let wall = unit.unit.timestamp.map { Int64(clamping: $0.captureTimeNs) } ?? Int64(clamping: WallClock.nanoseconds)
            let anchor = wall - (unit.mediaTime.ticks &+ offset) * 100_000 / 9
            if index == 0 { wallAnchorNs = anchor } else { marks.append((index, Mark.reconnect(wallAnchorNs: anchor))) }
        }
        return true
    }

    private func makeMuxer(_ entry: TimedUnit) throws(MuxError) -> Muxer {
        let muxer = try Muxer(fragmentedInMemory: (), continuing: generation > 0)
        muxer.audio = audioFormat
        try muxer.writeHeader(entry: entry, fallbackFrameRate: nil)
        headerPending = HLSPlaylist.initName(generation: generation)
        return muxer
    }

    /// The parameter sets an entry point carries (or was known to use), as bytes.
    private static func parameterSets(of unit: TimedUnit) -> [[UInt8]] {
        let carried = unit.nalUnits.filter(unit.unit.codec.isParameterSet)
        return (carried.isEmpty ? unit.unit.parameterSets : carried).map { Array($0.body) }
    }

    /// Writes the packets whose times are known, cutting parts and segments on the way.
    private func writeSettled(finishing: Bool) throws(MuxError) {
        guard muxer != nil else { return }
        try timer.take(finishing: finishing) { (packet) throws(MuxError) in
            var header: TimedUnit?
            while let first = marks.first, first.packet <= packetsTaken {
                _ = marks.popFirst()
                switch first.mark {
                case .reconnect(let anchor):
                    wallAnchorNs = anchor
                    planner.markReconnect()
                    discontinuityNext = true
                case .header(let entry):
                    header = entry
                    planner.markReconnect()  // the IDR that brings them begins a segment
                }
            }
            packetsTaken += 1
            // A picture that lasted longer than a part (the source stalled, or a loaded
            // machine skipped pictures) is cut to a part's length, so that no part outlasts
            // PART-TARGET; the rest is a hole in the time line, which the next part's decode
            // time says. It is then alone in its part (cut before and after it below).
            var packet = packet
            packet.duration = min(packet.duration, config.partTarget.ticks)
            try place(packet, newHeader: header)
        }
    }

    private func place(_ packet: PacketTimer.Packet, newHeader: TimedUnit?) throws(MuxError) {
        let decision = planner.plan(SegmentPlanner.Unit(isIDR: packet.keyframe, mediaTime: MediaTime(ticks: packet.dts), bytes: 0))
        if heldBack, decision == .append || decision == .skip {
            if decision == .append { playlist.openSegmentContinues() }
            publishHeldBack()
        }
        switch decision {
        case .skip: return
        case .start: try beginSegment(at: packet.dts)
        case .rotate:
            if let muxer { try audio.write(upTo: packet.dts, muxer: muxer) }
            try endSegment()
            if let newHeader {
                // New parameter sets: a new header (EXT-X-MAP) and times of its own.
                _ = try? muxer?.finish()
                generation += 1
                muxer = try makeMuxer(newHeader)
                discontinuityNext = true
            }
            try beginSegment(at: packet.dts)
        case .append:
            if partDuration > 0 && partDuration + packet.duration > config.partTarget.ticks { try cutPart() }
        }
        guard let muxer else { return }
        if partDuration == 0 { partIndependent = packet.keyframe }
        try audio.write(upTo: packet.dts, muxer: muxer)
        try muxer.write(packet.nalUnits, pts: packet.pts, dts: packet.dts, duration: packet.duration, keyframe: packet.keyframe)
        partDuration += max(packet.duration, 1)
        if partDuration >= config.partTarget.ticks { try cutPart() }
    }

    private func beginSegment(at dts: Int64) throws(MuxError) {
        let programDate = UInt64(clamping: wallAnchorNs + dts * 100_000 / 9)
        playlist.beginSegment(programDateNs: programDate, discontinuity: discontinuityNext,
                              initName: HLSPlaylist.initName(generation: generation))
        discontinuityNext = false
        let path = "\(config.directory)/\(playlist.segments.last!.name).part"
        segmentFD = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard segmentFD >= 0 else { throw MuxError("\(path): \(String(cString: strerror(errno)))", code: errno) }
    }

    /// Closes the fragment being written as the open segment's next part: its bytes go to
    /// the segment's file once, and the playlist names them as a byte range of it.
    private func cutPart() throws(MuxError) {
        guard let muxer, partDuration > 0 else { return }
        try muxer.cutFragment()
        var bytes = try muxer.takeOutput()[...]
        if let header = headerPending {
            // Everything before the first moof is the header.
            if !beforeHeader.isEmpty { bytes = (beforeHeader + bytes)[...] }
            guard let moof = Self.firstBox("moof", in: bytes) else {
                beforeHeader = Array(bytes)
                return
            }
            beforeHeader = []
            try writeFile(header, bytes[..<moof])
            bytes = bytes[moof...]
            headerPending = nil
        }
        try writeAll(segmentFD, bytes)
        playlist.addPart(duration: MediaTime(ticks: partDuration), independent: partIndependent, length: bytes.count)
        partDuration = 0
        heldBack = true
        if playlist.hint?.sequence == playlist.lastSequence { publishHeldBack() }
    }

    private func publishHeldBack() {
        heldBack = false
        live.publish(playlist)
    }

    /// Closes the open segment: its last part, then its file under its name.
    private func endSegment() throws(MuxError) {
        guard segmentFD >= 0, let segment = playlist.segments.last else { return }
        try cutPart()
        _ = Glibc.close(segmentFD)
        segmentFD = -1
        let path = "\(config.directory)/\(segment.name)"
        guard rename(path + ".part", path) == 0 else { throw MuxError("\(path): \(String(cString: strerror(errno)))", code: errno) }
        let removed = playlist.completeSegment()
        let done = playlist.segments.last { $0.sequence == segment.sequence }!
        onEvent(.segment(name: done.name, duration: done.duration, parts: done.parts.count))
        if done.duration.seconds.rounded() > Double(config.targetDuration) && !saidOverlong {
            saidOverlong = true
            onEvent(.overlong(done.duration))
        }
        retire(removed)
        try writePlaylist()
        publishHeldBack()
    }

    /// Deletes the files of segments that left the window a window ago (a reader that got
    /// the playlist before they left may still fetch them); headers
    /// (a few hundred bytes each, after a change of parameter sets) stay.
    private func retire(_ removed: [HLSPlaylist.Segment]) {
        retired += removed.map(\.name)
        while retired.count > max(3, playlist.segments.count) {
            unlink("\(config.directory)/\(retired.removeFirst())")
        }
    }

    private func writePlaylist() throws(MuxError) {
        guard playlist.isPlayable else { return }
        try writeFile(HLSPlaylist.playlistName, Array(playlist.render().utf8)[...])
    }

    /// Writes `NAME.part` whole, then renames it to `NAME`: a reader never sees half a file.
    private func writeFile(_ name: String, _ bytes: ArraySlice<UInt8>) throws(MuxError) {
        let path = "\(config.directory)/\(name)"
        let fd = open(path + ".part", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw MuxError("\(path).part: \(String(cString: strerror(errno)))", code: errno) }
        defer { _ = Glibc.close(fd) }
        try writeAll(fd, bytes)
        guard rename(path + ".part", path) == 0 else { throw MuxError("\(path): \(String(cString: strerror(errno)))", code: errno) }
    }

    private func writeAll(_ fd: Int32, _ bytes: ArraySlice<UInt8>) throws(MuxError) {
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let n = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw MuxError("hls: write: \(String(cString: strerror(errno)))", code: errno)
            }
            offset += n
        }
    }

    /// The offset of the first top-level box of `type` (MP4 box headers: size, type).
    static func firstBox(_ type: String, in bytes: ArraySlice<UInt8>) -> Int? {
        let wanted = Array(type.utf8)
        var offset = bytes.startIndex
        while offset + 8 <= bytes.endIndex {
            var size = Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            if Array(bytes[offset + 4 ..< offset + 8]) == wanted { return offset }
            if size == 1, offset + 16 <= bytes.endIndex {
                size = bytes[offset + 8 ..< offset + 16].reduce(0) { $0 << 8 | Int($1) }
            }
            guard size >= 8 else { return nil }
            offset += size
        }
        return nil
    }
}
