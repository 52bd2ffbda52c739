import FIFO
import Media
import Output

/// Where an `AudioInterleaver` writes: a libavformat `Muxer`, or an RTMP publisher's stream
/// (`RTMPStream`).
protocol AudioTrackWriter: AnyObject {
    /// True when the connection or file declared an audio track.
    var hasAudioTrack: Bool { get }
    /// The track it declared.
    var audio: AudioFormat? { get }
    /// One packet at `pts` (90 kHz, on the video's container time line); false when it was
    /// not written (no track, out of time order).
    func writeAudio(_ data: [UInt8], pts: Int64, duration: Int64) throws(MuxError) -> Bool
}

extension Muxer: AudioTrackWriter {}

/// The audio packets of a container writer (`ContainerSink`, `PushTransport`, `RTMPPublisher`) waiting for
/// the video to pass them, so that the two tracks go out interleaved by time: each packet is
/// placed on the container's time line as the last access unit was
/// (`PacketTimer.mediaToContainer`) and written before the first video packet that decodes
/// after it (the rest at the end). Counts what it wrote and what it could not. One thread.
struct AudioInterleaver {
    private var pending = FIFO<(data: [UInt8], pts: Int64, duration: Int64)>()
    /// Written and dropped since the last `takeCounts`.
    private var written = 0
    private var dropped = 0
    /// At most this many packets wait for video (about 10 s at 48 kHz): past it, the oldest
    /// is written anyway.
    static let maxPending = 500

    /// Takes one packet of the track `format`; `offset` is nil while no access unit was
    /// placed. Dropped and counted when the header declared no audio track, or another one
    /// (the track changed after it was written), or before the first picture.
    mutating func add(_ packet: AudioPacket, format: AudioFormat?, offset: Int64?, muxer: some AudioTrackWriter) throws(MuxError) {
        guard muxer.hasAudioTrack, let offset, let format, muxer.audio == format else {
            dropped += 1
            return
        }
        if pending.count >= Self.maxPending { try write(upTo: nil, count: 1, muxer: muxer) }
        pending.append((packet.data, packet.mediaTime.ticks &+ offset, format.packetDuration.ticks))
    }

    /// True when a waiting packet holds the sound of container time `time` or later.
    func reaches(_ time: Int64) -> Bool {
        guard let last = pending.last else { return false }
        return last.pts + last.duration > time
    }

    /// Writes the waiting packets up to container time `time` (all when nil), at most `count`.
    mutating func write(upTo time: Int64?, count: Int = .max, muxer: some AudioTrackWriter) throws(MuxError) {
        var n = 0
        while n < count, let next = pending.first {
            if let time, next.pts > time { break }
            _ = pending.popFirst()
            n += 1
            if try muxer.writeAudio(next.data, pts: next.pts, duration: next.duration) { written += 1 } else { dropped += 1 }
        }
    }

    /// Drops what waits (a connection lost), counted.
    mutating func discard() {
        dropped += pending.count
        pending.removeAll()
    }

    mutating func takeCounts() -> (written: Int, dropped: Int) {
        defer {
            written = 0
            dropped = 0
        }
        return (written, dropped)
    }
}
