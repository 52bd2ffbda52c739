import Media
import Output

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `-o FILE.mp4|.ts|.mkv|.flv` (or `--format`) of `produce` and `consume`: the access units
/// into a container, with true timing (`PacketTimer`), next to `FileSink`'s raw Annex-B.
///
/// The header waits for the first entry point (an IDR with its SPS and PPS, which become
/// the container's extradata); access units before it are not written and are counted as
/// dropped. Each packet is written when the next one is known (its duration is the step to
/// the next), so the last one gets the step before it.
public final class ContainerSink: AccessUnitSink {
    public let name: String
    public let format: ContainerFormat
    private let muxer: Muxer
    private let fd: Int32
    private let ownsDescriptor: Bool
    private let fallbackFrameRate: Double?
    private var timer: PacketTimer
    private var audio = AudioInterleaver()
    private var audioFormat: AudioFormat?

    public var carriesAudio: Bool { true }

    /// Writes to standard output (`-o -`): a pipe takes ts, mkv and flv, not mp4.
    public convenience init(format: ContainerFormat, fallbackFrameRate: Double? = nil, countedClock: Bool = false) throws(SinkError) {
        try self.init(format: format, fd: 1, ownsDescriptor: false, name: "stdout", label: "-o -", fallbackFrameRate: fallbackFrameRate, countedClock: countedClock)
    }

    /// Creates (or truncates) `path`.
    public convenience init(format: ContainerFormat, path: String, fallbackFrameRate: Double? = nil, countedClock: Bool = false) throws(SinkError) {
        // Without the FFmpeg libraries nothing is written: an existing file stays as it was.
        if let problem = FFmpegLibraries.problem { throw SinkError(sink: "file", message: "\(path): \(problem)") }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw SinkError(sink: "file", message: "\(path): \(String(cString: strerror(errno)))") }
        try self.init(format: format, fd: fd, ownsDescriptor: true, name: "file", label: path, fallbackFrameRate: fallbackFrameRate, countedClock: countedClock)
    }

    /// `-o TARGET` in `format`: standard output for `-`, else the file `TARGET`.
    /// - Parameters:
    ///   - fallbackFrameRate: the frame rate to declare when the SPS gives none.
    ///   - countedClock: media time without a timestamp SEI counts access units at the
    ///     frame rate (`consume` from a file): a field is then half a frame's step.
    public convenience init(format: ContainerFormat, target: String, fallbackFrameRate: Double? = nil, countedClock: Bool = false) throws(SinkError) {
        if target == "-" {
            try self.init(format: format, fallbackFrameRate: fallbackFrameRate, countedClock: countedClock)
        } else {
            try self.init(format: format, path: target, fallbackFrameRate: fallbackFrameRate, countedClock: countedClock)
        }
    }

    /// Over `fd`, closed here if owned (also when the muxer cannot be set up).
    init(format: ContainerFormat, fd: Int32, ownsDescriptor: Bool, name: String, label: String, fallbackFrameRate: Double?, countedClock: Bool,
         fragmented: Bool = false) throws(SinkError) {
        self.name = name
        timer = PacketTimer(countedClock: countedClock, waitsForDuration: true)
        self.format = format
        self.fd = fd
        self.ownsDescriptor = ownsDescriptor
        self.fallbackFrameRate = fallbackFrameRate
        do {
            muxer = try Muxer(format: format, fd: fd, fragmented: fragmented)
            // A segment (the one caller that asks for fragments): see `Muxer.timeOffset`.
            if fragmented && format == .ts { muxer.timeOffset = 126_000 }
        } catch {
            if ownsDescriptor { _ = Glibc.close(fd) }
            throw SinkError(sink: name, message: "\(label): \(error.message)")
        }
    }

    public func write(_ items: ArraySlice<SinkItem>) throws(SinkError) -> WriteReport {
        var report = WriteReport()
        let before = muxer.bytesWritten
        do {
            for item in items {
                switch item {
                case .unit(let unit):
                    if try add(unit) { report.units += 1 } else { report.dropped += 1 }
                case .discontinuity, .gap:
                    timer.discontinuity()
                case .audioFormat(let format):
                    declare(audio: format)
                case .audio(let packet):
                    try add(audio: packet)
                }
            }
            try writeSettled(finishing: false)
            try muxer.flush()
        } catch {
            throw sinkError(error)
        }
        report.bytes = muxer.bytesWritten - before
        (report.audioPackets, report.droppedAudio) = audio.takeCounts()
        return report
    }

    public func close() throws(SinkError) {
        var failure: SinkError?
        do {
            try finishContainer()
        } catch {
            failure = sinkError(error)
        }
        if ownsDescriptor {
            let rc = Glibc.close(fd)
            if rc != 0 && errno != EINTR && failure == nil {
                failure = SinkError(sink: name, message: "close: \(String(cString: strerror(errno)))")
            }
        }
        if let failure { throw failure }
    }

    /// Bytes handed to the descriptor so far, and how many of them the header took.
    var bytesWritten: Int { muxer.bytesWritten }
    private(set) var headerBytes = 0

    /// Takes one access unit without writing anything out yet (`writeOut` does).
    func accept(_ unit: TimedUnit) throws(SinkError) -> Bool {
        do { return try add(unit) } catch { throw sinkError(error) }
    }

    /// The stream's audio track: declared in the header if that is not written yet.
    func declare(audio format: AudioFormat) {
        audioFormat = format
        if !muxer.headerWritten { muxer.audio = format }
    }

    /// Takes one audio packet without writing it yet.
    func accept(audio packet: AudioPacket) throws(SinkError) {
        do { try add(audio: packet) } catch { throw sinkError(error) }
    }

    /// Audio packets written and dropped since the last call.
    func takeAudioCounts() -> (written: Int, dropped: Int) { audio.takeCounts() }

    public func audioCountsAfterLastWrite() -> (written: Int, dropped: Int) { audio.takeCounts() }

    private func add(audio packet: AudioPacket) throws(MuxError) {
        try audio.add(packet, format: audioFormat, offset: timer.mediaToContainer, muxer: muxer)
    }

    /// Writes the settled access units and flushes the output buffer.
    func writeOut() throws(SinkError) {
        do {
            try writeSettled(finishing: false)
            try muxer.flush()
        } catch {
            throw sinkError(error)
        }
    }

    /// Writes everything left and the trailer; the descriptor stays open.
    func finishContainer() throws(MuxError) {
        try writeSettled(finishing: true)
        try muxer.finish()
    }

    /// Places one access unit in time and queues it; false when it came before the first
    /// entry point and was not written.
    private func add(_ unit: TimedUnit) throws(MuxError) -> Bool {
        if !muxer.headerWritten {
            guard unit.isEntryPoint else { return false }
            try muxer.writeHeader(entry: unit, fallbackFrameRate: fallbackFrameRate)
            try muxer.flush()
            headerBytes = muxer.bytesWritten
        }
        timer.add(unit)
        return true
    }

    /// Writes every packet whose times are settled (all of them when `finishing`).
    private func writeSettled(finishing: Bool) throws(MuxError) {
        let muxer = self.muxer
        try timer.take(finishing: finishing) { (packet) throws(MuxError) in
            try audio.write(upTo: packet.dts, muxer: muxer)
            try muxer.write(packet.nalUnits, pts: packet.pts, dts: packet.dts, duration: packet.duration, keyframe: packet.keyframe)
        }
        if finishing { try audio.write(upTo: nil, muxer: muxer) }
    }

    private func sinkError(_ error: MuxError) -> SinkError {
        SinkError(sink: name, message: error.message, peerClosed: error.code == EPIPE)
    }
}
