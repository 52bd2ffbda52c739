import Media

/// What `OpusTranscoder` and `AACTranscoder` share: the decoded sound (48 kHz, interleaved
/// stereo) waiting for a whole frame of the encoder, and the media time line the encoder's
/// packets go on. The encoder's sample count goes on for ever; the time line says where its
/// sample 0 sits, and is moved at a gap or a jump (a packet more than 100 ms from where the
/// last one ended: a relay's source that came back, the next WHIP publisher): what was
/// waiting is dropped, and what the encoder still holds keeps its place just before the new
/// sound, rather than coming out as far ahead as the time before the jump lasted.
struct TranscodeTimeline {
    /// Decoded samples waiting for a whole frame (interleaved stereo).
    var pending: [Float] = []
    /// The samples (per channel) handed to the encoder.
    private(set) var position: Int64 = 0
    /// The media time of the encoder's sample 0; nil before the first packet.
    private var origin: MediaTime?
    /// Where the next packet should begin.
    private var expected: MediaTime?

    /// A packet in at media time `time`: the time line starts there when it is the first or
    /// too far from `expected`.
    mutating func place(_ time: MediaTime) {
        if let expected, abs(time.ticks - expected.ticks) > MediaTime.ticksPerSecond / 10 {
            pending.removeAll(keepingCapacity: true)
            origin = nil
        }
        if origin == nil { origin = MediaTime(ticks: time.ticks - position * MediaTime.ticksPerSecond / 48_000) }
    }

    /// The next packet in should begin at `time`.
    mutating func expect(_ time: MediaTime) { expected = time }

    /// A whole frame of `count` samples is waiting.
    func hasFrame(_ count: Int) -> Bool { pending.count >= count * 2 }

    /// The frame of `count` samples at the front of `pending` went to the encoder.
    mutating func advance(_ count: Int) {
        pending.removeFirst(count * 2)
        position += Int64(count)
    }

    /// The media time of the encoder's sample `pts`; nil before the first packet.
    func time(ofSample pts: Int64) -> MediaTime? {
        origin.map { MediaTime(ticks: $0.ticks + pts * MediaTime.ticksPerSecond / 48_000) }
    }
}
