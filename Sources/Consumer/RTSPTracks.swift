import Clocks
import H264
import Media
import Muxing
import RTP
import RTSP

/// One RTSP opening's tracks, from packets to the intake: the H.264 track through
/// `H264Depacketizer` (an access unit ends at its marker bit) and `AnnexBPackager` (the
/// SDP's sprop-parameter-sets in front of an IDR that came without its own), the AAC track
/// through `AACDepacketizer`; both timed on the video's RTP clock, audio placed there
/// through wall-clock time: RTCP sender reports map each track's RTP times to NTP time;
/// before a track's first report, its first packet's arrival stands in. Receiver reports
/// go back every few seconds. Owned by the reader's thread.
struct RTSPTracks {
    /// A track's RTP clock tied to wall-clock seconds: at its first packet's arrival, and
    /// by its latest sender report. The two tracks are put side by side through their
    /// reports once both have one (the sender's clock for both), else through their first
    /// packets (ours for both): never one of each.
    struct TrackClock {
        typealias Anchor = (rtp: Int64, seconds: Double)
        let rate: Double
        var first: Anchor?
        var report: Anchor?

        static func place(_ ticks: Int64, from a: TrackClock, to b: TrackClock) -> Int64? {
            let pair: (Anchor, Anchor)
            if let ar = a.report, let br = b.report { pair = (ar, br) } else if let af = a.first, let bf = b.first { pair = (af, bf) } else { return nil }
            let wall = pair.0.seconds + Double(ticks - pair.0.rtp) / a.rate
            return pair.1.rtp + Int64(((wall - pair.1.seconds) * b.rate).rounded())
        }
    }

    /// A 32-bit RTP timestamp made a rising 64-bit one (wraps followed, either way).
    struct Unwrapper {
        private var last: Int64?
        mutating func extend(_ ts: UInt32) -> Int64 {
            guard let last else { self.last = Int64(ts); return Int64(ts) }
            let next = last + Int64(Int32(bitPattern: ts &- UInt32(truncatingIfNeeded: last)))
            self.last = next
            return next
        }
    }

    let client: RTSPClient
    var video = H264Depacketizer()
    var packager: AnnexBPackager
    var videoTime = Unwrapper()
    var videoClock = TrackClock(rate: 90_000)
    var videoReception = RTPReception(clockRate: 90_000)
    var audio: AACDepacketizer?
    var audioFormat: AudioFormat?
    var audioTime = Unwrapper()
    var audioClock: TrackClock?
    var audioReception: RTPReception?
    var lastReports = MonotonicClock.seconds
    let ssrc = UInt32.random(in: 1...UInt32.max)
    /// Losses and malformed packets already counted in the metrics.
    var countedLoss = 0
    var countedMalformed = 0
    /// Packets that were not RTP or RTCP.
    var unparsed = 0

    init(client: RTSPClient) {
        self.client = client
        let video = client.tracks[0].media
        // The SDP's parameter sets, for an IDR that comes without its own.
        let sets: [UInt8] = video.parameterSets.flatMap { (set: [UInt8]) -> [UInt8] in [0, 0, 0, 1] + set }
        // Annex-B sets (a start code first) or none: never an avcC record, the one form
        // `AnnexBPackager` can refuse.
        packager = (try? AnnexBPackager(extradata: sets)) ?? (try! AnnexBPackager(extradata: []))
        if client.tracks.count > 1, let config = client.tracks[1].media.audioSpecificConfig {
            let media = client.tracks[1].media
            let f = media.format
            audio = AACDepacketizer(sizeLength: Int(f["sizelength"] ?? "") ?? 13, indexLength: Int(f["indexlength"] ?? "") ?? 3,
                                    indexDeltaLength: Int(f["indexdeltalength"] ?? "") ?? 3)
            let (rate, channels) = Self.audioParameters(config, media)
            audioFormat = AudioFormat(sampleRate: rate, channels: channels, bitrate: 0, extradata: config)
            audioClock = TrackClock(rate: Double(max(1, media.clockRate)))
            audioReception = RTPReception(clockRate: media.clockRate)
        }
    }

    /// The AudioSpecificConfig's sampling frequency and channels (ISO/IEC 14496-3 1.6.2.1),
    /// else the SDP's rtpmap.
    static func audioParameters(_ config: [UInt8], _ media: SessionDescription.Media) -> (Int, Int) {
        let rates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]
        guard config.count >= 2 else { return (media.clockRate, media.channels) }
        let index = Int(config[0] & 0x07) << 1 | Int(config[1] >> 7)
        let channels = Int(config[1] >> 3 & 0x0F)
        return (index < rates.count ? rates[index] : media.clockRate, channels > 0 ? channels : media.channels)
    }

    /// Video packets in, whole access units out, each with its media time (the video's
    /// RTP clock, 90 kHz).
    mutating func takeVideo(_ bytes: [UInt8], into intake: StreamIntake) {
        guard let packet = try? RTPPacket(parsing: bytes[...]) else { unparsed += 1; return }
        let now = MonotonicClock.seconds
        videoReception.note(packet, arrival: now)
        let ticks = videoTime.extend(packet.timestamp)
        if videoClock.first == nil { videoClock.first = (ticks, Self.wallSeconds) }
        for unit in video.take(packet) { deliver(unit, ticks: ticks, intake) }
    }

    private mutating func deliver(_ unit: H264Depacketizer.Unit, ticks: Int64, _ intake: StreamIntake) {
        // Copies of the SPS and PPS between one picture's slices are left out.
        let nals = AnnexBPackager.droppingRepeatedParameterSets(unit.nalUnits)
        let time = ticks - Int64(Int32(bitPattern: UInt32(truncatingIfNeeded: ticks) &- unit.rtpTimestamp))
        if let au = packager.assemble(nals) {
            intake.push(unit: au, packetTime: MediaTime(ticks: time), byteCount: au.byteCount)
        }
    }

    /// Audio packets in, AAC frames out, placed on the video's clock through wall time.
    mutating func takeAudio(_ bytes: [UInt8], into intake: StreamIntake) {
        guard var depacketizer = audio, var clock = audioClock else { return }
        guard let packet = try? RTPPacket(parsing: bytes[...]) else { unparsed += 1; return }
        audioReception?.note(packet, arrival: MonotonicClock.seconds)
        let ticks = audioTime.extend(packet.timestamp)
        if clock.first == nil { clock.first = (ticks, Self.wallSeconds) }
        let frames = depacketizer.take(packet)
        audio = depacketizer
        audioClock = clock
        for frame in frames {
            let frameTicks = ticks + Int64(Int32(bitPattern: frame.rtpTimestamp &- packet.timestamp))
            // Before the first picture there is no video clock: the intake drops (and counts) it.
            let videoTicks = TrackClock.place(frameTicks, from: clock, to: videoClock) ?? 0
            intake.push(audio: frame.data, packetTime: MediaTime(ticks: videoTicks))
        }
    }

    static var wallSeconds: Double { Double(WallClock.nanoseconds) / 1e9 }

    /// An RTCP compound of track `track`: a sender report re-anchors its clock.
    mutating func takeRTCP(_ bytes: [UInt8], track: Int) {
        guard let packets = RTCP.packets(in: bytes[...]) else { unparsed += 1; return }
        for p in packets {
            guard let report = RTCP.SenderReport(p) else { continue }
            let now = MonotonicClock.seconds
            if track == 0 {
                videoReception.note(report, arrival: now)
                videoClock.report = (videoTime.extend(report.rtpTimestamp), report.unixSeconds)
            } else if audioClock != nil {
                audioReception?.note(report, arrival: now)
                audioClock?.report = (audioTime.extend(report.rtpTimestamp), report.unixSeconds)
            }
        }
    }

    /// Receiver reports, every 5 s (RFC 3550's interval for a receiver alone).
    mutating func reportIfDue() {
        let now = MonotonicClock.seconds
        guard now - lastReports >= 5 else { return }
        lastReports = now
        client.send(rtcp: videoReception.receiverReport(ourSSRC: ssrc, now: now), track: 0)
        if var audio = audioReception {
            client.send(rtcp: audio.receiverReport(ourSSRC: ssrc, now: now), track: 1)
            audioReception = audio
        }
    }

    /// Packets missing from the sequence so far, both tracks.
    var lostPackets: Int { videoReception.lost + (audioReception?.lost ?? 0) }
    var malformedPackets: Int { unparsed + video.malformedPackets + (audio?.malformedPackets ?? 0) }
}
