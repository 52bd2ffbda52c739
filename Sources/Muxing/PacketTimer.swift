import FIFO
import Media
import Output

/// Places access units in a container's time and hands them out as packets, for the
/// writers of files (`ContainerSink`) and of pushes (`PushTransport`).
///
/// Timing, per access unit:
/// - decode time: its media time (`TimedUnit.mediaTime`: the timestamp SEI's `pts_90k`,
///   else the access units counted at the VUI frame rate, else the arrival time), kept
///   strictly rising; after a discontinuity (a reconnect: a new stream whose clock may
///   start over) the times go on from where they were; a counted field is half a step;
/// - presentation time: the same for nalcast's own streams (the timestamp SEI: no
///   B-frames); for others, from the codec's picture order (`PictureOrder`; H.264's picture
///   order count) and `PresentationTimeline`, so B-frames are presented in their order.
/// A skip or a dropped frame stays a jump in time. The two fields of a field pair (two
/// access units) are one packet: one sample, one frame, as containers count them.
///
/// Durations: a file's packet waits for the next one, whose decode time gives its duration
/// (the last gets the step before it). A push does not wait: no protocol it speaks
/// carries durations, and waiting would hold every picture back by a frame interval; its
/// packets get the step before them.
///
/// Times move back by the first packet's pts - dts (the reordering delay of a stream with
/// B-frames), so that presentation starts at the first decode time and decode times start
/// before it, as in FFmpeg's own files. One thread.
struct PacketTimer {
    struct Packet {
        var nalUnits: [NALUnit]
        var pts: Int64
        var dts: Int64
        /// 90 kHz ticks; the step before it when not waiting for the next packet.
        var duration: Int64
        var keyframe: Bool
    }

    /// See `ContainerSink.init(format:target:fallbackFrameRate:countedClock:)`.
    private let countedClock: Bool
    private let waitsForDuration: Bool
    /// The codec's picture order, made at the first access unit (which names the codec).
    private var order: (any PictureOrder)?
    private var timeline = PresentationTimeline()
    /// Access units pushed to the timeline, not yet handed out, in decode order.
    private var queued = FIFO<(nalUnits: [NALUnit], keyframe: Bool)>()
    /// The packet waiting for the next one's decode time (its duration).
    private var held: (nalUnits: [NALUnit], times: PresentationTimeline.Times, keyframe: Bool)?
    private var lastStep: Int64 = 3000
    /// Decode times: the last one given, the media time it came from.
    private var lastDts: Int64?
    private var lastMediaTime: Int64 = 0
    private var lastTimes: PresentationTimeline.Times?
    private var afterDiscontinuity = false
    private var previousWasField = false
    private var presentationShift: Int64?
    /// A first field waiting for its second.
    private var pendingField: (unit: TimedUnit, info: PictureOrderInfo)?

    /// - Parameters:
    ///   - countedClock: media time without a timestamp SEI counts access units at the frame
    ///     rate (`consume` from a file): a field is then half a frame's step.
    ///   - waitsForDuration: hold each packet until the next one gives its duration (files).
    init(countedClock: Bool, waitsForDuration: Bool) {
        self.countedClock = countedClock
        self.waitsForDuration = waitsForDuration
    }

    /// A timer for a new connection of a push: nothing pending, but its times go on from
    /// where `previous` left them (a server sees them keep rising across reconnects).
    init(continuing previous: PacketTimer) {
        self.init(countedClock: previous.countedClock, waitsForDuration: previous.waitsForDuration)
        lastStep = previous.lastStep
        lastDts = previous.lastDts
        lastMediaTime = previous.lastMediaTime
        presentationShift = previous.presentationShift
        afterDiscontinuity = true
    }

    /// What to add to a media time to place it on this timer's container time line, as the
    /// last access unit was placed: audio of the same media time presents with a picture
    /// whose reordering delay the presentation shift took off (an IDR, where segments
    /// start). nil before the first access unit.
    var mediaToContainer: Int64? {
        guard let lastDts else { return nil }
        return lastDts &- lastMediaTime
    }

    /// Access units taken and not handed out yet (a field waiting for its pair counts one).
    var pendingCount: Int { queued.count + (held == nil ? 0 : 1) + (pendingField == nil ? 0 : 1) }

    /// The next access unit in stream order.
    mutating func add(_ unit: TimedUnit) {
        // nalcast's own streams (timestamp SEI, no B-frames) present at their decode time.
        var info: PictureOrderInfo?
        if unit.unit.timestamp == nil {
            if order == nil { order = unit.unit.codec.makePictureOrder() }
            info = order!.info(for: unit.unit)
        }
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
    }

    /// Something was lost before the next access unit (a skip, a reconnect upstream).
    mutating func discontinuity() {
        flushPendingField()
        afterDiscontinuity = true
    }

    /// Hands out every packet whose times are settled, in decode order; with `finishing`,
    /// all of them (nothing more will come).
    mutating func take(finishing: Bool, _ write: (Packet) throws(MuxError) -> Void) throws(MuxError) {
        if finishing { flushPendingField() }
        while let times = timeline.pop(finishing: finishing) {
            guard let next = queued.popFirst() else { preconditionFailure("the timeline gave times for an access unit not queued") }
            if waitsForDuration {
                if let held {
                    let step = times.dts - held.times.dts
                    if step > 0 { lastStep = step }
                    try write(packet(held.nalUnits, held.times, duration: max(step, 0), keyframe: held.keyframe))
                }
                held = (next.nalUnits, times, next.keyframe)
            } else {
                if let last = lastTimes, times.dts > last.dts { lastStep = times.dts - last.dts }
                lastTimes = times
                try write(packet(next.nalUnits, times, duration: lastStep, keyframe: next.keyframe))
            }
        }
        if finishing, let held {
            self.held = nil
            try write(packet(held.nalUnits, held.times, duration: lastStep, keyframe: held.keyframe))
        }
    }

    /// A first field whose second never came goes out alone.
    private mutating func flushPendingField() {
        guard let field = pendingField else { return }
        pendingField = nil
        push(field.unit, field.info, nalUnits: field.unit.nalUnits)
    }

    /// One packet into the timeline: its decode time, its place in presentation order.
    private mutating func push(_ unit: TimedUnit, _ info: PictureOrderInfo?, nalUnits: [NALUnit]) {
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

    private mutating func packet(_ nalUnits: [NALUnit], _ times: PresentationTimeline.Times, duration: Int64, keyframe: Bool) -> Packet {
        let shift = presentationShift ?? (times.pts - times.dts)
        presentationShift = shift
        return Packet(nalUnits: nalUnits, pts: times.pts - shift, dts: times.dts - shift, duration: duration, keyframe: keyframe)
    }
}
