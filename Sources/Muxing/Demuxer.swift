import Clocks
import CMedia
import Media
import Output

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why a `Demuxer` could not open or read, in one line (the URL masked).
public struct DemuxError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable, Equatable {
        /// The source is not there or did not answer (retry a live one).
        case unreachable
        /// No packet within the deadline (a stalled live source).
        case timedOut
        /// The source's video is not H.264 (a fact about the source: not retried).
        case notH264
        /// No video stream found (a file has none; a live source may not have sent it yet).
        case noVideo
        /// The libraries are missing, or other trouble that retrying will not mend.
        case fatal
        /// Reading failed after the source was open.
        case read
        /// The source refused our credentials (a wrong SRT passphrase): not retried.
        case refused
        /// The container's bytes cannot be read on (invalid data, or a size in them that no
        /// memory holds): bad input data for a file; for a live source, a failure like `read`.
        case damaged
    }

    public let kind: Kind
    public let message: String
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
    public var description: String { message }
}

/// One H.264 video stream read through libavformat's demuxers and protocols: container files
/// (MP4, MPEG-TS, Matroska, FLV) and live URLs (RTSP, SRT, RTMP as a client that plays, UDP
/// MPEG-TS, HTTP). It picks the best video stream, refuses one that is not H.264 (naming its
/// codec), tells the tracks it ignores (they are discarded in libavformat, never read into
/// nalcast), and hands out packets in decode order, their times in 90 kHz ticks. The bytes
/// are copied once out of libavformat's packet and never re-encoded; `AnnexBPackager` makes
/// them nalcast's access units.
///
/// Every blocking call (open, probing, each read) is bounded by the interrupt callback of
/// `PushTransport`'s kind, whose deadline the caller arms (`arm(_:)`); `requestStop()`
/// from another thread ends any wait at once. One thread uses it; `requestStop` is the one
/// call from another thread.
public final class Demuxer {
    /// One packet of the video stream: its bytes (Annex-B or length-prefixed, as the
    /// container has them), its decode and presentation times in 90 kHz ticks (nil when the
    /// container gave none), whether the container marked it a keyframe, and new extradata
    /// when the stream's parameters changed.
    public struct Packet {
        public var data: [UInt8]
        public var dts: Int64?
        public var pts: Int64?
        public var keyframe: Bool
        public var newExtradata: [UInt8]?
        /// A packet of the audio track (`audioFormat`): its raw AAC frames (ADTS headers
        /// taken off; a packet may hold several, one after the other from `pts`), `data`
        /// empty; else a packet of the video.
        public var isAudio = false
        public var audioFrames: [[UInt8]] = []
    }

    /// The URL masked, for messages.
    public let shown: String
    /// The video stream's extradata as opened (avcC, Annex-B parameter sets, or empty).
    public let extradata: [UInt8]
    /// Picture size from the container, when it says.
    public let width: Int
    public let height: Int
    /// The container format libavformat found (`mov,mp4,m4a,3gp,3g2,mj2`, `mpegts`, `rtsp`...).
    public let formatName: String
    /// The tracks left out, described: `audio (aac)`, `video (mjpeg)`.
    public let ignoredTracks: [String]
    /// The audio track handed on with the video: the best AAC one (others are ignored tracks).
    public let audioFormat: AudioFormat?
    /// Each video packet is one access unit (false: pieces of an Annex-B stream, as MPEG-TS's
    /// PES payloads read without libavcodec's parser, which `PacketCutter` cuts).
    public let packetsAreAccessUnits: Bool

    private var context: UnsafeMutablePointer<AVFormatContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private let streamIndex: Int32
    private let timeBase: AVRational
    private let audioIndex: Int32
    private let audioTimeBase: AVRational
    /// Where the next audio frame follows the last, for a frame the container left untimed.
    private var nextAudioTime: Int64?
    private let interrupt: UnsafeMutablePointer<CMedia_interrupt>
    /// What bounds its calls (libavformat's byte readers keep the callback they were opened
    /// with: it is the demuxer's for life).
    public let deadline: DemuxDeadline
    /// Seconds the opening took (connecting, the header, probing the streams).
    public let openingSeconds: Double

    /// Options for a URL: what FFmpeg's protocols and demuxers take (`rtsp_transport`,
    /// `probesize`, `analyzeduration`...), as ffmpeg's command line takes them before `-i`.
    /// The SRT secret among `options` (`SRTSecret.libavformatOptions`).
    static func secret(_ options: [(String, String)]) -> SRTSecret? {
        guard let passphrase = options.first(where: { $0.0 == "passphrase" })?.1 else { return nil }
        return try? SRTSecret(passphrase: passphrase, keyLength: options.first { $0.0 == "pbkeylen" }.flatMap { Int($0.1) })
    }

    /// The deadline (armed by the caller) bounds opening and probing; `deadline` must live
    /// as long as the demuxer.
    public init(url: String, shown: String, options: [(String, String)], deadline: DemuxDeadline) throws(DemuxError) {
        self.shown = shown
        self.deadline = deadline
        let began = MonotonicClock.nanoseconds
        let interrupt = deadline.state
        self.interrupt = interrupt
        if let problem = FFmpegLibraries.problem { throw DemuxError(.fatal, problem) }
        _ = Self.networkReady

        var dictionary: OpaquePointer?
        for (key, value) in options { CMedia_av_dict_set(&dictionary, key, value, 0) }
        defer { CMedia_av_dict_free(&dictionary) }
        var ctx: UnsafeMutablePointer<AVFormatContext>?
        var rc = CMedia_open_input(&ctx, url, interrupt, &dictionary)
        // libavformat says "I/O error" for any failed SRT connection: was it the passphrase?
        if rc < 0, interrupt.pointee.fired == 0, let secret = Self.secret(options), secret.isRefused(by: url) {
            throw DemuxError(.refused, "\(shown): " + SRTSecret.refusedText)
        }
        guard rc >= 0, let opened = ctx else {
            throw DemuxError(interrupt.pointee.fired != 0 ? .timedOut : .unreachable,
                             "cannot open \(shown): " + (interrupt.pointee.fired != 0 ? "timed out" : Self.text(rc)))
        }
        context = opened
        formatName = opened.pointee.iformat.map { String(cString: $0.pointee.name) } ?? "?"
        // Packets as the container holds them, libavcodec's parser not run (`timesEveryPacket`).
        let unparsed = Self.timesEveryPacket(formatName)
        if unparsed { CMedia_read_unparsed(opened) }
        packetsAreAccessUnits = !(unparsed && formatName == "mpegts")

        // Probing reads and decodes the first pictures; without the parser it reads 50 of an
        // MP4's instead of 1. MP4's header describes every track itself: not probed.
        rc = unparsed && Self.describedByHeader(opened, formatName) ? 0 : CMedia_avformat_find_stream_info(opened, nil)
        if rc < 0 {
            let fired = interrupt.pointee.fired != 0
            CMedia_avformat_close_input(&context)
            throw DemuxError(fired ? .timedOut : .unreachable, "\(shown): no stream information: " + (fired ? "timed out" : Self.text(rc)))
        }
        let best = CMedia_av_find_best_stream(opened, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        guard best >= 0, let stream = opened.pointee.streams[Int(best)] else {
            let kinds = Self.describeStreams(opened, except: [])
            CMedia_avformat_close_input(&context)
            throw DemuxError(.noVideo, "\(shown) has no video stream" + (kinds.isEmpty ? "" : " (only \(kinds.joined(separator: ", ")))"))
        }
        let par = stream.pointee.codecpar.pointee
        guard par.codec_id == AV_CODEC_ID_H264 else {
            let name = String(cString: CMedia_avcodec_get_name(par.codec_id))
            CMedia_avformat_close_input(&context)
            throw DemuxError(.notH264, "\(shown): its video is \(name), not H.264 (nalcast relays H.264 without re-encoding; "
                             + "convert it with ffmpeg -i INPUT -c:v libx264 -f h264 OUT.h264)")
        }
        streamIndex = best
        timeBase = stream.pointee.time_base
        width = Int(par.width)
        height = Int(par.height)
        extradata = par.extradata.map { Array(UnsafeBufferPointer(start: $0, count: Int(par.extradata_size))) } ?? []
        // The audio that goes with it: the best audio track, if it is AAC (what every
        // container nalcast writes takes, copied as it is).
        let audio = CMedia_av_find_best_stream(opened, AVMEDIA_TYPE_AUDIO, -1, best, nil, 0)
        if audio >= 0, let st = opened.pointee.streams[Int(audio)], let format = Self.aacFormat(st.pointee.codecpar.pointee) {
            audioIndex = audio
            audioTimeBase = st.pointee.time_base
            audioFormat = format
        } else {
            audioIndex = -1
            audioTimeBase = AVRational(num: 1, den: 90_000)
            audioFormat = nil
        }
        ignoredTracks = Self.describeStreams(opened, except: [best, audioIndex])
        // The other tracks are not read at all: libavformat drops their packets itself.
        for i in 0..<Int(opened.pointee.nb_streams) where Int32(i) != best && Int32(i) != audioIndex {
            opened.pointee.streams[i]!.pointee.discard = AVDISCARD_ALL
        }
        packet = CMedia_av_packet_alloc()
        if packet == nil {
            CMedia_avformat_close_input(&context)
            throw DemuxError(.fatal, "out of memory")
        }
        openingSeconds = Double(MonotonicClock.nanoseconds - began) / 1e9
    }

    deinit {
        CMedia_av_packet_free(&packet)
        // Closing an RTSP session says TEARDOWN: bounded by the caller's deadline.
        CMedia_avformat_close_input(&context)
    }

    /// Containers read without libavcodec's H.264 parser: those that give every packet its
    /// decode time themselves (MP4's sample tables, MPEG-TS's PES headers), so that the
    /// parser's filling-in of missing times is not needed. There the parser only found
    /// keyframes and picture types (MP4), or cut the PES payloads into access units
    /// (MPEG-TS), both of which nalcast does from the NAL units anyway (`AnnexBPackager`,
    /// `PacketCutter`): it was a third of the CPU of reading an MPEG-TS file. Matroska,
    /// which stores presentation times only, and the others keep it.
    static func timesEveryPacket(_ formatName: String) -> Bool {
        formatName == "mpegts" || formatName.hasPrefix("mov,mp4,")
    }

    /// True when the header said all that nalcast reads off the streams, so that probing
    /// (`avformat_find_stream_info`) has nothing to add: an MP4's moov (each track's codec,
    /// extradata and picture size or sample rate), not MPEG-TS's PMT (codecs only).
    static func describedByHeader(_ ctx: UnsafeMutablePointer<AVFormatContext>, _ formatName: String) -> Bool {
        guard formatName.hasPrefix("mov,mp4,"), ctx.pointee.nb_streams > 0 else { return false }
        return (0..<Int(ctx.pointee.nb_streams)).allSatisfy { i in
            guard let par = ctx.pointee.streams[i]?.pointee.codecpar.pointee else { return false }
            switch par.codec_type {
            case AVMEDIA_TYPE_VIDEO: return par.codec_id != AV_CODEC_ID_H264 || (par.width > 0 && par.height > 0)
            case AVMEDIA_TYPE_AUDIO: return par.codec_id != AV_CODEC_ID_AAC || (par.sample_rate > 0 && par.extradata_size > 0)
            default: return true
            }
        }
    }

    /// `avformat_network_init`, once: TLS (rtsps, rtmps, https) wants it before the first
    /// connection; libsrt told to keep its warnings to itself.
    private static let networkReady: Bool = {
        CMedia_quiet_srt()
        return CMedia_avformat_network_init() >= 0
    }()

    /// The next packet of the video stream, in decode order; nil at the end of the input.
    /// Throws `.timedOut` when the deadline passed first (or `requestStop` was called).
    public func read() throws(DemuxError) -> Packet? {
        guard let context, let packet else { throw DemuxError(.read, "closed") }
        while true {
            let rc = CMedia_av_read_frame(context, packet)
            // A demuxer whose read was interrupted may say end of file, or say so later (the
            // byte reader keeps the error of a read the deadline ended inside a call that
            // still returned a packet): both are the deadline's doing.
            if rc < 0 && (interrupt.pointee.fired != 0 || rc == CMedia_error_exit()) {
                throw DemuxError(.timedOut, "\(shown): no packet: timed out")
            }
            if rc == CMedia_error_eof() { return nil }
            if rc == CMedia_error_again() {
                if interrupt.pointee.fired != 0 || CMedia_interrupt_check(interrupt) != 0 { throw DemuxError(.timedOut, "\(shown): no packet: timed out") }
                usleep(5_000)
                continue
            }
            if rc < 0 {
                if interrupt.pointee.fired != 0 { throw DemuxError(.timedOut, "\(shown): no packet: timed out") }
                if rc == CMedia_error_invalid_data() || rc == CMedia_error_no_memory() {
                    throw DemuxError(.damaged, "reading \(shown): damaged: \(Self.text(rc))" + (rc == CMedia_error_no_memory() ? " (a size in it past any real one)" : ""))
                }
                throw DemuxError(.read, "reading \(shown): \(Self.text(rc))")
            }
            defer { CMedia_av_packet_unref(packet) }
            let p = packet.pointee
            if p.stream_index == audioIndex && audioIndex >= 0 {
                guard let data = p.data, p.size > 0 else { continue }
                let frames = Self.adtsFrames(UnsafeBufferPointer(start: data, count: Int(p.size)))
                // The parser splits a PES packet of several frames and times only the first:
                // the others follow it, a frame's length each.
                guard !frames.isEmpty, let pts = ticks(p.pts, audioTimeBase) ?? ticks(p.dts, audioTimeBase) ?? nextAudioTime else { continue }
                if let format = audioFormat {
                    nextAudioTime = pts + Int64(frames.count * format.samplesPerPacket) * MediaTime.ticksPerSecond / Int64(max(1, format.sampleRate))
                }
                return Packet(data: [], dts: pts, pts: pts, keyframe: true, newExtradata: nil, isAudio: true, audioFrames: frames)
            }
            guard p.stream_index == streamIndex else { continue }
            let data = p.data.map { Array(UnsafeBufferPointer(start: $0, count: Int(p.size))) } ?? []
            var size: Int32 = 0
            var newExtradata: [UInt8]?
            if let side = CMedia_new_extradata(packet, &size), size > 0 {
                newExtradata = Array(UnsafeBufferPointer(start: side, count: Int(size)))
            }
            return Packet(data: data, dts: ticks(p.dts), pts: ticks(p.pts), keyframe: p.flags & AV_PKT_FLAG_KEY != 0, newExtradata: newExtradata)
        }
    }

    /// A container time in 90 kHz ticks; nil when there is none, or when it is past
    /// `MediaTime.outsideLimit` (a damaged file's; `av_rescale_q` also says an overflow with
    /// INT64_MIN), which the times made from it could not hold.
    private func ticks(_ value: Int64, _ base: AVRational? = nil) -> Int64? {
        guard value != CMedia_no_pts() else { return nil }
        let ticks = CMedia_av_rescale_q(value, base ?? timeBase, AVRational(num: 1, den: 90_000))
        return MediaTime.isWithinLimit(ticks) ? ticks : nil
    }

    /// The `AudioFormat` of an AAC track; nil for another codec. Without extradata (AAC in
    /// MPEG-TS comes as ADTS, which carries its configuration in every frame header) the
    /// AudioSpecificConfig is made from the profile, the sample rate and the channel count.
    static func aacFormat(_ par: AVCodecParameters) -> AudioFormat? {
        guard par.codec_type == AVMEDIA_TYPE_AUDIO, par.codec_id == AV_CODEC_ID_AAC, par.sample_rate > 0 else { return nil }
        let channels = Int(CMedia_track_channels([par]))
        var config = par.extradata.map { Array(UnsafeBufferPointer(start: $0, count: Int(par.extradata_size))) } ?? []
        if config.isEmpty {
            // FF_PROFILE_AAC_LOW is 1: the object type is the profile + 1 (2, AAC-LC, when unknown).
            let objectType = par.profile >= 0 && par.profile < 30 ? Int(par.profile) + 1 : 2
            guard let config2 = audioSpecificConfig(objectType: objectType, sampleRate: Int(par.sample_rate), channels: channels) else { return nil }
            config = config2
        }
        return AudioFormat(codec: .aac, sampleRate: Int(par.sample_rate), channels: max(1, channels), bitrate: Int(par.bit_rate),
                           samplesPerPacket: (1...8192).contains(par.frame_size) ? Int(par.frame_size) : 1024, extradata: config)
    }

    /// The two-byte AudioSpecificConfig (ISO/IEC 14496-3 1.6.2.1) of a plain AAC stream:
    /// object type, sampling frequency index, channel configuration. nil for a rate with no
    /// index or more than 7 channels.
    static func audioSpecificConfig(objectType: Int, sampleRate: Int, channels: Int) -> [UInt8]? {
        let rates = [96_000, 88_200, 64_000, 48_000, 44_100, 32_000, 24_000, 22_050, 16_000, 12_000, 11_025, 8_000, 7_350]
        guard let index = rates.firstIndex(of: sampleRate), (1...7).contains(channels), (1...30).contains(objectType) else { return nil }
        let bits = (objectType << 11) | (index << 7) | (channels << 3)
        return [UInt8(bits >> 8), UInt8(bits & 0xFF)]
    }

    /// The AAC frames of a packet without their ADTS headers (7 bytes, 9 with a CRC), as
    /// MP4, Matroska and FLV store them (MPEG-TS writers add them again): a PES packet may
    /// hold several frames. A packet without ADTS is one raw frame, as it is.
    static func adtsFrames(_ bytes: UnsafeBufferPointer<UInt8>) -> [[UInt8]] {
        var frames: [[UInt8]] = []
        var at = 0
        while bytes.count - at >= 7, bytes[at] == 0xFF, bytes[at + 1] & 0xF6 == 0xF0 {
            let header = bytes[at + 1] & 1 == 1 ? 7 : 9
            let length = (Int(bytes[at + 3] & 3) << 11) | (Int(bytes[at + 4]) << 3) | Int(bytes[at + 5] >> 5)
            guard length > header, at + length <= bytes.count else { break }
            frames.append(Array(bytes[(at + header)..<(at + length)]))
            at += length
        }
        if frames.isEmpty && !bytes.isEmpty { frames.append(Array(bytes)) }
        return frames
    }

    /// `audio (aac)`, one per stream but those in `except`.
    private static func describeStreams(_ ctx: UnsafeMutablePointer<AVFormatContext>, except: [Int32]) -> [String] {
        (0..<Int(ctx.pointee.nb_streams)).compactMap { i in
            guard !except.contains(Int32(i)), let st = ctx.pointee.streams[i] else { return nil }
            let par = st.pointee.codecpar.pointee
            let kind: String
            switch par.codec_type {
            case AVMEDIA_TYPE_VIDEO: kind = "video"
            case AVMEDIA_TYPE_AUDIO: kind = "audio"
            case AVMEDIA_TYPE_SUBTITLE: kind = "subtitles"
            case AVMEDIA_TYPE_DATA: kind = "data"
            default: kind = "other"
            }
            return "\(kind) (\(String(cString: CMedia_avcodec_get_name(par.codec_id))))"
        }
    }

    /// Whether this libavformat can read `scheme` URLs: a protocol it lists
    /// (`avio_enum_protocols`), or for RTSP its demuxer (RTSP is a demuxer over TCP/UDP, and
    /// rtsps needs TLS too). Loads the libraries (nil reason: they are there).
    public static func supports(scheme: String) -> Bool {
        guard FFmpegLibraries.problem == nil else { return false }
        switch scheme {
        case "rtsp": return CMedia_av_find_input_format("rtsp") != nil
        case "rtsps": return CMedia_av_find_input_format("rtsp") != nil && CMedia_has_input_protocol("tls") != 0
        default: return CMedia_has_input_protocol(scheme) != 0
        }
    }

    static func text(_ rc: Int32) -> String { FFmpegLibraries.text(rc) }
}

/// The deadline of a demuxer's blocking calls (libavformat polls it through the interrupt
/// callback while it waits), and the way to stop them from another thread.
///
/// `@unchecked Sendable`: the reader thread alone arms it and reads `fired`; the only write
/// from another thread is `requestStop`, an atomic store in C that the callback loads
/// atomically.
public final class DemuxDeadline: @unchecked Sendable {
    let state: UnsafeMutablePointer<CMedia_interrupt>

    public init() {
        state = .allocate(capacity: 1)
        state.initialize(to: CMedia_interrupt(deadline_ns: 0, stop: 0, fired: 0))
    }

    deinit {
        state.deinitialize(count: 1)
        state.deallocate()
    }

    /// The next blocking calls give up `seconds` from now (0: no deadline). Reader thread.
    public func arm(_ seconds: Double) {
        state.pointee.fired = 0
        state.pointee.deadline_ns = seconds > 0 ? Int64(MonotonicClock.nanoseconds) + Int64(seconds * 1e9) : 0
    }

    /// Ends every wait at once, and every later one: from any thread.
    public func requestStop() { CMedia_interrupt_request_stop(state) }

    /// True when the last failed call failed because the deadline passed or a stop came.
    public var fired: Bool { state.pointee.fired != 0 }
}
