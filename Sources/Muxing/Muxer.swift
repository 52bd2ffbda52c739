import CMedia
import Media
import Output

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why a container could not be written: one line, and the errno when a write failed.
public struct MuxError: Error, CustomStringConvertible, Sendable {
    public let message: String
    /// The errno of a failed write or seek on the output (EPIPE: the reader went away).
    public let code: Int32?
    public init(_ message: String, code: Int32? = nil) {
        self.message = message
        self.code = code
    }
    public var description: String { message }
}

/// One H.264 stream into a libavformat muxer, written through an `AVIOContext` over a file
/// descriptor nalcast opened (a file, a `.part` file, standard output, a pipe), or pushed to
/// a server through libavformat's own protocols (`init(push:)`): the packets are the access
/// units' bytes, copied, never decoded or re-encoded.
///
/// What the muxers want (FFmpeg 5.1), and what this does for them:
/// - mp4 and Matroska: the SPS and PPS as extradata before the header. Given in Annex-B
///   form, they convert them to avcC and every packet to length-prefixed NAL units
///   themselves. FLV (RTMP) does the same.
/// - MPEG-TS: Annex-B packets as they are, at 1/90000.
/// - FLV: 1/1000, and pts (composition time) with dts.
/// - RTSP: the SPS and PPS go into the SDP it announces (from the extradata); it opens its
///   own connection from the context's URL.
/// - every muxer: dts rising strictly (MPEG-TS, mp4) or at least not falling (Matroska, FLV
///   round to milliseconds), pts not before dts; keyframes flagged.
/// Times come in at 90 kHz and are rescaled to the stream's time base after the header
/// (which is when a muxer picks it).
///
/// Not thread-safe: one sink worker thread uses it.
final class Muxer {
    /// What messages call it: the container (`mp4`, `ts`) or the pushed format.
    let label: String
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private var pb: UnsafeMutablePointer<AVIOContext>?
    /// True when `pb` is our AVIOContext over a descriptor (freed here), false when
    /// libavformat opened it for a URL (closed with `avio_closep`).
    private let ownIO: Bool
    private let io: UnsafeMutablePointer<CMedia_fd_io>
    /// The memory the muxer writes into (`init(fragmentedInMemory:)`), taken by `takeOutput`.
    private var memory: UnsafeMutablePointer<CMedia_memory_io>?
    /// `movflags` in place of the fragmenting ones `fragmented` sets (a CMAF writer's).
    private var movFlags: String?
    private var stream: UnsafeMutablePointer<AVStream>?
    /// The AAC track (stream 1), when `audio` was set before the header.
    private var audioStream: UnsafeMutablePointer<AVStream>?
    private var lastAudioDts: Int64?
    /// FLV takes no packet timed before the first it was given (flvenc: "Packets are not in
    /// the proper order with respect to DTS", EINVAL), a rule of the whole file, not of each
    /// stream. A push that connects again starts at an IDR while the sound of the instants
    /// just before it is still on its way (audio is encoded after the picture of its
    /// instant): such audio is dropped here, counted, instead of failing the connection.
    private var notBeforeFirst = false
    /// The first time written (90 kHz, `timeOffset` added), video or audio.
    private var firstTime: Int64?
    /// Added to every time written (90 kHz ticks): MPEG-TS segments start at 1.4 s, as FFmpeg's
    /// MPEG-TS does, so that the decode times before the first picture of a stream with
    /// B-frames are not negative (which the muxer would make good by moving the first
    /// segment's times alone, and segments' times would no longer follow each other).
    var timeOffset: Int64 = 0
    /// The audio track to declare in the header: set before `writeHeader`, else there is none.
    var audio: AudioFormat?
    /// True once the header declared an audio track.
    var hasAudioTrack: Bool { audioStream != nil }
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var buffer: [UInt8] = []
    private var lastDts: Int64?
    private var strictDts = true
    private(set) var headerWritten = false
    /// An MP4 written in fragments (`init`'s `fragmented`): its header asks for them.
    private let fragmentedMP4: Bool
    /// MP4, Matroska and FLV store length-prefixed NAL units with an avcC description: given
    /// them in that form, the muxers copy the packets as they are instead of scanning each
    /// for start codes and rewriting it (a third of the muxing work). MPEG-TS and RTP take
    /// Annex-B.
    private var lengthPrefixed = false
    /// Options for `avformat_write_header` beyond the fragmenting ones (a push's).
    private let headerOptions: [(String, String)]
    /// The deadline of a push's blocking calls; nil for a descriptor, which never waits on
    /// a server.
    private let interrupt: UnsafeMutablePointer<CMedia_interrupt>?
    private static var ninetyKHz: AVRational { AVRational(num: 1, den: 90_000) }

    /// Sets up `format`'s muxer over `fd` (not owned: the caller closes it).
    /// `fragmented`: an MP4 written in fragments, which needs no going back (a pipe will do):
    /// one at every IDR and at least every second, each written as it closes, so a killed
    /// writer loses at most the last one. Other formats ignore it.
    init(format: ContainerFormat, fd: Int32, fragmented: Bool = false) throws(MuxError) {
        guard let name = format.muxerName else { throw MuxError("\(format) is not a container") }
        fragmentedMP4 = fragmented && format == .mp4
        label = format.description
        headerOptions = []
        interrupt = nil
        ownIO = true
        if let problem = FFmpegLibraries.problem { throw MuxError(problem) }
        io = .allocate(capacity: 1)
        io.initialize(to: CMedia_fd_io(fd: fd, error: 0, written: 0))
        let seekable = CMedia_fd_is_seekable(fd) != 0
        if format.needsSeekableOutput && !seekable && !fragmented {
            throw MuxError("\(format) needs a seekable file (it goes back to write its index): not a pipe or a terminal; use ts or mkv for a pipe")
        }
        guard let pb = CMedia_fd_avio(io, seekable ? 1 : 0) else { throw MuxError("out of memory") }
        self.pb = pb
        try makeContext(name)
        context!.pointee.pb = pb
    }

    /// An MP4 written in fragments into memory, cut where the caller says (`cutFragment`):
    /// the CMAF writer of `--hls`. The header (ftyp, moov) and each fragment (moof, mdat)
    /// are taken with `takeOutput`. `continuing`: its first fragment's decode time
    /// (`tfdt`) is its first packet's, not 0 (`frag_discont`, and libavformat's shift to 0
    /// off): a new header in the middle of a stream whose times go on (FFmpeg's HLS demuxer
    /// lost the first fragment after a new header whose times went back to 0).
    init(fragmentedInMemory: Void, continuing: Bool = false) throws(MuxError) {
        fragmentedMP4 = true
        label = "mp4"
        // A muxer that continues a time line keeps its first times as they are (libavformat
        // would move them to 0).
        headerOptions = continuing ? [("avoid_negative_ts", "disabled")] : []
        interrupt = nil
        ownIO = true
        movFlags = "frag_custom+empty_moov+default_base_moof" + (continuing ? "+frag_discont" : "")
        if let problem = FFmpegLibraries.problem { throw MuxError(problem) }
        io = .allocate(capacity: 1)
        io.initialize(to: CMedia_fd_io(fd: -1, error: 0, written: 0))
        let memory = UnsafeMutablePointer<CMedia_memory_io>.allocate(capacity: 1)
        memory.initialize(to: CMedia_memory_io(data: nil, size: 0, capacity: 0, error: 0))
        self.memory = memory
        guard let pb = CMedia_memory_avio(memory) else { throw MuxError("out of memory") }
        self.pb = pb
        try makeContext("mp4")
        context!.pointee.pb = pb
    }

    /// Closes the fragment being written (what was written since the last cut, every track):
    /// its moof and mdat go to the output.
    func cutFragment() throws(MuxError) {
        guard let context else { throw MuxError("closed") }
        let rc = CMedia_av_write_frame(context, nil)
        guard rc >= 0 else { throw failure("fragment", rc) }
        try flush()
    }

    /// What the muxer wrote into memory since the last call.
    func takeOutput() throws(MuxError) -> [UInt8] {
        guard let memory else { return [] }
        if memory.pointee.error != 0 { throw MuxError("mp4: out of memory") }
        let out = Array(UnsafeBufferPointer(start: memory.pointee.data, count: Int(memory.pointee.size)))
        memory.pointee.size = 0
        return out
    }

    /// Sets up the `muxer` (flv, mpegts, rtsp) for a push to `url`, and connects: libavformat
    /// opens the URL with `protocolOptions` (the RTSP muxer connects in `writeHeader`,
    /// with the header options). Every blocking call gives up at the deadline set in
    /// `interrupt` (owned by the caller, alive as long as this muxer).
    init(push url: String, muxer name: String, label: String, protocolOptions: [(String, String)], headerOptions: [(String, String)],
         interrupt: UnsafeMutablePointer<CMedia_interrupt>) throws(MuxError) {
        self.label = label
        fragmentedMP4 = false
        self.headerOptions = headerOptions
        self.interrupt = interrupt
        ownIO = false
        if let problem = FFmpegLibraries.problem { throw MuxError(problem) }
        io = .allocate(capacity: 1)
        io.initialize(to: CMedia_fd_io(fd: -1, error: 0, written: 0))
        _ = Self.networkReady
        try makeContext(name)
        let ctx = context!
        ctx.pointee.interrupt_callback = CMedia_interrupt_callback(interrupt)
        guard CMedia_set_url(ctx, url) >= 0 else { throw MuxError("out of memory") }
        if CMedia_format_has_no_file(ctx) == 0 {
            var dictionary = Self.dictionary(protocolOptions)
            var cb = CMedia_interrupt_callback(interrupt)
            var opened: UnsafeMutablePointer<AVIOContext>?
            let rc = CMedia_avio_open2(&opened, url, AVIO_FLAG_WRITE, &cb, &dictionary)
            CMedia_av_dict_free(&dictionary)
            guard rc >= 0, let opened else { throw failure("connect", rc) }
            pb = opened
            ctx.pointee.pb = opened
        }
    }

    /// `avformat_network_init`, once: TLS (rtmps) wants it before the first connection.
    private static let networkReady: Bool = CMedia_avformat_network_init() >= 0

    private func makeContext(_ name: String) throws(MuxError) {
        var ctx: UnsafeMutablePointer<AVFormatContext>?
        let rc = CMedia_avformat_alloc_output_context2(&ctx, nil, name, nil)
        guard rc >= 0, let ctx else { throw MuxError("no \(name) muxer in this libavformat: \(Self.text(rc))") }
        context = ctx
        strictDts = ctx.pointee.oformat.pointee.flags & AVFMT_TS_NONSTRICT == 0
        lengthPrefixed = ["mp4", "matroska", "flv"].contains(name)
        notBeforeFirst = name == "flv"
        guard let st = CMedia_avformat_new_stream(ctx, nil), let pkt = CMedia_av_packet_alloc() else { throw MuxError("out of memory") }
        stream = st
        packet = pkt
    }

    private static func dictionary(_ options: [(String, String)]) -> OpaquePointer? {
        var dictionary: OpaquePointer?
        for (key, value) in options { CMedia_av_dict_set(&dictionary, key, value, 0) }
        return dictionary
    }

    deinit {
        CMedia_av_packet_free(&packet)
        if let context {
            // An RTSP muxer that never got its trailer still holds its connection: the
            // trailer (TEARDOWN, bounded by the interrupt deadline) closes it.
            if headerWritten && !ownIO && CMedia_format_has_no_file(context) != 0 { _ = CMedia_av_write_trailer(context) }
            CMedia_avformat_free_context(context)
        }
        if ownIO { CMedia_avio_free(&pb) } else { _ = CMedia_avio_closep(&pb) }
        io.deinitialize(count: 1)
        io.deallocate()
        if let memory {
            CMedia_memory_free(memory)
            memory.deinitialize(count: 1)
            memory.deallocate()
        }
    }

    /// True once an audio packet went to the muxer.
    var wroteAudio: Bool { lastAudioDts != nil }

    /// The SRT connection of an `srt://` push (nil for any other output).
    var srt: SRTConnection? { ownIO ? nil : SRTConnection(pb) }

    /// Bytes handed to the output so far.
    var bytesWritten: Int { ownIO && memory == nil ? Int(io.pointee.written) : packetBytes }
    /// The access units' bytes handed to the muxer (a push's measure of what it sent).
    private var packetBytes = 0

    /// The stream's description and the container's header: the parameter sets of the
    /// first entry point (as the codec's decoder configuration record, or Annex-B with start
    /// codes), the picture size, the nominal frame rate when known.
    func writeHeader(codec: any VideoCodec, parameterSets: [NALUnit], resolution: Resolution?, frameRate: Double?) throws(MuxError) {
        guard let context, let stream else { throw MuxError("closed") }
        var extradata: [UInt8] = []
        if lengthPrefixed, let record = codec.streamParameters(parameterSets).decoderConfiguration {
            extradata = record
        } else {
            lengthPrefixed = false
            extradata = CodecParameters.annexB(parameterSets)
        }
        try CodecParameters.video(stream.pointee.codecpar!, codec: codec, resolution: resolution, extradata: extradata)
        stream.pointee.time_base = Self.ninetyKHz
        if let audio {
            guard let st = CMedia_avformat_new_stream(context, nil), let apar = st.pointee.codecpar else { throw MuxError("out of memory") }
            try CodecParameters.aac(apar, audio)
            st.pointee.time_base = AVRational(num: 1, den: Int32(clamping: max(1, audio.sampleRate)))
            audioStream = st
        }
        if let frameRate, frameRate.isFinite, frameRate > 0, frameRate < 1000 {
            let q = CMedia_av_d2q(frameRate, 1_000_000)
            stream.pointee.avg_frame_rate = q
            stream.pointee.r_frame_rate = q
        }
        var dictionary = Self.dictionary(headerOptions)
        if fragmentedMP4 {
            // With audio, the first moov waits for the first fragment (delay_moov): it then
            // knows each track's first times and writes edit lists that keep the tracks in
            // step (without them every track of a fragmented file starts at 0, and audio at
            // an IDR's instant would play a B-frame delay early).
            if let movFlags {
                CMedia_av_dict_set(&dictionary, "movflags", audioStream == nil ? movFlags : movFlags + "+delay_moov", 0)
            } else {
                CMedia_av_dict_set(&dictionary, "movflags", audioStream == nil ? "frag_keyframe+empty_moov+default_base_moof"
                                                                                  : "frag_keyframe+empty_moov+delay_moov+default_base_moof", 0)
                CMedia_av_dict_set(&dictionary, "frag_duration", "1000000", 0)
            }
        }
        let rc = CMedia_avformat_write_header(context, &dictionary)
        CMedia_av_dict_free(&dictionary)
        guard rc >= 0 else { throw failure("header", rc) }
        headerWritten = true
    }

    /// The header for a stream that starts at `unit`, an entry point: its parameter sets
    /// (or those it was known to use) as extradata, its picture size and the stream's frame
    /// rate (`fallbackFrameRate` when the stream gives none).
    func writeHeader(entry unit: TimedUnit, fallbackFrameRate: Double?) throws(MuxError) {
        let codec = unit.unit.codec
        let carried = unit.nalUnits.filter(codec.isParameterSet)
        let sets = carried.isEmpty ? unit.unit.parameterSets : carried
        let stream = codec.streamParameters(sets)
        try writeHeader(codec: codec, parameterSets: sets, resolution: unit.unit.resolution ?? stream.resolution,
                        frameRate: stream.frameRate ?? fallbackFrameRate)
    }

    /// One access unit as one packet. Times in 90 kHz ticks; `duration` 0 when unknown.
    func write(_ nalUnits: [NALUnit], pts: Int64, dts: Int64, duration: Int64, keyframe: Bool) throws(MuxError) {
        guard let context, let stream, let packet else { throw MuxError("closed") }
        buffer.removeAll(keepingCapacity: true)
        if lengthPrefixed {
            for nal in nalUnits {
                let body = nal.body
                guard !body.isEmpty else { continue }
                let n = UInt32(body.count)
                buffer.append(contentsOf: [UInt8(n >> 24), UInt8(truncatingIfNeeded: n >> 16), UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n)])
                buffer.append(contentsOf: body)
            }
        } else {
            for nal in nalUnits where !nal.wire.isEmpty { buffer.append(contentsOf: nal.wire) }
        }
        guard !buffer.isEmpty else { return }
        if firstTime == nil { firstTime = dts &+ timeOffset }
        let rc = writeBuffer(context, packet) { packet in
            packet.pointee.stream_index = 0
            packet.pointee.pts = pts &+ timeOffset
            packet.pointee.dts = dts &+ timeOffset
            packet.pointee.duration = duration
            packet.pointee.flags = keyframe ? AV_PKT_FLAG_KEY : 0
            CMedia_av_packet_rescale_ts(packet, Self.ninetyKHz, stream.pointee.time_base)
            // Rounding to a coarser time base (Matroska's and FLV's milliseconds) may make
            // two decode times one: muxers that want them strictly rising get one tick more.
            if let last = lastDts, packet.pointee.dts <= last, strictDts || packet.pointee.dts < last {
                packet.pointee.dts = strictDts ? last + 1 : last
            }
            if packet.pointee.pts < packet.pointee.dts { packet.pointee.pts = packet.pointee.dts }
            lastDts = packet.pointee.dts
        }
        guard rc >= 0 else { throw failure("write", rc) }
    }

    /// Writes what `buffer` holds as one packet of `context`, `fill` setting its stream,
    /// times and flags. The packet borrows the bytes for the call (padded with the zeros
    /// libavcodec asks for) and lets go of them after.
    private func writeBuffer(_ context: UnsafeMutablePointer<AVFormatContext>, _ packet: UnsafeMutablePointer<AVPacket>,
                             _ fill: (UnsafeMutablePointer<AVPacket>) -> Void) -> Int32 {
        let size = buffer.count
        packetBytes += size
        buffer.append(contentsOf: repeatElement(0, count: Int(CMedia_padding_size())))
        return buffer.withUnsafeMutableBufferPointer { bytes in
            CMedia_av_packet_unref(packet)
            packet.pointee.data = bytes.baseAddress
            packet.pointee.size = Int32(size)
            fill(packet)
            let result = CMedia_av_write_frame(context, packet)
            packet.pointee.data = nil
            packet.pointee.size = 0
            return result
        }
    }

    /// One audio packet (stream 1), at `pts` 90 kHz ticks on the video's container time line.
    /// False when it was not written: no audio track, or not after the last one (a muxer
    /// wants its times rising).
    func writeAudio(_ data: [UInt8], pts: Int64, duration: Int64) throws(MuxError) -> Bool {
        guard let context, let audioStream, let packet else { return false }
        guard !data.isEmpty else { return false }
        let tb = audioStream.pointee.time_base
        if notBeforeFirst, let firstTime, pts &+ timeOffset < firstTime { return false }
        let dts = CMedia_av_rescale_q(pts &+ timeOffset, Self.ninetyKHz, tb)
        if let last = lastAudioDts, dts <= last { return false }
        if firstTime == nil { firstTime = pts &+ timeOffset }
        buffer.removeAll(keepingCapacity: true)
        buffer.append(contentsOf: data)
        let rc = writeBuffer(context, packet) { packet in
            packet.pointee.stream_index = audioStream.pointee.index
            packet.pointee.pts = dts
            packet.pointee.dts = dts
            packet.pointee.duration = CMedia_av_rescale_q(duration, Self.ninetyKHz, tb)
            packet.pointee.flags = AV_PKT_FLAG_KEY
        }
        guard rc >= 0 else { throw failure("write", rc) }
        lastAudioDts = dts
        return true
    }

    /// Pushes what the output buffer holds to the descriptor (a pipe's reader sees it now).
    func flush() throws(MuxError) {
        guard let pb else { return }
        CMedia_avio_flush(pb)
        if ownIO {
            if io.pointee.error != 0 { throw failure("write", -io.pointee.error) }
        } else if pb.pointee.error < 0 {
            throw failure("write", pb.pointee.error)
        }
    }

    /// The trailer (an MP4's index), and the output buffer flushed. Nothing after this.
    func finish() throws(MuxError) {
        guard let context else { return }
        defer {
            CMedia_avformat_free_context(context)
            self.context = nil
        }
        if headerWritten {
            let rc = CMedia_av_write_trailer(context)
            guard rc >= 0 else { throw failure("trailer", rc) }
        }
        try flush()
    }

    /// The error of a libavformat call: the output's errno when a write or seek failed.
    private func failure(_ step: String, _ rc: Int32) -> MuxError {
        let code = io.pointee.error != 0 ? io.pointee.error : CMedia_errno_of(rc)
        if io.pointee.error != 0 { return MuxError("write: \(String(cString: strerror(code)))", code: code) }
        if let interrupt, interrupt.pointee.fired != 0 {
            return MuxError("\(step): timed out", code: ETIMEDOUT)
        }
        return MuxError("\(label) \(step): \(Self.text(rc))", code: code == 0 ? nil : code)
    }

    static func text(_ rc: Int32) -> String { FFmpegLibraries.text(rc) }
}
