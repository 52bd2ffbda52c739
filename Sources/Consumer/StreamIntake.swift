import Clocks
import Media
import Output

/// Bytes in, access units out to the sinks: the codec's parser (`AccessUnitParser`), the media clock, and the entry
/// gate (after the start and after every reconnect nothing goes out before an IDR with its
/// SPS and PPS). A demuxed source (`DemuxReader`) hands in whole access units with their
/// container time instead (`push(unit:packetTime:byteCount:)`), through the same clock,
/// gate, discontinuity marker and metrics.
///
/// Used by one thread at a time: the loop thread (network) or the file reader.
public final class StreamIntake {
    private var parser: any AccessUnitParser
    private var clock: MediaClock
    private let fanout: SinkFanout
    public let metrics: ConsumerMetrics
    private var waitingForEntry = true
    private var pendingDiscontinuity = false
    private var skippedSoFar = 0
    /// Access units cut from the last chunk (the parser cannot be read while it emits).
    private var completed: [AccessUnit] = []
    /// What goes to the sinks from the last chunk, handed over in one go.
    private var outgoing: [SinkItem] = []
    /// The last connection ended with an end-of-stream (or end-of-sequence) NAL unit: the
    /// producer stopped cleanly, rather than went away.
    public private(set) var lastConnectionEndedCleanly = false
    /// The last access unit delivered ended with an end-of-stream or end-of-sequence NAL unit.
    private var lastUnitEndedStream = false
    /// The audio track last declared to the sinks.
    private var audioFormat: AudioFormat?
    /// Media time minus container time of the last access unit delivered since the input
    /// (re)opened: where the same container clock puts audio. nil before the first one.
    private var audioOffset: Int64?
    private var lastAudioTime: MediaTime?

    /// Sees every access unit that goes to the sinks, on the intake's thread.
    private let observer: ((TimedUnit) -> Void)?
    /// Sees the audio that goes to the sinks (`.audioFormat` when the track is new or
    /// changed, then each `.audio` packet), on the intake's thread: the relay's TS listeners.
    private let audioObserver: ((SinkItem) -> Void)?
    /// Each access unit goes to the sinks as soon as it is delivered, not with the rest of
    /// its chunk: for an observer that paces the input (`--realtime`), so that the sinks get
    /// every access unit when it is due rather than a chunk's worth at a time.
    public let handsOnEachUnit: Bool

    /// `fallbackFrameRate` counts media time for a stream with neither timestamps nor a
    /// VUI frame rate (consume's `--frame-rate`).
    public init(fanout: SinkFanout, metrics: ConsumerMetrics, clock: MediaClock.Source, fallbackFrameRate: Double = 30,
                codec: any VideoCodec, maxNALUnitSize: Int = AnnexB.defaultMaxNALUnitSize, observer: ((TimedUnit) -> Void)? = nil,
                audioObserver: ((SinkItem) -> Void)? = nil, handsOnEachUnit: Bool = false) {
        self.parser = codec.makeParser(maxNALUnitSize: maxNALUnitSize)
        self.clock = MediaClock(source: clock, fallbackFrameRate: fallbackFrameRate)
        self.fanout = fanout
        self.metrics = metrics
        self.observer = observer
        self.audioObserver = audioObserver
        self.handsOnEachUnit = handsOnEachUnit
    }

    /// Called (once, on the intake's thread) when a connection's first bytes are MPEG-TS
    /// (0x47 every 188 bytes) rather than Annex-B: the caller hands the input to a reader that
    /// demuxes it. Set before the first bytes; nil: no looking (every byte is parsed).
    public var onTransportStream: (() -> Void)? {
        didSet { head = onTransportStream == nil ? nil : InputSniffer.Head() }
    }
    /// The first bytes of the current connection, held until they say what the input is.
    private var head: InputSniffer.Head?
    /// MPEG-TS was found: the rest of the input is not parsed here.
    private var handedOver = false

    /// Parses the bytes held while looking (a connection that ended before they could tell).
    private func releaseHead() {
        guard let held = head?.chunks else { return }
        head = nil
        for piece in held { parser.push(piece) { completed.append($0) } }
    }

    /// Bytes read from the input.
    public func push(_ chunk: [UInt8]) {
        metrics.bytes.increment(by: UInt64(chunk.count))
        guard !handedOver else { return }
        if head != nil {
            switch head!.add(chunk) {
            case .needMore:
                return
            case .notAnnexB(.mpegTS):
                head = nil
                handedOver = true
                onTransportStream?()
                return
            case .annexB, .notAnnexB:
                // Annex-B (or garbage the scanner skips and counts, as before).
                releaseHead()
                deliverCompleted()
                return
            }
        }
        parser.push(chunk) { completed.append($0) }
        deliverCompleted()
    }

    /// One whole access unit of a demuxed source, `byteCount` bytes as the container held it,
    /// with its time from the container (90 kHz, any origin; nil when it gave none).
    public func push(unit: AccessUnit, packetTime: MediaTime?, byteCount: Int) {
        metrics.bytes.increment(by: UInt64(byteCount))
        deliver(unit, frameRate: frameRateOf(unit), packetTime: packetTime)
        if let last = unit.nalUnits.last { lastUnitEndedStream = unit.codec.endsStream(last) }
        fanout.push(outgoing)
        outgoing.removeAll(keepingCapacity: true)
    }

    /// The demuxed source has this audio track (said at each opening): the sinks hear of it
    /// when it is new or changed, before its first packet.
    public func declare(audio format: AudioFormat) {
        guard format != audioFormat else { return }
        audioFormat = format
        audioObserver?(.audioFormat(format))
        fanout.push(.audioFormat(format))
    }

    /// One audio packet of a demuxed source, its time from the same container clock as the
    /// video's (`packetTime`): placed in media time as the last access unit was, so that the
    /// two stay in step across rebasing and reconnects. Before the first picture of an
    /// opening (or out of time order) it is dropped and counted.
    public func push(audio data: [UInt8], packetTime: MediaTime) {
        guard audioFormat != nil, !waitingForEntry, let offset = audioOffset else {
            metrics.droppedAudioPackets.increment()
            return
        }
        let time = MediaTime(ticks: packetTime.ticks &+ offset)
        if let last = lastAudioTime, time <= last {
            metrics.droppedAudioPackets.increment()
            return
        }
        lastAudioTime = time
        metrics.audioPackets.increment()
        let packet = AudioPacket(data: data, mediaTime: time)
        audioObserver?(.audio(packet))
        fanout.push(.audio(packet))
    }

    /// The frame rate of the last parameter sets an access unit carried (read only then).
    private func frameRateOf(_ unit: AccessUnit) -> Double? {
        // Most access units carry none: looked for before any array is made.
        guard unit.nalUnits.contains(where: unit.codec.isParameterSet) else { return lastFrameRate }
        let sets = unit.nalUnits.filter(unit.codec.isParameterSet)
        // A readable sequence parameter set (it gives the size) says the rate, or that there is none.
        let stream = unit.codec.streamParameters(sets)
        if stream.resolution != nil { lastFrameRate = stream.frameRate }
        return lastFrameRate
    }
    private var lastFrameRate: Double?

    /// The input ended for good (end of file): the last access unit goes out too.
    public func finish() {
        releaseHead()
        parser.finish { completed.append($0) }
        deliverCompleted()
    }

    /// The peer closed the connection cleanly (a read returned 0): the stream ended as a
    /// file ends, and its last access unit goes out too. What comes after the next
    /// connection starts at an entry point, after a `.discontinuity`.
    public func connectionClosed() {
        finish()
        lastConnectionEndedCleanly = lastUnitEndedStream
        startOver()
    }

    /// The input failed: a connection reset or timed out, or a read failed. The access
    /// unit that was arriving is dropped, as it is not known to be complete, and counted.
    /// Every access unit before it went out already, as soon as the first bytes of the next
    /// one showed it complete. What comes after the next connection starts at an entry
    /// point, after a `.discontinuity`. Returns the bytes dropped (0: none was arriving).
    @discardableResult
    public func inputFailed() -> Int {
        lastConnectionEndedCleanly = false
        if head?.chunks.isEmpty == false {
            releaseHead()
            deliverCompleted()
        }
        var dropped = 0
        if parser.hasAccessUnitInProgress {
            metrics.unfinishedUnits.increment()
            dropped = parser.bytesInProgress
        }
        startOver()
        return dropped
    }

    private func startOver() {
        parser.reset()
        // Each connection's first bytes are looked at again.
        if onTransportStream != nil { head = InputSniffer.Head() }
        // The next connection's own last access unit says how it ended: one that delivers
        // nothing and closes has not ended its stream, whatever the one before did.
        lastUnitEndedStream = false
        // The new scanner counts skipped bytes from zero.
        skippedSoFar = 0
        waitingForEntry = true
        pendingDiscontinuity = true
        audioOffset = nil
        // The next connection's clock may start over: media time goes on from here.
        clock.discontinuity()
    }

    private func deliverCompleted() {
        let figures = Self.figures(of: &parser)
        for unit in completed { deliver(unit, frameRate: figures.frameRate) }
        // Also set by a delimited stream's tail (an AUD, then an end of sequence), which the
        // parser closes without handing it out: it has no picture.
        lastUnitEndedStream = figures.endedStream
        completed.removeAll(keepingCapacity: true)
        fanout.push(outgoing)
        outgoing.removeAll(keepingCapacity: true)
        noteResync(skipped: figures.skippedBytes)
    }

    /// What the intake reads from the parser after a chunk, read where it lies: a getter
    /// called on the stored existential copied the whole parser (scanner, assembler,
    /// parameter sets) for each of them, three times an access unit.
    private static func figures(of parser: inout any AccessUnitParser) -> (frameRate: Double?, endedStream: Bool, skippedBytes: Int) {
        (parser.frameRate, parser.endedStream, parser.skippedBytes)
    }

    private func noteResync(skipped: Int) {
        if skipped > skippedSoFar {
            metrics.resyncBytes.increment(by: UInt64(skipped - skippedSoFar))
            skippedSoFar = skipped
        }
    }

    private func deliver(_ unit: AccessUnit, frameRate: Double?, packetTime: MediaTime? = nil) {
        metrics.accessUnits.increment()
        let now = MonotonicClock.nanoseconds
        if let ts = unit.timestamp, ts.captureTimeNs > 0 {
            let wall = WallClock.nanoseconds
            if wall >= ts.captureTimeNs { metrics.latency.observe(Double(wall - ts.captureTimeNs) / 1e9) }
        }
        let time = clock.time(packetTime: packetTime, pts90k: unit.timestamp?.pts90k, frameRate: frameRate, arrivalNs: now)
        var received = TimedUnit(unit: unit, mediaTime: time, arrivalNs: now)
        if waitingForEntry {
            guard received.isEntryPoint else {
                metrics.waitedUnits.increment()
                return
            }
            waitingForEntry = false
            received.resumes = true
            if pendingDiscontinuity {
                pendingDiscontinuity = false
                outgoing.append(.discontinuity)
            }
        }
        if let packetTime { audioOffset = time.ticks &- packetTime.ticks }
        observer?(received)
        outgoing.append(.unit(received))
        if handsOnEachUnit {
            fanout.push(outgoing)
            outgoing.removeAll(keepingCapacity: true)
        }
    }
}
