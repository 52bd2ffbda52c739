import Clocks
import Capture
import Encoder
import IO
import Media

/// Source → pacer → converter → encoder, on the thread that calls `run()` (the capture
/// thread), handing every access unit to `output`.
///
/// Life: create it on the capture thread, `run()` there until the input ends, a limit is
/// reached or `control.stop()` is called from anywhere; on the way out it flushes the
/// encoder. Only `control` is shared with other threads.
public final class CapturePipeline {
    public let control: CaptureControl
    public let options: CaptureOptions

    private let source: any FrameSource
    private let output: @Sendable (AccessUnit) -> Void
    private let log: (@Sendable (String) -> Void)?
    /// For a change-driven source, in place: the pipeline keeps the last picture for repeats
    /// and only ever uses the latest, so the converter writes each into the same buffer (no
    /// 3 MB allocation per 1080p change), and a frame with damage (wlroots' screencopy) has
    /// only its damaged rectangles converted into the picture before it; a frame whose pixels
    /// there are those of the picture before is not encoded (`unchangedFrames`).
    private let converter: ColorConverter
    private var pacer: Pacer?
    private var encoder: H264Encoder?
    /// The last picture encoded, for a change-driven source's repeats.
    private var kept: Frame?
    /// The last frame of a limit went out, its access unit ending the stream: nothing follows.
    private var streamEnded = false

    public init(source: any FrameSource, options: CaptureOptions = CaptureOptions(), control: CaptureControl = CaptureControl(),
                log: (@Sendable (String) -> Void)? = nil, output: @escaping @Sendable (AccessUnit) -> Void) {
        self.source = source
        self.options = options
        self.control = control
        self.log = log
        self.output = output
        self.converter = ColorConverter(maxSize: options.maxSize, inPlace: source.isChangeDriven)
        // A change-driven source keeps to the rate itself, and its repeats (a joining
        // reader's IDR) may come sooner than a slot: no pacer.
        self.pacer = source.isChangeDriven ? nil : options.targetFrameRate.map { Pacer(rate: $0) }
        control.attach(source.wakeUp)
    }

    /// One frame slot at the encoder's rate, in 90 kHz ticks.
    private var slot90k: Double { 90_000 / encoderFrameRate.framesPerSecond }

    /// The frame rate the encoder announces: the target, unless the source is slower.
    public var encoderFrameRate: FrameRate {
        guard let target = options.targetFrameRate else { return source.frameRate }
        return target.framesPerSecond <= source.frameRate.framesPerSecond ? target : source.frameRate
    }

    /// Runs until the input ends, a limit is reached or `control.stop()`; then flushes the
    /// encoder. Errors of the source (a truncated frame) or encoder are thrown after the
    /// flush: every good frame before them has been handed on.
    public func run() throws {
        do {
            try loop()
        } catch {
            try? flush()
            throw error
        }
        try flush()
    }

    private func loop() throws {
        /// An access unit near the end of `--duration`, held until the next frame says
        /// whether it was the run's last (`mayBeLast`).
        var held: AccessUnit?
        defer { if let held { output(held) } }
        var firstPTS: UInt64?
        /// Media time of the last IDR encoded, for `keyintDuration`.
        var lastIDRPTS: UInt64?
        /// The last frame the pacer saw: its sequence number and media time.
        var lastPaced: (sequence: UInt64, pts90k: UInt64)?
        while !control.isStopped {
            if let limit = options.frameLimit, encoder?.framesEncoded ?? 0 >= UInt64(limit) { break }
            guard var frame = try source.nextFrame() else { break }
            if control.isDurationOver { break }
            if firstPTS == nil { startDurationTimer() }
            let base = firstPTS ?? frame.pts90k
            firstPTS = base
            frame.pts90k -= Swift.min(base, frame.pts90k)
            if let limit = options.durationLimit, frame.seconds >= limit {
                // The encoder was late and the source skipped frames up to this one, past the
                // end: those that fell inside `--duration` are late drops, as a gap is anywhere else.
                if let last = lastPaced, pacer != nil {
                    pacer!.countLate(Self.skipped(after: last, before: (frame.sequence, frame.pts90k), endPTS: limit * 90_000))
                    let late = pacer!.drops.late
                    control.state.withLock { $0.counters.droppedLate = late }
                }
                // The source skipped past the end (the encoder was late): the picture held
                // was the last, and goes out as the end of the stream.
                if let last = held {
                    held = nil
                    try endStream(after: last)
                }
                break
            }
            if let earlier = held {
                held = nil
                output(earlier)
            }

            var keep = true
            if pacer != nil {
                keep = pacer!.admit(frame, live: source.isLive)
                lastPaced = (frame.sequence, frame.pts90k)
            }
            let drops = pacer?.drops ?? Pacer.Drops()
            control.state.withLock {
                $0.counters.framesCaptured += 1
                $0.counters.droppedRate = drops.rate
                $0.counters.droppedLate = drops.late
            }
            guard keep else { continue }

            let started = Int64(MonotonicClock.nanoseconds)
            var picture: Frame
            /// What changed since the picture encoded last, for x264 to copy the rest
            /// (`H264Encoder.encode(_:changes:)`). Every picture converted is encoded, so the
            /// converter's picture before is the one encoded last; the kept picture is it.
            var changes = PictureChanges.unknown
            if frame.isRepeat {
                // Nothing changed: the kept picture again, with this frame's times. x264
                // copies all of it (an IDR if one was asked for).
                guard let again = kept else { continue }
                picture = again
                changes = .none
            } else if let converted = try converter.convertIfChanged(frame) {
                picture = converted
                changes = converter.lastChanges
                if source.isChangeDriven { kept = picture }
            } else {
                // The source said it changed, but its pixels are those of the picture kept
                // (sway sends each client paint a second time, damage and all): nothing new to
                // encode, unless it is the frame that ends the run.
                guard let again = kept, isLastBeforeLimit(frame, framesEncoded: encoder?.framesEncoded ?? 0) else {
                    control.state.withLock { $0.counters.unchangedFrames += 1 }
                    continue
                }
                picture = again
                changes = .none
            }
            picture.sequence = frame.sequence
            picture.captureTimeNs = frame.captureTimeNs
            picture.pts90k = frame.pts90k
            let encoder = try encoderFor(picture)
            if control.takeIDRRequest() { encoder.requestIDR() }
            // `--keyint` as a time holds in time: frames skipped while the encoder was late
            // (or a screen that changes slowly) would otherwise put the next IDR, and with it a
            // segment's end, later than asked. A change-driven source's keep-alives still count
            // in frames (a joining reader asks for its own IDR).
            if !(source.isChangeDriven && frame.isRepeat), let span = options.encoder.keyintDuration, let last = lastIDRPTS,
               Int64(clamping: frame.pts90k) - Int64(clamping: last) >= span.ticks {
                encoder.requestIDR()
            }
            if let bitrate = control.takeBitrateRequest() {
                do { try encoder.reconfigure(bitrate: bitrate) } catch { log?("\(error)") }
            }
            let isFinal = isLastBeforeLimit(frame, framesEncoded: encoder.framesEncoded)
            guard let au = try encoder.encode(picture, changes: changes) else {
                if isFinal {
                    try endStream(after: nil)
                    break
                }
                continue
            }
            if au.isIDR { lastIDRPTS = frame.pts90k }
            let finished = Int64(MonotonicClock.nanoseconds)
            let latency = Int64(WallClock.nanoseconds) - Int64(frame.captureTimeNs)
            let end = frame.pts90k &+ UInt64(90_000 / max(1, encoderFrameRate.framesPerSecond))
            control.state.withLock {
                $0.counters.framesEncoded += 1
                $0.counters.bytesEncoded += UInt64(au.byteCount)
                $0.counters.videoEnd90k = max($0.counters.videoEnd90k, end)
                if frame.isRepeat { $0.counters.keepAliveFrames += 1 }
                $0.encodeTotalNs += finished - started
                $0.counters.lastEncodeMs = Double(finished - started) / 1e6
                $0.counters.meanEncodeMs = Double($0.encodeTotalNs) / 1e6 / Double($0.counters.framesEncoded)
                $0.record(latencyNs: latency)
            }
            if isFinal {
                try endStream(after: au)
                break
            }
            if mayBeLast(frame) {
                held = au
                continue
            }
            output(au)
        }
    }

    /// Whether a frame that is not the last by its own time (`isLastBeforeLimit`) may still be
    /// the last of a `--duration` run: a live source skips the slots an encoder that was late
    /// (or a thread that was not run) missed, so its next frame may come past the end. The
    /// frames of the run's last half second (two slots at least) are therefore held until the
    /// next one comes, one slot at most: if that one lies past the end, the held picture goes
    /// out as the stream's last, with its end of sequence (`endStream`), rather than with an
    /// AUD behind it that only a closing picture completes (`AccessUnitDelimiting`). A stall
    /// that began before the last half second and outlasted the end still ends the stream
    /// that way, as a signal does.
    private func mayBeLast(_ frame: Frame) -> Bool {
        guard let limit = options.durationLimit, source.isLive, !source.isChangeDriven else { return false }
        return Double(frame.pts90k) + Swift.max(2 * slot90k, 45_000) > limit * 90_000 - 1
    }

    /// How many of the frames a source skipped between two it gave (`after`, `before`: their
    /// sequence numbers and media times) lay before `endPTS`: placed evenly between the two,
    /// at the source's own pace there.
    static func skipped(after last: (sequence: UInt64, pts90k: UInt64), before next: (sequence: UInt64, pts90k: UInt64), endPTS: Double) -> UInt64 {
        guard next.sequence > last.sequence + 1, next.pts90k > last.pts90k else { return 0 }
        let gap = next.sequence - last.sequence
        let span = Double(next.pts90k - last.pts90k)
        return UInt64((1..<gap).count { Double(last.pts90k) + span * Double($0) / Double(gap) < endPTS })
    }

    /// True for the frame after which the run stops: a file's last, the `--frames`th, or the
    /// last whose next frame slot would reach `--duration` (a paced source's next frame comes
    /// one slot later, and the loop stops here rather than wait for it).
    private func isLastBeforeLimit(_ frame: Frame, framesEncoded: UInt64) -> Bool {
        if source.isAtEnd { return true }
        if let limit = options.frameLimit, framesEncoded + 1 >= UInt64(limit) { return true }
        guard let limit = options.durationLimit else { return false }
        return Double(frame.pts90k) + slot90k > limit * 90_000 - 1
    }

    /// Hands on the last access units of a run that knows where it ends: `au` and whatever x264
    /// still holds (nothing with zero-latency settings), the last of them with an end of
    /// sequence, so that delimited readers get it without an AUD behind it and have nothing
    /// left open (`AccessUnitDelimiting`).
    private func endStream(after au: AccessUnit?) throws {
        var units = au.map { [$0] } ?? []
        units += try flushed()
        streamEnded = true
        guard let last = units.popLast() else { return }
        for unit in units { output(unit) }
        output(last.endingStream())
    }

    /// For a change-driven source, `--duration` is also kept by the clock from the first
    /// frame: on a still screen without keep-alives no frame comes to be checked against it.
    private func startDurationTimer() {
        guard source.isChangeDriven, let limit = options.durationLimit else { return }
        let control = self.control
        let nanoseconds = UInt64(Swift.max(0, limit) * 1e9)
        OSThread(name: "nalcast-duration") {
            control.endDuration(after: nanoseconds)
        }.detach()
    }

    private func encoderFor(_ picture: Frame) throws -> H264Encoder {
        if let encoder { return encoder }
        var parameters = options.encoder
        parameters.width = picture.width
        parameters.height = picture.height
        parameters.frameRate = encoderFrameRate
        let made = try H264Encoder(parameters: parameters, log: log)
        encoder = made
        return made
    }

    private func flush() throws {
        guard !streamEnded else { return }
        for au in try flushed() { output(au) }
    }

    /// The frames x264 still holds, counted.
    private func flushed() throws -> [AccessUnit] {
        guard let encoder else { return [] }
        let units = try encoder.flush()
        for au in units {
            control.state.withLock {
                $0.counters.framesEncoded += 1
                $0.counters.bytesEncoded += UInt64(au.byteCount)
            }
        }
        return units
    }
}
