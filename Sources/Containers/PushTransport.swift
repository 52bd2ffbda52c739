import CAVFormat
import H264
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
    private let interrupt: UnsafeMutablePointer<CAVFormat_interrupt>

    public init(_ push: PushTarget, fallbackFrameRate: Double? = nil, countedClock: Bool = false, connectTimeout: Double = 5, sendTimeout: Double = 5) {
        self.push = push
        self.connectTimeout = connectTimeout
        self.sendTimeout = sendTimeout
        self.fallbackFrameRate = fallbackFrameRate
        timer = PacketTimer(countedClock: countedClock, waitsForDuration: false)
        interrupt = .allocate(capacity: 1)
        interrupt.initialize(to: CAVFormat_interrupt(deadline_ns: 0, stop: 0, fired: 0))
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
        } catch {
            throw ForwardError(error.message)
        }
    }

    public func send(_ unit: TimedUnit, entry: Bool) throws(ForwardError) {
        guard let muxer else { throw ForwardError("not connected") }
        timer.add(unit)
        do {
            arm(sendTimeout)
            try timer.take(finishing: false) { (packet) throws(MuxError) in
                try audio.write(upTo: packet.dts, muxer: muxer)
                try muxer.write(packet.nalUnits, pts: packet.pts, dts: packet.dts, duration: packet.duration, keyframe: packet.keyframe)
            }
        } catch {
            throw ForwardError(error.message)
        }
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
                try timer.take(finishing: true) { (packet) throws(MuxError) in
                    try audio.write(upTo: packet.dts, muxer: muxer)
                    try muxer.write(packet.nalUnits, pts: packet.pts, dts: packet.dts, duration: packet.duration, keyframe: packet.keyframe)
                }
                try audio.write(upTo: nil, muxer: muxer)
                try muxer.finish()
            } catch {
                failure = ForwardError(error.message)
            }
        }
        // Freeing the muxer closes the connection (an RTSP one says TEARDOWN): briefly,
        // after a failure.
        arm(finishing && failure == nil ? sendTimeout : 0.5)
        audio.discard()
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
        } catch {
            throw ForwardError(error.message)
        }
    }

    public func takeDroppedAudio() -> Int { audio.takeCounts().dropped }

    /// The next blocking calls give up `seconds` from now.
    private func arm(_ seconds: Double) {
        interrupt.pointee.fired = 0
        interrupt.pointee.deadline_ns = Int64(monotonicNanoseconds()) + Int64(seconds * 1e9)
    }
}
