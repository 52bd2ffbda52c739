import Clocks
import Muxing
import IO
import H264
import Media
import Output
import Delivery
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Reads a source through libavformat (`Demuxer`) on a thread of its own and hands each
/// packet, made an access unit by `AnnexBPackager`, to a `StreamIntake` with its container
/// time: container files (MP4, MPEG-TS, Matroska, FLV) and live URLs (RTSP, SRT, RTMP,
/// UDP, HTTP).
///
/// - A file is read to its end, as `FileReader` reads one: the run ends there (exit 0); so
///   is an HTTP URL (`endsWithItsInput`), though a failure or a stall reopens it.
/// - A live URL is opened again when it is lost (a read error, the source ended, a stall),
///   after `ReconnectBackoff`'s delays, until `giveUpAfter` (`--reconnect-timeout`) passes
///   without a packet. Each opening is bounded by `openTimeout`; each read by
///   `stallTimeout`: a source that sends nothing that long is reported (`.stalled`) and
///   reopened. After a reopening the intake waits for an IDR with its parameter sets and
///   marks the discontinuity; `MediaClock` keeps media time going on.
///
/// Life: `init` → `start(intake:onEvent:onEnd:)` → `stop()` from any thread (ends any wait
/// in libavformat at once, through the interrupt callback) → `join()`.
public final class DemuxReader: Sendable {
    /// What to open.
    public struct Source: Sendable {
        /// The URL or path as given, credentials included: only for libavformat.
        public let url: String
        /// The URL with its secrets masked, for every message.
        public let shown: String
        /// A live URL (reconnects, stall detection) rather than a file.
        public let live: Bool
        /// libavformat options (protocol and demuxer), as ffmpeg takes them before `-i`.
        public var options: [Option]
        /// An IDR picture's slices may come in more than one packet (RTSP: the parser behind
        /// FFmpeg's depacketizer ends a picture at any SPS or PPS, and payloaders repeat them
        /// in front of every IDR slice): an IDR access unit waits for the next packet, which
        /// says whether it continues it. Other pictures have nothing between their slices
        /// and go out at once.
        public let picturesMaySpanPackets: Bool
        /// The URL listens for its sender (`srt://…?mode=listener`, `rtmp://…?listen=1`):
        /// opening waits as long as it takes, not `openTimeout` (still ended by `stop()`).
        public let waitsForSender: Bool
        /// The end of the input ends the run, as a file's does (HTTP: a file or a finite
        /// stream served); a failure or a stall still reopens it.
        public let endsWithItsInput: Bool

        public struct Option: Sendable, Equatable {
            public let key: String
            public let value: String
            public init(_ key: String, _ value: String) {
                self.key = key
                self.value = value
            }
        }

        public init(url: String, shown: String, live: Bool, options: [Option], picturesMaySpanPackets: Bool = false, waitsForSender: Bool = false,
                    endsWithItsInput: Bool = false) {
            self.picturesMaySpanPackets = picturesMaySpanPackets
            self.endsWithItsInput = endsWithItsInput
            self.waitsForSender = waitsForSender
            self.url = url
            self.shown = shown
            self.live = live
            self.options = options
        }
    }

    public struct Timing: Sendable {
        /// Seconds an opening (connect, handshake, probing) may take.
        public var openTimeout: Double
        /// Seconds without a packet after which a live source counts as stalled.
        public var stallTimeout: Double
        public var backoff: ReconnectBackoff.Config

        public init(openTimeout: Double = 10, stallTimeout: Double = 5, backoff: ReconnectBackoff.Config = .init()) {
            self.openTimeout = openTimeout
            self.stallTimeout = stallTimeout
            self.backoff = backoff
        }
    }

    /// How reading ended.
    public enum End: Sendable, Equatable {
        /// The file's end, or `stop()`.
        case ended
        /// Reading failed (a file).
        case failed(String)
        /// The source holds no H.264 video, or its container cannot be read: one line.
        case invalid(String)
        /// The source refused our credentials (a wrong SRT passphrase, an RTSP 401 or 403):
        /// one line, not retried.
        case refused(String)
        /// The server has no such stream (an RTSP 404): one line, not retried.
        case missing(String)
        /// A live source stayed lost for `giveUpAfter`: why, whether it was ever opened, and
        /// whether its last opening ended with an end-of-stream NAL unit (a producer that
        /// finished its stream).
        case gaveUp(reason: String, everOpened: Bool, endedCleanly: Bool)
    }

    public let source: Source
    public let timing: Timing
    private let deadline: DemuxDeadline
    private let stopping = Atomic<Bool>(false)
    private let thread = Mutex<OSThread?>(nil)

    /// `deadline`: the one a demuxer handed to `start` as opened already was made with (it
    /// bounds that demuxer's calls for its life); a new one by default.
    public init(source: Source, timing: Timing = Timing(), deadline: DemuxDeadline = DemuxDeadline()) {
        self.source = source
        self.timing = timing
        self.deadline = deadline
    }

    /// Starts reading into `intake`, which from now on belongs to the reader thread.
    /// `onEvent` and `onEnd` run on that thread. `opened`: the source, opened already with this
    /// reader's deadline (a file opened to check it before any output was made), read as the
    /// first opening.
    public func start(intake: sending StreamIntake, opened: sending Demuxer? = nil, onEvent: @escaping @Sendable (InputEvent) -> Void,
                      onEnd: @escaping @Sendable (End) -> Void) {
        let t = OSThread(name: "nalcast-demux") { [self] in
            onEnd(self.run(intake, opened, onEvent))
        }
        thread.withLock { $0 = t }
    }

    public func stop() {
        stopping.store(true, ordering: .relaxed)
        deadline.requestStop()
    }

    public func join() {
        if let t = thread.withLock({ t in defer { t = nil }; return t }) { t.join() }
    }

    private var stopped: Bool { stopping.load(ordering: .relaxed) }

    /// How one opening's reading ended.
    private enum Loss {
        case stopped, endOfInput, stalled, failed(String), invalid(String)
    }

    private func run(_ intake: StreamIntake, _ checked: consuming Demuxer?, _ onEvent: @escaping @Sendable (InputEvent) -> Void) -> End {
        var checked = checked
        let options = source.options.map { ($0.key, $0.value) }
        let reopening = Reopening(backoff: timing.backoff, intake: intake, stopped: { self.stopped }, say: { onEvent(self.event($0)) })
        return reopening.run { opened in
            deadline.arm(source.live && !source.waitsForSender ? timing.openTimeout : 0)
            do throws(DemuxError) {
                // The first try reads the demuxer opened to check the source, when there is one.
                let demuxer: Demuxer
                if let first = checked.take(), first.deadline === deadline {
                    demuxer = first
                } else {
                    demuxer = try Demuxer(url: source.url, shown: source.shown, options: options, deadline: deadline)
                }
                let found = demuxer.formatName + (demuxer.width > 0 ? ", \(demuxer.width)x\(demuxer.height)" : "")
                    + (demuxer.audioFormat.map { ", audio aac \($0.sampleRate) Hz \($0.channels) ch" } ?? "")
                opened(found, demuxer.ignoredTracks, demuxer.openingSeconds)
                let loss = pump(demuxer, intake, onEvent)
                // Closing says goodbye to a server (RTSP TEARDOWN): briefly.
                deadline.arm(1)
                switch loss {
                case .stopped:
                    return .end(.ended)
                case .invalid(let message):
                    return .end(.invalid(message))
                case .endOfInput:
                    if !source.live || source.endsWithItsInput {
                        intake.finish()
                        return .end(.ended)
                    }
                    intake.connectionClosed()
                    return .lost("the source ended the stream")
                case .stalled:
                    return .lost(reopening.stalled(after: timing.stallTimeout))
                case .failed(let message):
                    let dropped = intake.inputFailed()
                    if !source.live { return .end(.failed(message + (dropped > 0 ? "; an unfinished access unit dropped" : ""))) }
                    return .lost(message)
                }
            } catch {
                if stopped { return .end(.ended) }
                switch error.kind {
                case .notH264, .fatal: return .end(.invalid(error.message))
                case .refused: return .end(.refused(error.message))
                case .unreachable, .timedOut, .read, .damaged, .noVideo:
                    // A file that exists but will not open is not a file to wait for.
                    if !source.live { return .end(.invalid(error.message)) }
                }
                return .notOpened(error.message)
            }
        }
    }

    /// An event of this source, as every input reports it.
    private func event(_ what: InputEvent.What) -> InputEvent { InputEvent(.demuxed, source.shown, what) }

    /// Reads one opening's packets into the intake until it ends.
    private func pump(_ demuxer: Demuxer, _ intake: StreamIntake, _ onEvent: @Sendable (InputEvent) -> Void) -> Loss {
        var packager: AnnexBPackager
        do {
            packager = try AnnexBPackager(extradata: demuxer.extradata)
        } catch {
            return .invalid("\(source.shown): its H.264 description (extradata) is unreadable: \(error)")
        }
        var malformed = 0
        if let format = demuxer.audioFormat { intake.declare(audio: format) }
        // The first picture's reordering delay (pts - dts): audio is placed that much earlier,
        // as the container writers present pictures (`PacketTimer`'s presentation shift).
        var reorderDelay: Int64?
        // Pictures whose slices may come in more than one packet (`picturesMaySpanPackets`).
        var joiner = PictureJoiner()
        // Packets that are not access units (MPEG-TS's PES payloads): cut by nalcast.
        var cutter: PacketCutter? = demuxer.packetsAreAccessUnits ? nil : PacketCutter()
        func deliver(_ nals: [NALUnit], _ time: MediaTime?, _ bytes: Int) {
            if let unit = packager.assemble(nals) { intake.push(unit: unit, packetTime: time, byteCount: bytes) }
        }
        func noteMalformed() {
            let count = packager.malformedPackets + (cutter?.malformedPackets ?? 0)
            guard count > malformed else { return }
            intake.metrics.malformedPackets.increment(by: UInt64(count - malformed))
            if malformed == 0 { onEvent(event(.malformed(packets: count))) }
            malformed = count
        }
        defer {
            if let w = joiner.flush() { deliver(w.nals, w.time, w.bytes) }
            for unit in cutter?.finish() ?? [] { deliver(unit.nals, unit.time, unit.bytes) }
            noteMalformed()
        }
        while !stopped {
            deadline.arm(source.live ? timing.stallTimeout : 0)
            let read: Demuxer.Packet?
            do {
                read = try demuxer.read()
            } catch {
                if stopped { return .stopped }
                // A damaged file is bad input (65); a live source's damage is a failure like
                // any other, and the source is opened again.
                if error.kind == .damaged && !source.live { return .invalid(error.message) }
                return error.kind == .timedOut ? .stalled : .failed(error.message)
            }
            // Its bytes have one owner, so that `nalUnits(taking:)` changes them in place.
            guard var packet = consume read else { return .endOfInput }
            if packet.isAudio {
                // Audio goes out at once: the sinks interleave it with the pictures by time.
                if let format = demuxer.audioFormat { Self.push(audio: packet, format, shiftedBy: reorderDelay ?? 0, into: intake) }
                continue
            }
            if reorderDelay == nil, let pts = packet.pts, let dts = packet.dts { reorderDelay = max(0, pts - dts) }
            if let extradata = packet.newExtradata, (try? packager.setExtradata(extradata)) == nil {
                // Kept the previous parameter sets; in-band ones still pass through.
                packager.noteMalformed()
            }
            // Decode order is delivery order: the decode time is the media time (the
            // presentation time when the container gave no decode time).
            let time = (packet.dts ?? packet.pts).map { MediaTime(ticks: $0) }
            let bytes = packet.data.count
            if cutter != nil {
                let units = cutter!.push(packet.data, time: time)
                noteMalformed()
                for unit in units { deliver(unit.nals, unit.time, unit.bytes) }
                continue
            }
            let nals = packager.nalUnits(taking: &packet.data)
            noteMalformed()
            guard !nals.isEmpty else { continue }
            guard source.picturesMaySpanPackets else {
                deliver(nals, time, bytes)
                continue
            }
            for picture in joiner.take(nals, time, bytes) { deliver(picture.nals, picture.time, picture.bytes) }
        }
        return .stopped
    }

    /// A demuxed audio packet's frames into the intake, `shift` earlier (the first picture's
    /// reordering delay); frames after the first of one packet follow it, a packet's length each.
    private static func push(audio packet: Demuxer.Packet, _ format: AudioFormat, shiftedBy shift: Int64, into intake: StreamIntake) {
        guard let pts = packet.pts else { return }
        let step = Int64(format.samplesPerPacket) * MediaTime.ticksPerSecond
        for (i, frame) in packet.audioFrames.enumerated() {
            let time = pts - shift + step * Int64(i) / Int64(max(1, format.sampleRate))
            intake.push(audio: frame, packetTime: MediaTime(ticks: time))
        }
    }
}

/// Pictures whose slices may come in more than one packet (RTP: `picturesMaySpanPackets`):
/// an IDR picture waits for the next packet, whose slices are its own unless they begin a
/// picture (holding every picture would make each one wait a frame interval).
struct PictureJoiner {
    typealias Picture = (nals: [NALUnit], time: MediaTime?, bytes: Int)
    private var waiting: Picture?

    /// The pictures complete once a packet's NAL units are taken.
    mutating func take(_ nals: [NALUnit], _ time: MediaTime?, _ bytes: Int) -> [Picture] {
        if let w = waiting, !AnnexBPackager.beginsPicture(nals) {
            // Copies of the SPS and PPS the picture has (a payloader's between its slices) are left out.
            let more = AnnexBPackager.droppingRepeatedParameterSets(nals, after: w.nals)
            waiting = (w.nals + more, w.time ?? time, w.bytes + bytes)
            return []
        }
        var done: [Picture] = []
        if let w = waiting { done.append(w) }
        waiting = nil
        if nals.contains(where: { $0.type == .idrSlice }) {
            waiting = (nals, time, bytes)
        } else {
            done.append((nals, time, bytes))
        }
        return done
    }

    /// The picture still waiting, at the end.
    mutating func flush() -> Picture? {
        defer { waiting = nil }
        return waiting
    }
}
