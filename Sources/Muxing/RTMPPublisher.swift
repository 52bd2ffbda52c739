import Media
import Output

/// A `--forward rtmp://HOST[:PORT]/APP/KEY`: nalcast's own RTMP publisher, no libavformat.
/// Each connection is an `RTMPSession` (handshake, connect, createStream, publish) carrying
/// FLV's tags (`RTMPStream`); each flush is one gathered write of every message queued since
/// the last (with a chunk size of 64 KiB, a picture is one chunk), where libavformat's RTMP
/// protocol makes a `send` and a `poll` per 4096-byte chunk and per chunk header.
///
/// As `PushTransport` (whose place it takes for `rtmp://`; `rtmps://` stays there): times
/// from a `PacketTimer` that lives across connections (a server sees them keep rising after
/// a reconnect), the sound interleaved by time (`AudioInterleaver`), every wait bounded:
/// `connectTimeout` for opening, `sendTimeout` for each flush. A server that refuses the
/// connection or the publish (`_error`, an `onStatus` of level error) is one line.
public final class RTMPPublisher: ForwardTransport {
    public let push: PushTarget
    private let address: RTMPAddress
    private let connectTimeout: Double
    private let sendTimeout: Double
    private let fallbackFrameRate: Double?
    private var timer: PacketTimer
    private var stream: RTMPStream?
    private var audioFormat: AudioFormat?
    private var audio = AudioInterleaver()

    /// nil when `push` is not a plain `rtmp://` URL this publisher can parse.
    public init?(_ push: PushTarget, fallbackFrameRate: Double? = nil, countedClock: Bool = false, connectTimeout: Double = 5, sendTimeout: Double = 5) {
        guard let address = Self.address(of: push) else { return nil }
        self.push = push
        self.address = address
        self.connectTimeout = connectTimeout
        self.sendTimeout = sendTimeout
        self.fallbackFrameRate = fallbackFrameRate
        timer = PacketTimer(countedClock: countedClock, waitsForDuration: false)
    }

    /// Where `push` goes when this publisher takes it: a plain `rtmp://` URL it can parse.
    static func address(of push: PushTarget) -> RTMPAddress? {
        push.kind == .rtmp ? RTMPAddress(push.url) : nil
    }

    public var target: String { push.description }

    public func open(first: TimedUnit) throws(ForwardError) {
        stream = nil
        timer = PacketTimer(continuing: timer)
        let session = try RTMPSession(address, timeout: connectTimeout)
        stream = RTMPStream(session: session, entry: first, audio: audioFormat, fallbackFrameRate: fallbackFrameRate)
    }

    public func send(_ unit: TimedUnit, entry: Bool) throws(ForwardError) {
        guard let stream else { throw ForwardError("not connected") }
        timer.add(unit)
        try take(stream, finishing: false)
    }

    /// The packets the timer has settled, each after the sound before it.
    private func take(_ stream: RTMPStream, finishing: Bool) throws(ForwardError) {
        do {
            try timer.take(finishing: finishing) { (packet) throws(MuxError) in
                try audio.write(upTo: packet.dts, muxer: stream)
                stream.writeVideo(packet)
            }
        } catch {
            throw ForwardError(error.message)
        }
    }

    public func flush() throws(ForwardError) -> Int {
        guard let stream else { return 0 }
        try stream.session.flush(timeout: sendTimeout)
        return stream.takeBytes()
    }

    public func discontinuity() {
        timer.discontinuity()
    }

    public func close(finishing: Bool) throws(ForwardError) {
        guard let stream else { return }
        defer {
            audio.discard()
            self.stream = nil
        }
        guard finishing else { return }
        try take(stream, finishing: true)
        do {
            try audio.write(upTo: nil, muxer: stream)
        } catch {
            throw ForwardError(error.message)
        }
        stream.writeEnd()
        try stream.session.flush(timeout: sendTimeout)
        stream.session.unpublish(timeout: sendTimeout)
    }

    /// FLV carries AAC.
    public var carriesAudio: Bool { true }

    /// Declared (onMetaData, the AAC sequence header) on every connection opened from now on.
    public func declareAudio(_ format: AudioFormat) {
        audioFormat = format
    }

    public func send(audio packet: AudioPacket) throws(ForwardError) {
        guard let stream else { throw ForwardError("not connected") }
        do {
            try audio.add(packet, format: audioFormat, offset: timer.mediaToContainer, muxer: stream)
        } catch {
            throw ForwardError(error.message)
        }
    }

    public func takeDroppedAudio() -> Int {
        audio.takeCounts().dropped
    }
}

extension PushTarget {
    /// The transport that speaks this target's protocol: nalcast's own RTMP publisher for
    /// `rtmp://`, libavformat for `rtmps://`, SRT, RTSP and UDP.
    public func makeTransport(fallbackFrameRate: Double?, countedClock: Bool) -> sending any ForwardTransport {
        if let publisher = RTMPPublisher(self, fallbackFrameRate: fallbackFrameRate, countedClock: countedClock) { return publisher }
        return PushTransport(self, fallbackFrameRate: fallbackFrameRate, countedClock: countedClock)
    }

    /// True when the push goes through libavformat (which must then be there): when
    /// `makeTransport` does not give nalcast's own RTMP publisher.
    public var needsFFmpeg: Bool { RTMPPublisher.address(of: self) == nil }
}
