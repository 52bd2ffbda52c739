import Clocks
import CMedia
import Media
import Output

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A `--forward` to a media server (`PushTarget`): each connection is a libavformat muxer
/// (FLV, MPEG-TS, RTSP) over libavformat's protocol, its header made from the first entry
/// point's SPS and PPS; packets are the access units copied, timed by a `PacketTimer` that
/// lives across connections, so a server sees decode times keep rising after a reconnect
/// (a gap in the stream is a gap in time).
///
/// Every blocking libavformat call (connect and handshake, a write the server does not take,
/// the trailer) gives up at a deadline, through the interrupt callback: `connectTimeout`
/// for opening, `sendTimeout` for the rest. A dead server costs this thread at most that.
public final class PushTransport: ForwardTransport {
    public let push: PushTarget
    private let connectTimeout: Double
    private let sendTimeout: Double
    private let fallbackFrameRate: Double?
    private var timer: PacketTimer
    private var muxer: Muxer?
    private var audioFormat: AudioFormat?
    private var audio = AudioInterleaver()
    /// An RTSP push with sound sends each picture when the audio of its instant is there,
    /// so that the two tracks leave (and reach the server) in step. RTP receivers time what
    /// comes by when it arrives (GStreamer's jitter buffer; FFmpeg's RTP muxer also reports
    /// each stream's time 0 as the moment its first packet went out), not by the timestamps
    /// alone, and audio is ready after the picture of its instant: encoded about 150 ms
    /// later, or several frames to a PES packet from an MPEG-TS source. Sent as soon as
    /// each was ready, a recording had its sound 150 to 260 ms late.
    private var waitsForAudio = false
    private var held: [PacketTimer.Packet] = []
    /// At most this many pictures wait for the audio (3 s at 30 fps): a sound source that
    /// sends nothing does not hold the video back longer.
    static let maxHeld = 90
    private let interrupt: UnsafeMutablePointer<CMedia_interrupt>
    /// The connection's SRT socket (an `srt://` push): drained at the end, its totals reported.
    private var srt: SRTConnection?
    private var summary: String?
    /// Audio packets that libavformat took and never sent (`close`).
    private var unsentAudio = 0

    public init(_ push: PushTarget, fallbackFrameRate: Double? = nil, countedClock: Bool = false, connectTimeout: Double = 5, sendTimeout: Double = 5) {
        self.push = push
        self.connectTimeout = connectTimeout
        self.sendTimeout = sendTimeout
        self.fallbackFrameRate = fallbackFrameRate
        timer = PacketTimer(countedClock: countedClock, waitsForDuration: false)
        interrupt = .allocate(capacity: 1)
        interrupt.initialize(to: CMedia_interrupt(deadline_ns: 0, stop: 0, fired: 0))
    }

    deinit {
        muxer = nil
        interrupt.deinitialize(count: 1)
        interrupt.deallocate()
    }

    public var target: String { push.description }

    public func open(first: TimedUnit) throws(ForwardError) {
        muxer = nil
        timer = PacketTimer(continuing: timer)
        do {
            arm(connectTimeout)
            let opened = try Muxer(push: push.url, muxer: push.muxer, label: push.kind.rawValue, protocolOptions: push.protocolOptions,
                                   headerOptions: push.headerOptions, interrupt: interrupt)
            opened.audio = audioFormat
            try opened.writeHeader(entry: first, fallbackFrameRate: fallbackFrameRate)
            muxer = opened
            srt = push.kind == .srt ? opened.srt : nil
            waitsForAudio = push.kind == .rtsp && opened.hasAudioTrack
            held.removeAll()
        } catch {
            if push.kind == .srt, let secret = push.secret, secret.isRefused(by: push.url) {
                throw ForwardError(SRTSecret.refusedText, refused: true)
            }
            throw ForwardError(error.message)
        }
    }

    public func send(_ unit: TimedUnit, entry: Bool) throws(ForwardError) {
        guard let muxer else { throw ForwardError("not connected") }
        timer.add(unit)
        do {
            arm(sendTimeout)
            try timer.take(finishing: false) { (packet) throws(MuxError) in
                if waitsForAudio {
                    held.append(packet)
                    try release(muxer)
                } else {
                    try write(packet, muxer)
                }
            }
        } catch {
            throw ForwardError(error.message)
        }
    }

    /// The audio up to the picture's decode time (and `lead` past it), then the picture.
    private func write(_ packet: PacketTimer.Packet, _ muxer: Muxer, lead: Int64 = 0) throws(MuxError) {
        try audio.write(upTo: packet.dts + lead, muxer: muxer)
        try muxer.write(packet.nalUnits, pts: packet.pts, dts: packet.dts, duration: packet.duration, keyframe: packet.keyframe)
    }

    /// Writes the pictures held (`waitsForAudio`) whose audio is there, each after the audio
    /// before it; all of them when `all` (the end), the oldest past `maxHeld`.
    private func release(_ muxer: Muxer, all: Bool = false) throws(MuxError) {
        var n = 0
        // FFmpeg's AAC packetizer sends a frame when it is given the next one: a picture goes
        // with the audio a frame past its instant, so that its own audio is out with it.
        let lead = audioFormat?.packetDuration.ticks ?? 0
        while n < held.count && (all || held.count - n > Self.maxHeld || audio.reaches(held[n].pts + lead)) {
            try write(held[n], muxer, lead: lead + max(0, held[n].pts - held[n].dts))
            n += 1
        }
        held.removeFirst(n)
    }

    public func flush() throws(ForwardError) -> Int {
        guard let muxer else { return 0 }
        let before = muxer.bytesWritten
        do {
            arm(sendTimeout)
            try muxer.flush()
        } catch {
            throw ForwardError(error.message)
        }
        return muxer.bytesWritten - before
    }

    public func discontinuity() {
        timer.discontinuity()
    }

    public func close(finishing: Bool) throws(ForwardError) {
        guard muxer != nil else { return }
        var failure: ForwardError?
        if finishing {
            do {
                arm(sendTimeout)
                let muxer = self.muxer!
                try release(muxer, all: true)
                try timer.take(finishing: true) { (packet) throws(MuxError) in try write(packet, muxer) }
                try audio.write(upTo: nil, muxer: muxer)
                try muxer.finish()
                // The receiver hands the last packets on a latency after they came, and drops
                // what it holds when it hears of the close: wait for that (`SRTConnection`).
                if let srt, !srt.drain(deadline: MonotonicClock.nanoseconds + UInt64(sendTimeout * 1e9)) {
                    failure = ForwardError("SRT: the last packets were not all acknowledged")
                }
            } catch {
                failure = ForwardError(error.message)
            }
        }
        if let totals = srt?.totals { summary = totals.description }
        srt = nil
        // FFmpeg's RTP packetizer for AAC sends a frame when it is given the next one, and its
        // trailer frees the one it holds: the last audio packet of an RTSP push never leaves.
        if push.kind == .rtsp, muxer?.wroteAudio == true { unsentAudio += 1 }
        // Freeing the muxer closes the connection (an RTSP one says TEARDOWN): briefly,
        // after a failure.
        arm(finishing && failure == nil ? sendTimeout : 0.5)
        audio.discard()
        held.removeAll()
        muxer = nil
        interrupt.pointee.deadline_ns = 0
        if let failure { throw failure }
    }

    /// FLV (RTMP), MPEG-TS (SRT, UDP) and RTSP all carry AAC.
    public var carriesAudio: Bool { true }

    /// Declared in the header of every connection opened from now on.
    public func declareAudio(_ format: AudioFormat) {
        audioFormat = format
    }

    /// Waits for the first video packet that decodes after it (`AudioInterleaver`); a
    /// connection without an audio track (opened before the format came) counts it dropped.
    public func send(audio packet: AudioPacket) throws(ForwardError) {
        guard let muxer else { throw ForwardError("not connected") }
        do {
            arm(sendTimeout)
            try audio.add(packet, format: audioFormat, offset: timer.mediaToContainer, muxer: muxer)
            if !held.isEmpty { try release(muxer) }
        } catch {
            throw ForwardError(error.message)
        }
    }

    public func takeDroppedAudio() -> Int {
        defer { unsentAudio = 0 }
        return audio.takeCounts().dropped + unsentAudio
    }

    /// What SRT did on the connection that closed last (`SRTConnection.Totals`).
    public func takeSummary() -> String? {
        defer { summary = nil }
        return summary
    }

    /// The next blocking calls give up `seconds` from now.
    private func arm(_ seconds: Double) {
        interrupt.pointee.fired = 0
        interrupt.pointee.deadline_ns = Int64(MonotonicClock.nanoseconds) + Int64(seconds * 1e9)
    }
}
