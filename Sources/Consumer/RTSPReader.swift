import Clocks
import IO
import Media
import RTSP
import Delivery
import Synchronization

/// `consume --from rtsp://`: nalcast's own RTSP client (`RTSPClient`) on a thread of its
/// own, an input kind beside `DemuxReader` and behaving as it does (reopened when lost after
/// `ReconnectBackoff`'s delays until `giveUpAfter`, a stall reported and reopened, the same
/// events and ends), without libavformat: an access unit goes to the intake the moment its
/// last packet (the marker bit) is in, and an RTSP relay maps none of FFmpeg's libraries.
///
/// Life: `init` → `start(intake:onEvent:onEnd:)` → `stop()` from any thread (ends any wait
/// at once) → `join()`.
public final class RTSPReader: Sendable {
    /// What to open.
    public struct Source: Sendable {
        /// The URL as given, credentials included: only for the session.
        public let url: String
        /// The URL with its credentials masked, for every message.
        public let shown: String
        public let transport: RTSPClient.Transport

        public init(url: String, shown: String, transport: RTSPClient.Transport) {
            self.url = url
            self.shown = shown
            self.transport = transport
        }
    }

    public let source: Source
    public let timing: DemuxReader.Timing
    private let stopSignal = RTSPStopSignal()
    private let stopping = Atomic<Bool>(false)
    private let thread = Mutex<OSThread?>(nil)
    /// RTP packets missing from the sequences (every opening), for the end-of-run report.
    public let lostPackets = Atomic<Int>(0)

    public init(source: Source, timing: DemuxReader.Timing = DemuxReader.Timing()) {
        self.source = source
        self.timing = timing
    }

    /// Starts reading into `intake`, which from now on belongs to the reader thread.
    /// `onEvent` and `onEnd` run on that thread.
    public func start(intake: sending StreamIntake, onEvent: @escaping @Sendable (InputEvent) -> Void, onEnd: @escaping @Sendable (DemuxReader.End) -> Void) {
        let t = OSThread(name: "nalcast-rtsp") { [self] in
            onEnd(self.run(intake, onEvent))
        }
        thread.withLock { $0 = t }
    }

    public func stop() {
        stopping.store(true, ordering: .relaxed)
        stopSignal.signal()
    }

    public func join() {
        if let t = thread.withLock({ t in defer { t = nil }; return t }) { t.join() }
    }

    private var stopped: Bool { stopping.load(ordering: .relaxed) }

    private func event(_ what: InputEvent.What) -> InputEvent { InputEvent(.demuxed, source.shown, what) }

    private func run(_ intake: StreamIntake, _ onEvent: @escaping @Sendable (InputEvent) -> Void) -> DemuxReader.End {
        let url: RTSPURL
        do { url = try RTSPURL(parsing: source.url) } catch { return .invalid("\(source.shown): \(error)") }
        let reopening = Reopening(backoff: timing.backoff, intake: intake, stopped: { self.stopped }, say: { onEvent(self.event($0)) })
        return reopening.run { opened in
            var isOpen = false
            do throws(RTSPError) {
                let client = try RTSPClient(url: url, transport: source.transport, timeout: timing.openTimeout, stop: stopSignal)
                defer { client.close() }
                try client.open()
                opened(describe(client), client.ignoredTracks, nil)
                isOpen = true
                let reason = try pump(client, intake, reopening)
                return stopped ? .end(.ended) : .lost(reason)
            } catch {
                switch error.kind {
                case .stopped: return .end(.ended)
                case .refused: return .end(.refused("\(source.shown): \(error.message)"))
                case .notFound: return .end(.missing("\(source.shown): \(error.message)"))
                case .invalid: return .end(.invalid("\(source.shown): \(error.message)"))
                case .lost, .timedOut: break
                }
                if stopped { return .end(.ended) }
                return isOpen ? .lost(error.message) : .notOpened("cannot open \(source.shown): \(error.message)")
            }
        }
    }

    /// `rtsp, 320x240 (sprop), audio aac 48000 Hz 2 ch`: what the opening found.
    private func describe(_ client: RTSPClient) -> String {
        var found = "rtsp (nalcast), " + client.transport.rawValue
        if client.tracks.count > 1, let config = client.tracks[1].media.audioSpecificConfig {
            let (rate, channels) = RTSPTracks.audioParameters(config, client.tracks[1].media)
            found += ", audio aac \(rate) Hz \(channels) ch"
        }
        return found
    }

    /// Reads one opening's packets into the intake until it is lost: why, as a line. A
    /// stall is counted and said here; a stop throws.
    private func pump(_ client: RTSPClient, _ intake: StreamIntake, _ reopening: Reopening) throws(RTSPError) -> String {
        var tracks = RTSPTracks(client: client)
        if let format = tracks.audioFormat { intake.declare(audio: format) }
        var lastPacket = MonotonicClock.seconds
        do throws(RTSPError) {
            while !stopped {
                guard let received = try client.receive(until: lastPacket + timing.stallTimeout) else {
                    return reopening.stalled(after: timing.stallTimeout)
                }
                lastPacket = MonotonicClock.seconds
                switch received {
                case .rtp(0, let bytes): tracks.takeVideo(bytes, into: intake)
                case .rtp(_, let bytes): tracks.takeAudio(bytes, into: intake)
                case .rtcp(let track, let bytes): tracks.takeRTCP(bytes, track: track)
                }
                tracks.reportIfDue()
                count(&tracks, intake, reopening.say)
            }
            throw RTSPError(.stopped, "stopped")
        } catch {
            if error.kind != .stopped { intake.inputFailed() }
            throw error
        }
    }

    /// Losses and malformed packets into the metrics as they happen; the first malformed
    /// packet of an opening is said.
    private func count(_ tracks: inout RTSPTracks, _ intake: StreamIntake, _ say: (InputEvent.What) -> Void) {
        let lost = tracks.lostPackets
        if lost > tracks.countedLoss {
            intake.metrics.lostPackets.increment(by: UInt64(lost - tracks.countedLoss))
            lostPackets.add(lost - tracks.countedLoss, ordering: .relaxed)
            tracks.countedLoss = lost
        }
        let malformed = tracks.malformedPackets
        if malformed > tracks.countedMalformed {
            if tracks.countedMalformed == 0 { say(.malformed(packets: malformed)) }
            intake.metrics.malformedPackets.increment(by: UInt64(malformed - tracks.countedMalformed))
            tracks.countedMalformed = malformed
        }
    }
}
