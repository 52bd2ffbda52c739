/// The audio track of a stream, fixed for a run: what a muxer needs to declare it.
///
/// nalcast's audio is AAC-LC (what MP4, MPEG-TS, Matroska, FLV and RTMP all take), encoded by
/// `produce` or read from a container by `consume`; WebRTC viewers get it as Opus (48 kHz,
/// 20 ms packets), transcoded from the AAC.
public struct AudioFormat: Sendable, Hashable {
    public enum Codec: String, Sendable, Hashable {
        case aac
        case opus
    }

    public var codec: Codec
    public var sampleRate: Int
    public var channels: Int
    /// Target bits per second (0 when unknown, e.g. read from a container).
    public var bitrate: Int
    /// Samples per channel in one packet: 1024 for AAC-LC, 960 for Opus (20 ms).
    public var samplesPerPacket: Int
    /// The codec's configuration as containers carry it: for AAC the AudioSpecificConfig
    /// (ISO/IEC 14496-3), the `esds` of MP4, `CodecPrivate` of Matroska.
    public var extradata: [UInt8]

    public init(codec: Codec = .aac, sampleRate: Int = 48_000, channels: Int = 2, bitrate: Int = 128_000,
                samplesPerPacket: Int = 1024, extradata: [UInt8]) {
        self.codec = codec
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitrate = bitrate
        self.samplesPerPacket = samplesPerPacket
        self.extradata = extradata
    }

    /// How long one packet lasts.
    public var packetDuration: MediaTime {
        MediaTime(ticks: Int64(samplesPerPacket) * MediaTime.ticksPerSecond / Int64(Swift.max(1, sampleRate)))
    }
}

/// One encoded audio packet (for AAC one raw frame of 1024 samples, without an ADTS header),
/// placed on the same media time line as the video's access units.
///
/// Immutable and `Sendable`: every sink's queue holds the same value.
public struct AudioPacket: Sendable {
    public let data: [UInt8]
    /// Where its first sample sits in media time (90 kHz ticks), on the time line of the
    /// video's `TimedUnit.mediaTime`.
    public let mediaTime: MediaTime
    /// Wall-clock (CLOCK_REALTIME) nanoseconds when its first sample was captured, the clock
    /// of the timestamp SEI's capture time; 0 when unknown (read from a container).
    public let captureTimeNs: UInt64

    public init(data: [UInt8], mediaTime: MediaTime, captureTimeNs: UInt64 = 0) {
        self.data = data
        self.mediaTime = mediaTime
        self.captureTimeNs = captureTimeNs
    }
}
