import H264
import Output

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `-o FILE.mp4|.ts|.mkv|.flv` (or `--format`) of `produce` and `consume`: the access units
/// into a container, with true timing, next to `FileSink`'s raw Annex-B.
///
/// Timing, per access unit:
/// - decode time: its media time (`TimedUnit.mediaTime`: the timestamp SEI's `pts_90k`,
///   else the access units counted at the VUI frame rate, else the arrival time), kept
///   strictly rising; after a discontinuity (a reconnect: a new stream whose clock may
///   start over) the times go on from where they were; a counted field is half a step;
/// - presentation time: the same for nalcast's own streams (the timestamp SEI: no
///   B-frames); for others, from the picture order count (`AccessUnitOrder`,
///   `PresentationTimeline`), so B-frames are presented in their order.
/// A skip or a dropped frame stays a jump in time. The two fields of a field pair (two
/// access units) are one packet: one sample, one frame, as containers count them.
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
    private var order = AccessUnitOrder()
    private var timeline = PresentationTimeline()
    /// Access units pushed to the timeline, not yet written, in decode order.
    private var queued: [(nalUnits: [NALUnit], keyframe: Bool)] = []
    private var queuedHead = 0
    /// The packet waiting for the next one's decode time (its duration).
    private var held: (nalUnits: [NALUnit], times: PresentationTimeline.Times, keyframe: Bool)?
    private var lastStep: Int64 = 3000
    /// Decode times: the last one given, the media time it came from.
    private var lastDts: Int64?
    private var lastMediaTime: Int64 = 0
    private var afterDiscontinuity = false
    /// See `init(format:target:fallbackFrameRate:countedClock:)`.
    private let countedClock: Bool
    private var previousWasField = false
    private var presentationShift: Int64?
    /// A first field waiting for its second.
    private var pendingField: (unit: TimedUnit, info: AccessUnitOrder.Info)?

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
        self.countedClock = countedClock
        self.format = format
        self.fd = fd
        self.ownsDescriptor = ownsDescriptor
        self.fallbackFrameRate = fallbackFrameRate
        do {
            muxer = try Muxer(format: format, fd: fd, fragmented: fragmented)
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
                    flushPendingField()
                    afterDiscontinuity = true
                }
            }
            try writeSettled(finishing: false)
            try muxer.flush()
        } catch {
            throw sinkError(error)
        }
        report.bytes = muxer.bytesWritten - before
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
        flushPendingField()
        try writeSettled(finishing: true)
        if let held { try writePacket(held.nalUnits, held.times, duration: lastStep, keyframe: held.keyframe) }
        held = nil
        try muxer.finish()
    }

    /// Places one access unit in time and queues it; false when it came before the first
    /// entry point and was not written.
    private func add(_ unit: TimedUnit) throws(MuxError) -> Bool {
        if !muxer.headerWritten {
            guard unit.isEntryPoint else { return false }
            let nals = unit.nalUnits
            let parameterSets = nals.filter { $0.type == .sps || $0.type == .pps }
            let sets = parameterSets.isEmpty ? unit.unit.parameterSets : parameterSets
            let sps = sets.first { $0.type == .sps }.flatMap { try? SequenceParameterSet($0) }
            try muxer.writeHeader(parameterSets: sets, resolution: unit.unit.resolution ?? sps?.resolution,
                                  frameRate: sps?.frameRate ?? fallbackFrameRate)
            try muxer.flush()
            headerBytes = muxer.bytesWritten
        }
        // nalcast's own streams (timestamp SEI, no B-frames) present at their decode time.
        let info = unit.unit.timestamp == nil ? order.info(for: unit.unit) : nil
        // The two fields of a pair become one packet (one sample, one frame), as a
        // container holds them; a field without its pair is a packet of its own.
        switch info?.structure {
        case .firstField?:
            flushPendingField()
            pendingField = (unit, info!)
        case .secondField? where pendingField != nil:
            let first = pendingField!
            pendingField = nil
            push(first.unit, first.info, nalUnits: first.unit.nalUnits + unit.nalUnits)
        default:
            flushPendingField()
            push(unit, info, nalUnits: unit.nalUnits)
        }
        return true
    }

    /// A first field whose second never came goes out alone.
    private func flushPendingField() {
        guard let field = pendingField else { return }
        pendingField = nil
        push(field.unit, field.info, nalUnits: field.unit.nalUnits)
    }

    /// One packet into the timeline: its decode time, its place in presentation order.
    private func push(_ unit: TimedUnit, _ info: AccessUnitOrder.Info?, nalUnits: [NALUnit]) {
        // Decode time: step by step from media time, so that a jump (dropped frames, a skip)
        // stays a jump, and a clock that starts over (a reconnect to a restarted producer)
        // goes on one step after the last instead of going back. A counted clock counts
        // each field as a frame: after a field (or a field pair, which it counted twice)
        // the step is halved.
        let media = unit.mediaTime.ticks
        var dts = media
        if let last = lastDts {
            var step = media &- lastMediaTime
            if step <= 0 && afterDiscontinuity { step = lastStep }
            if countedClock && previousWasField && unit.unit.timestamp == nil { step /= 2 }
            dts = last &+ max(step, 1)
        }
        afterDiscontinuity = false
        lastDts = dts
        lastMediaTime = media
        previousWasField = info.map { $0.structure != .frame } ?? false
        timeline.push(dts: dts, key: info?.key, startsRun: info?.startsOver ?? unit.unit.isIDR)
        queued.append((nalUnits, unit.unit.isIDR))
    }

    /// Writes every access unit whose times are settled, holding the last one back.
    private func writeSettled(finishing: Bool) throws(MuxError) {
        while let times = timeline.pop(finishing: finishing) {
            let next = queued[queuedHead]
            queuedHead += 1
            if let held {
                let step = times.dts - held.times.dts
                if step > 0 { lastStep = step }
                try writePacket(held.nalUnits, held.times, duration: max(step, 0), keyframe: held.keyframe)
            }
            held = (next.nalUnits, times, next.keyframe)
        }
        if queuedHead == queued.count {
            queued.removeAll(keepingCapacity: true)
            queuedHead = 0
        } else if queuedHead >= 64 {
            queued.removeFirst(queuedHead)
            queuedHead = 0
        }
    }

    /// Writes one packet. Times move back by the first packet's pts - dts (the reordering
    /// delay of a stream with B-frames), so that presentation starts at the first decode
    /// time (0 for a file) and decode times start before it, as in FFmpeg's own files.
    private func writePacket(_ nalUnits: [NALUnit], _ times: PresentationTimeline.Times, duration: Int64, keyframe: Bool) throws(MuxError) {
        let shift = presentationShift ?? (times.pts - times.dts)
        presentationShift = shift
        try muxer.write(nalUnits, pts: times.pts - shift, dts: times.dts - shift, duration: duration, keyframe: keyframe)
    }

    private func sinkError(_ error: MuxError) -> SinkError {
        SinkError(sink: name, message: error.message, peerClosed: error.code == EPIPE)
    }
}
