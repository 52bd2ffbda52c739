import CMedia
import Media
import Output

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The MPEG-TS of a live stream, one video access unit at a time, for the TS listener
/// (`--listen ts:…`): libavformat's mpegts muxer writing into memory. Each call to `package`
/// returns the whole TS packets (188 bytes each) of the audio packets given (the sound since
/// the previous picture) and then of the access unit, nothing held back: the muxer's audio
/// PES buffer is flushed before the bytes are taken, so a unit is complete on its own and a
/// reader that starts or resumes at any unit boundary is at a TS packet boundary.
///
/// What a reader can rely on:
/// - PAT and PMT at the start of every IDR unit (the muxer's `resend_headers`, and every
///   100 ms), then the IDR's PES with SPS and PPS in it (`nalUnitsForEntry`): a reader can
///   start at any IDR unit;
/// - video on PID 0x100, audio (AAC in ADTS, which the muxer wraps from the raw frames and
///   the AudioSpecificConfig) on PID 0x101, the PCR on the video PID;
/// - PTS on nalcast's media time line: the access unit's 90 kHz media time for video (no
///   B-frames: DTS = PTS), `AudioPacket.mediaTime` for audio. The muxer's delay is 0, so the
///   PCR equals the video's DTS: what is sent is due at once, as live video is.
///
/// Not thread-safe: the stream server's loop thread uses it.
public final class TSStreamMuxer {
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private var pb: UnsafeMutablePointer<AVIOContext>?
    private let io: UnsafeMutablePointer<CMedia_memory_io>
    private var video: UnsafeMutablePointer<AVStream>?
    private var audio: UnsafeMutablePointer<AVStream>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private let audioFormat: AudioFormat?
    private var buffer: [UInt8] = []
    private var lastVideoDts: Int64?
    private var lastAudioPts: Int64?

    /// True once the first entry point gave the header (PAT, PMT and the streams' parameters).
    public private(set) var headerWritten = false
    /// Audio packets left out: not after the previous one in media time (a muxer needs them
    /// rising), or refused by the muxer.
    public private(set) var droppedAudioPackets = 0
    /// Access units left out: before the first entry point (no header yet), or not after
    /// the previous one in media time.
    public private(set) var droppedAccessUnits = 0

    /// A muxer for one H.264 stream and, with `audio`, one AAC track.
    public init(audio: AudioFormat?) throws(MuxError) {
        if let problem = FFmpegLibraries.problem { throw MuxError(problem) }
        if let audio, audio.codec != .aac { throw MuxError("MPEG-TS listener: \(audio.codec.rawValue) audio is not supported") }
        audioFormat = audio
        io = .allocate(capacity: 1)
        io.initialize(to: CMedia_memory_io(data: nil, size: 0, capacity: 0, error: 0))
        var ctx: UnsafeMutablePointer<AVFormatContext>?
        let rc = CMedia_avformat_alloc_output_context2(&ctx, nil, "mpegts", nil)
        guard rc >= 0, let ctx else { throw MuxError("no mpegts muxer in this libavformat: \(Muxer.text(rc))") }
        context = ctx
        guard let pb = CMedia_memory_avio(io), let pkt = CMedia_av_packet_alloc(),
              let st = CMedia_avformat_new_stream(ctx, nil) else { throw MuxError("out of memory") }
        self.pb = pb
        packet = pkt
        video = st
        ctx.pointee.pb = pb
        // No muxing delay: the PCR is the video's decode time (live, sent when made).
        ctx.pointee.max_delay = 0
        if audio != nil {
            guard let st = CMedia_avformat_new_stream(ctx, nil) else { throw MuxError("out of memory") }
            self.audio = st
        }
    }

    deinit {
        CMedia_av_packet_free(&packet)
        if let context { CMedia_avformat_free_context(context) }
        CMedia_avio_free(&pb)
        CMedia_memory_free(io)
        io.deinitialize(count: 1)
        io.deallocate()
    }

    /// The TS packets of `audio` (in media time order, each after the last one written) and
    /// then of `unit` at `pts90k`. Nil, writing nothing, before the first access unit a
    /// decoder can start at (its SPS and PPS make the header); audio given then is dropped
    /// and counted.
    public func package(_ unit: AccessUnit, pts90k: UInt64, audio packets: [AudioPacket]) throws(MuxError) -> [UInt8]? {
        guard let context else { throw MuxError("closed") }
        if !headerWritten {
            guard unit.canStartDecoding else {
                droppedAccessUnits += 1
                droppedAudioPackets += packets.count
                return nil
            }
            try writeHeader(entry: unit)
        }
        let dts = Int64(clamping: pts90k)
        if let last = lastVideoDts, dts <= last {
            droppedAccessUnits += 1
            droppedAudioPackets += packets.count
            return nil
        }
        if unit.isIDR {
            // PAT and PMT with the unit's first packet, even right after another IDR (the
            // muxer repeats them by itself only before a keyframe that follows a non-key
            // picture): a reader starting at this unit learns the program first.
            _ = CMedia_av_opt_set(context.pointee.priv_data, "mpegts_flags", "+resend_headers", 0)
        }
        if let audio {
            for packet in packets {
                let pts = packet.mediaTime.ticks
                guard lastAudioPts.map({ pts > $0 }) ?? true, !packet.data.isEmpty else {
                    droppedAudioPackets += 1
                    continue
                }
                buffer.removeAll(keepingCapacity: true)
                buffer.append(contentsOf: packet.data)
                if (try? write(stream: audio, index: 1, pts: pts, keyframe: true)) == nil {
                    droppedAudioPackets += 1
                    continue
                }
                lastAudioPts = pts
            }
        } else {
            droppedAudioPackets += packets.count
        }
        buffer.removeAll(keepingCapacity: true)
        for nal in unit.isIDR ? unit.nalUnitsForEntry : unit.nalUnits where unit.codec.role(of: nal) != .endOfStream {
            buffer.append(contentsOf: nal.wire)
        }
        try write(stream: video!, index: 0, pts: dts, keyframe: unit.isIDR)
        lastVideoDts = dts
        // Out with the audio PES the muxer still holds, and the AVIOContext's buffer.
        _ = CMedia_av_write_frame(context, nil)
        CMedia_avio_flush(pb)
        if io.pointee.error != 0 { throw MuxError("MPEG-TS: out of memory") }
        let out = Array(UnsafeBufferPointer(start: io.pointee.data, count: Int(io.pointee.size)))
        io.pointee.size = 0
        return out
    }

    private func writeHeader(entry unit: AccessUnit) throws(MuxError) {
        guard let context, let video else { throw MuxError("closed") }
        let nals = unit.nalUnitsForEntry
        let sets = nals.filter(unit.codec.isParameterSet)
        let resolution = unit.resolution ?? unit.codec.streamParameters(sets).resolution
        try CodecParameters.video(video.pointee.codecpar!, codec: unit.codec, resolution: resolution, extradata: CodecParameters.annexB(sets))
        video.pointee.time_base = AVRational(num: 1, den: 90_000)
        if let audio, let format = audioFormat {
            try CodecParameters.aac(audio.pointee.codecpar!, format)
            audio.pointee.time_base = AVRational(num: 1, den: 90_000)
        }
        var options: OpaquePointer?
        let rc = CMedia_avformat_write_header(context, &options)
        CMedia_av_dict_free(&options)
        guard rc >= 0 else { throw MuxError("MPEG-TS header: \(Muxer.text(rc))") }
        headerWritten = true
    }

    /// One packet of `buffer`'s bytes (padded here, as libavcodec wants).
    private func write(stream: UnsafeMutablePointer<AVStream>, index: Int32, pts: Int64, keyframe: Bool) throws(MuxError) {
        guard let context, let packet else { throw MuxError("closed") }
        let size = buffer.count
        guard size > 0 else { return }
        buffer.append(contentsOf: repeatElement(0, count: Int(CMedia_padding_size())))
        let rc: Int32 = buffer.withUnsafeMutableBufferPointer { data in
            CMedia_av_packet_unref(packet)
            packet.pointee.data = data.baseAddress
            packet.pointee.size = Int32(size)
            packet.pointee.stream_index = index
            packet.pointee.pts = pts
            packet.pointee.dts = pts
            packet.pointee.duration = 0
            packet.pointee.flags = keyframe ? AV_PKT_FLAG_KEY : 0
            CMedia_av_packet_rescale_ts(packet, AVRational(num: 1, den: 90_000), stream.pointee.time_base)
            let result = CMedia_av_write_frame(context, packet)
            packet.pointee.data = nil
            packet.pointee.size = 0
            return result
        }
        guard rc >= 0 else { throw MuxError("MPEG-TS write: \(Muxer.text(rc))") }
    }
}
