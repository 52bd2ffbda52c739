import Clocks
import FIFO
import Media
import Delivery

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `--segments DIR`: the stream cut into files at IDRs, each starting with SPS, PPS and an
/// IDR, so every file plays alone and consecutive files concatenate into a valid stream.
///
/// Where to cut is `SegmentPlanner`'s decision (duration of media time, size, resolution
/// change, reconnect). A segment is written as `NAME.part` with its index
/// `NAME.part.idx` (see `SegmentRecovery`); when it ends it is flushed, `fsync`ed and renamed
/// to `NAME` (by a `SegmentFinisher`, while the next segment is being written), then
/// `--on-segment` runs and `--keep` deletes the oldest finished files. What goes into each
/// file is its `SegmentWriter`'s, made by the `SegmentFormat` of the configuration: Annex-B
/// as received, or a container.
public final class SegmentSink: AccessUnitSink {
    public struct Config: Sendable {
        public var directory: String
        public var namer: SegmentNamer
        public var planner: SegmentPlanner.Config
        /// Keep at most this many finished segments (nil: all).
        public var keep: Int?
        /// `--on-segment`: the program and its first arguments; the path is appended.
        public var hook: [String]?
        /// fsync each segment (and the directory) before renaming it.
        public var sync: Bool
        /// How each segment is written: Annex-B as received, or a container.
        public var format: SegmentFormat

        public init(directory: String, namer: SegmentNamer, planner: SegmentPlanner.Config, keep: Int? = nil, hook: [String]? = nil, sync: Bool = true,
                    format: SegmentFormat = .annexB) {
            self.format = format
            self.directory = directory
            self.namer = namer
            self.planner = planner
            self.keep = keep
            self.hook = hook
            self.sync = sync
        }
    }

    /// A segment opened or closed.
    public enum Event: Sendable {
        case opened(path: String)
        case closed(SegmentInfo)
        case hookFailed(command: String, message: String)
        /// `--keep` deleted a finished segment.
        case removed(path: String)
    }

    /// A finished segment.
    public struct SegmentInfo: Sendable {
        public let path: String
        public let duration: MediaTime
        public let frames: Int
        public let bytes: Int
        /// Why it ended: `duration`, `size`, `resolution-change`, `reconnect`, `end`.
        public let reason: String
        /// Wall-clock time of its first picture, ns since the epoch: the timestamp SEI's
        /// capture time, else when it was opened.
        public let startTimeNs: UInt64
    }

    public let name = "segments"
    public let config: Config
    private var planner: SegmentPlanner
    private let onEvent: @Sendable (Event) -> Void
    private var current: OpenSegment?
    private var sequence = 0
    private let directoryFD: Int32
    /// Syncs and renames closed segments while this writes the next one.
    private let finisher: SegmentFinisher
    /// Access units dropped because no segment could start with them (before the first
    /// IDR, between a reconnect and the next IDR).
    public private(set) var skippedBeforeEntry = 0
    /// The audio track, given to each container segment before its first picture.
    private var audioFormat: AudioFormat?
    /// Audio packets not yet placed: each waits for the first access unit after it in media
    /// time, so that one at or after a cut goes to the segment the cut opens, one before it
    /// to the segment it closes (each segment holds the audio of its own instants, with no
    /// gap or overlap between segments).
    private var pendingAudio = FIFO<AudioPacket>()
    /// Audio packets dropped here (no segment open for them) since the last report.
    private var droppedAudio = 0
    /// Audio packets written into segments closed since the last report.
    private var closedAudioWritten = 0
    /// At most this many audio packets wait for a picture (about 10 s at 48 kHz).
    static let maxPendingAudio = 500
    /// Pictures waiting for the audio of their instant (`placeHeld`), and the latest audio
    /// time heard.
    private var heldUnits = FIFO<TimedUnit>()
    private var lastAudioTime: MediaTime?
    /// How far the audio may lag behind the pictures before they go on without it.
    static let maxAudioLag = MediaTime.seconds(1.5)

    /// Container segments carry the audio track; Annex-B segments do not.
    public var carriesAudio: Bool { config.format.carriesAudio }

    private struct OpenSegment {
        /// nil once a write failed: the file was cut back to its complete prefix and takes
        /// nothing more.
        var writer: (any SegmentWriter)?
        let fd: Int32
        let indexFD: Int32
        let path: String
        let partPath: String
        var startTime: MediaTime
        var lastTime: MediaTime
        var startTimeNs: UInt64 = 0
        var lastStep = MediaTime.zero
        var frames = 0
        var recordedOffset = 0
        /// Access units in the file up to `recordedOffset`.
        var recordedFrames = 0
    }

    /// Checks the directory (creating it if needed) and recovers leftover `.part` files;
    /// `recovered` lists what was found, to be told. Finished files recovered count for
    /// `--keep`.
    public init(config: Config, recovered: inout [SegmentRecovery.Outcome], onEvent: @escaping @Sendable (Event) -> Void) throws(SinkError) {
        self.config = config
        self.planner = SegmentPlanner(config: config.planner)
        self.onEvent = onEvent
        if mkdir(config.directory, 0o755) != 0 && errno != EEXIST {
            throw SinkError(sink: "segments", message: "\(config.directory): \(String(cString: strerror(errno)))")
        }
        let fd = Glibc.open(config.directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw SinkError(sink: "segments", message: "\(config.directory): \(String(cString: strerror(errno)))") }
        guard access(config.directory, W_OK) == 0 else {
            Glibc.close(fd)
            throw SinkError(sink: "segments", message: "\(config.directory): not writable")
        }
        directoryFD = fd
        do {
            recovered = try SegmentRecovery.recover(directory: config.directory)
        } catch {
            Glibc.close(fd)
            throw error
        }
        finisher = SegmentFinisher(directoryFD: fd, sync: config.sync, keep: config.keep, hook: config.hook, alreadyFinished: recovered.compactMap(\.path), onEvent: onEvent)
    }

    deinit {
        finisher.finish()
        Glibc.close(directoryFD)
    }

    public func write(_ items: ArraySlice<SinkItem>) throws(SinkError) -> WriteReport {
        var report = WriteReport()
        for item in items {
            switch item {
            case .discontinuity:
                // What came before the cut belongs to the segment it closes.
                try placeHeld(&report, force: true)
                try placeAudio(before: nil)
                planner.markReconnect()
            case .gap:
                break
            case .audioFormat(let format):
                audioFormat = format
            case .audio(let packet):
                if pendingAudio.count >= Self.maxPendingAudio {
                    _ = pendingAudio.popFirst()
                    droppedAudio += 1
                }
                pendingAudio.append(packet)
                if lastAudioTime.map({ packet.mediaTime > $0 }) ?? true { lastAudioTime = packet.mediaTime }
            case .unit(let received):
                if audioFormat == nil {
                    try placeUnit(received, &report)
                } else {
                    heldUnits.append(received)
                }
            }
        }
        try placeHeld(&report, force: false)
        try flushCurrent()
        if let error = finisher.takeError() { throw error }
        takeAudioCounts(into: &report)
        return report
    }

    public func close() throws(SinkError) {
        defer { finisher.finish() }
        var report = WriteReport()
        try placeHeld(&report, force: true)
        try placeAudio(before: nil)
        try closeCurrent(reason: "end", nextStart: nil)
        finisher.finish()
        if let error = finisher.takeError() { throw error }
    }

    /// With an audio track, pictures wait for the audio of their instant to arrive (a
    /// container interleaves audio late: MPEG-TS muxers gather several frames in one PES
    /// packet), at most `maxAudioLag` of media time, so that the audio before a cut goes to
    /// the segment the cut closes. `force`: all of them now (the end, a reconnect).
    private func placeHeld(_ report: inout WriteReport, force: Bool) throws(SinkError) {
        guard let newest = heldUnits.last?.mediaTime else { return }
        while let next = heldUnits.first {
            let heard = lastAudioTime.map { $0 >= next.mediaTime } ?? false
            guard force || heard || newest - next.mediaTime > Self.maxAudioLag else { break }
            _ = heldUnits.popFirst()
            try placeAudio(before: next.mediaTime)
            try placeUnit(next, &report)
        }
    }

    private func placeUnit(_ received: TimedUnit, _ report: inout WriteReport) throws(SinkError) {
        try placeAudio(before: received.mediaTime)
        if try place(received) {
            report.units += 1
            report.bytes += received.unit.byteCount
        }
    }

    /// Hands the waiting audio packets before `time` (all when nil) to the open segment;
    /// with none open, or when they are older than it, they are dropped and counted.
    private func placeAudio(before time: MediaTime?) throws(SinkError) {
        guard !pendingAudio.isEmpty else { return }
        var n = 0
        for packet in pendingAudio.elements {
            if let time, packet.mediaTime >= time { break }
            n += 1
            // Audio of an instant before the open segment began (it came later than the
            // pictures waited for it) belongs to a segment already closed: counted.
            if carriesAudio, let segment = current, let writer = segment.writer, packet.mediaTime >= segment.startTime {
                try writer.append(audio: packet)
            } else {
                droppedAudio += 1
            }
        }
        pendingAudio.removeFirst(n)
    }

    public func audioCountsAfterLastWrite() -> (written: Int, dropped: Int) {
        var report = WriteReport()
        takeAudioCounts(into: &report)
        return (report.audioPackets, report.droppedAudio)
    }

    /// Adds what the segment writers and this sink wrote and dropped of the audio.
    private func takeAudioCounts(into report: inout WriteReport) {
        if let writer = current?.writer {
            let counts = writer.takeAudioCounts()
            report.audioPackets += counts.written
            report.droppedAudio += counts.dropped
        }
        report.droppedAudio += droppedAudio
        report.audioPackets += closedAudioWritten
        droppedAudio = 0
        closedAudioWritten = 0
    }

    /// Returns false when the access unit was not written (no segment can start with it).
    private func place(_ received: TimedUnit) throws(SinkError) -> Bool {
        let unit = received.unit
        let decision = planner.plan(.init(isIDR: received.isEntryPoint, mediaTime: received.mediaTime, bytes: unit.byteCount, resolution: unit.resolution))
        switch decision {
        case .skip:
            skippedBeforeEntry += 1
            return false
        case .start:
            try open(at: received)
        case .rotate(let reason):
            try closeCurrent(reason: reason.rawValue, nextStart: received.mediaTime)
            try open(at: received)
        case .append:
            guard var segment = current, let writer = segment.writer else { return false }
            try writer.append(received)
            segment.frames += 1
            let step = received.mediaTime - segment.lastTime
            if step > .zero { segment.lastStep = step }
            segment.lastTime = received.mediaTime
            current = segment
        }
        return true
    }

    private func open(at received: TimedUnit) throws(SinkError) {
        let now = Int(time(nil))
        var name: String
        var path: String
        repeat {
            sequence += 1
            name = config.namer.name(time: now, sequence: sequence)
            path = config.directory + "/" + name
        } while access(path, F_OK) == 0 || access(path + SegmentRecovery.partSuffix, F_OK) == 0
        let partPath = path + SegmentRecovery.partSuffix
        let fd = Glibc.open(partPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw SinkError(sink: self.name, message: "\(partPath): \(String(cString: strerror(errno)))") }
        let indexFD = Glibc.open(partPath + ".idx", O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0o644)
        guard indexFD >= 0 else {
            let message = String(cString: strerror(errno))
            Glibc.close(fd)
            throw SinkError(sink: self.name, message: "\(partPath).idx: \(message)")
        }
        // A segment starts with SPS and PPS: put them in front of an IDR that lacks them.
        var entry = received
        entry.resumes = true
        let writer: any SegmentWriter
        do {
            writer = try config.format.makeWriter(fd, partPath)
            if let audioFormat { writer.declare(audio: audioFormat) }
            try writer.append(entry)
        } catch {
            Glibc.close(fd)
            Glibc.close(indexFD)
            unlink(partPath)
            unlink(partPath + ".idx")
            throw error
        }
        var segment = OpenSegment(writer: writer, fd: fd, indexFD: indexFD, path: path, partPath: partPath, startTime: received.mediaTime, lastTime: received.mediaTime)
        segment.frames = 1
        segment.startTimeNs = received.unit.timestamp?.captureTimeNs ?? WallClock.nanoseconds
        current = segment
        onEvent(.opened(path: path))
    }

    /// Has the open segment's writer write what is ready, then records the length of the
    /// file's complete prefix in its index. A failed write cuts the file back to the last
    /// complete prefix (or removes it when there was none), and the segment writes no more.
    private func flushCurrent() throws(SinkError) {
        guard let segment = current, let writer = segment.writer else { return }
        let complete: Int
        do {
            complete = try writer.flush()
        } catch {
            cutBackToComplete()
            throw SinkError(sink: name, message: "write \(segment.partPath): \(error.message)")
        }
        guard complete > segment.recordedOffset else { return }
        var value = UInt64(complete).littleEndian
        let n = withUnsafeBytes(of: &value) { Glibc.write(segment.indexFD, $0.baseAddress, 8) }
        if n != 8 { throw SinkError(sink: name, message: "write \(segment.partPath).idx: \(String(cString: strerror(errno)))") }
        current?.recordedOffset = complete
        current?.recordedFrames = segment.frames
    }

    /// After a failed write (a full disk, EFBIG): a segment with nothing complete in it is
    /// removed with its index; else it is cut back to the last complete prefix the index
    /// recorded, so that it closes as a complete file with what was good.
    private func cutBackToComplete() {
        guard var segment = current else { return }
        segment.writer = nil
        guard segment.recordedOffset > 0 else {
            Glibc.close(segment.fd)
            Glibc.close(segment.indexFD)
            unlink(segment.partPath)
            unlink(segment.partPath + ".idx")
            current = nil
            return
        }
        if ftruncate(segment.fd, off_t(segment.recordedOffset)) == 0 {
            segment.frames = segment.recordedFrames
        }
        current = segment
    }

    private func closeCurrent(reason: String, nextStart: MediaTime?) throws(SinkError) {
        try flushCurrent()
        if let error = finisher.takeError() { throw error }
        guard let segment = current else { return }
        current = nil
        var bytes = segment.recordedOffset
        var frames = segment.recordedFrames
        var failure: SinkError?
        if let writer = segment.writer {
            defer {
                let counts = writer.takeAudioCounts()
                closedAudioWritten += counts.written
                droppedAudio += counts.dropped
            }
            do {
                bytes = try writer.finish()
                frames = segment.frames
            } catch {
                // The rest could not be written (an MP4 fragment is held until it closes, so
                // a full disk often shows only here): keep what was complete, and when nothing
                // was, remove the file rather than give a finished name to a header.
                failure = SinkError(sink: name, message: "write \(segment.partPath): \(error.message)")
                guard segment.recordedOffset > 0 else {
                    Glibc.close(segment.fd)
                    Glibc.close(segment.indexFD)
                    unlink(segment.partPath)
                    unlink(segment.partPath + ".idx")
                    throw failure!
                }
                _ = ftruncate(segment.fd, off_t(segment.recordedOffset))
            }
        }
        let end = nextStart ?? (segment.lastTime + segment.lastStep)
        let info = SegmentInfo(path: segment.path, duration: max(.zero, end - segment.startTime), frames: frames, bytes: bytes, reason: reason,
                               startTimeNs: segment.startTimeNs)
        finisher.submit(.init(fd: segment.fd, indexFD: segment.indexFD, partPath: segment.partPath, info: info))
        if let failure { throw failure }
    }
}
