import Media
import Output

/// FLV's tags as RTMP messages on one publishing connection (`RTMPSession`), as FFmpeg's
/// FLV muxer makes them (FLV 10.1, E.4): `@setDataFrame onMetaData` with the picture size,
/// frame rate and sound; the AVC sequence header (the avcC made from the SPS and PPS) and
/// again whenever an IDR brings other ones (a size change); each access unit as one video
/// message (its NAL units length-prefixed, written from where they are, composition time =
/// pts - dts); the AAC sequence header (AudioSpecificConfig) and raw AAC frames; the end of
/// sequence at the end.
///
/// Timestamps are milliseconds of the container time line `PacketTimer` gives, moved up
/// once when the first one is below zero (B-frames), as libavformat moves a stream's first
/// negative time to 0; decode times never go back; sound timed before the first packet of
/// the connection, or not after the sound before it, is not written (counted by the
/// `AudioInterleaver`), as FLV wants. One thread.
final class RTMPStream: AudioTrackWriter {
    static let videoChunkStream: UInt8 = 6
    static let audioChunkStream: UInt8 = 4
    static let dataChunkStream: UInt8 = 5
    let session: RTMPSession
    let codec: any VideoCodec
    let audio: AudioFormat?
    var hasAudioTrack: Bool { audio != nil }
    private var parameterSets: [ArraySlice<UInt8>] = []
    private var shift: Int64?
    private var first: Int64?
    private var lastVideo: Int64 = .min
    private var lastAudio: Int64 = .min
    /// The access units' bytes queued since the last `takeBytes`.
    private var bytes = 0

    init(session: RTMPSession, entry unit: TimedUnit, audio: AudioFormat?, fallbackFrameRate: Double?) {
        self.session = session
        codec = unit.unit.codec
        self.audio = audio
        let carried = unit.nalUnits.filter(codec.isParameterSet)
        let sets = carried.isEmpty ? unit.unit.parameterSets : carried
        let stream = codec.streamParameters(sets)
        metadata(resolution: unit.unit.resolution ?? stream.resolution, frameRate: stream.frameRate ?? fallbackFrameRate)
        sequenceHeader(sets, at: 0)
        if let audio {
            session.writer.add([0xAF, 0x00])
            session.writer.add(audio.extradata)
            finish(RTMPMessageType.audio, Self.audioChunkStream, at: 0)
        }
    }

    private func metadata(resolution: Resolution?, frameRate: Double?) {
        var fields: [(String, AMF0)] = []
        if let resolution { fields += [("width", .number(Double(resolution.width))), ("height", .number(Double(resolution.height)))] }
        fields.append(("videocodecid", 7))
        if let frameRate, frameRate.isFinite, frameRate > 0 { fields.append(("framerate", .number(frameRate))) }
        if let audio {
            fields += [("audiocodecid", 10), ("audiosamplerate", .number(Double(audio.sampleRate))), ("audiosamplesize", 16),
                       ("stereo", .bool(audio.channels == 2)), ("audiodatarate", .number(Double(audio.bitrate) / 1000))]
        }
        fields.append(("encoder", "nalcast"))
        var payload: [UInt8] = []
        AMF0.encode(["@setDataFrame", "onMetaData", .ecmaArray(fields)], into: &payload)
        session.writer.add(payload)
        finish(RTMPMessageType.dataAMF0, Self.dataChunkStream, at: 0)
    }

    /// The AVC sequence header for `sets` when they are not the ones sent last.
    private func sequenceHeader(_ sets: [NALUnit], at time: UInt32) {
        let bodies = sets.map(\.body)
        guard !bodies.isEmpty, !bodies.elementsEqual(parameterSets, by: { $0.elementsEqual($1) }),
              let record = codec.streamParameters(sets).decoderConfiguration else { return }
        parameterSets = bodies
        session.writer.add([0x17, 0x00, 0, 0, 0])
        session.writer.add(record)
        finish(RTMPMessageType.video, Self.videoChunkStream, at: time)
    }

    /// Milliseconds, rounded to the nearest, of 90 kHz ticks.
    private static func milliseconds(_ ticks: Int64) -> Int64 {
        ticks >= 0 ? (ticks * 1000 + 45000) / 90000 : -((-ticks * 1000 + 45000) / 90000)
    }

    /// A time on the connection's time line: shifted once so that the first is not negative.
    private func time(_ ticks: Int64) -> Int64 {
        let ms = Self.milliseconds(ticks)
        if shift == nil { shift = max(0, -ms) }
        return ms + shift!
    }

    func writeVideo(_ packet: PacketTimer.Packet) {
        var dts = time(packet.dts)
        dts = max(dts, lastVideo)
        lastVideo = dts
        if first == nil { first = dts }
        let cts = max(0, time(packet.pts) - dts)
        if packet.keyframe {
            let sets = packet.nalUnits.filter(codec.isParameterSet)
            if !sets.isEmpty { sequenceHeader(sets, at: UInt32(truncatingIfNeeded: dts)) }
        }
        session.writer.add([packet.keyframe ? 0x17 : 0x27, 0x01, UInt8(truncatingIfNeeded: cts >> 16), UInt8(truncatingIfNeeded: cts >> 8),
                            UInt8(truncatingIfNeeded: cts)])
        for nal in packet.nalUnits {
            let body = nal.body
            guard !body.isEmpty else { continue }
            let n = UInt32(body.count)
            session.writer.add([UInt8(n >> 24), UInt8(truncatingIfNeeded: n >> 16), UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n)])
            session.writer.add(shared: body)
            bytes += body.count + 4
        }
        finish(RTMPMessageType.video, Self.videoChunkStream, at: UInt32(truncatingIfNeeded: dts))
    }

    func writeAudio(_ data: [UInt8], pts: Int64, duration: Int64) throws(MuxError) -> Bool {
        guard audio != nil, !data.isEmpty else { return false }
        let ms = time(pts)
        if let first, ms < first { return false }
        guard ms > lastAudio else { return false }
        lastAudio = ms
        if first == nil { first = ms }
        session.writer.add([0xAF, 0x01])
        session.writer.add(shared: data[...])
        bytes += data.count
        finish(RTMPMessageType.audio, Self.audioChunkStream, at: UInt32(truncatingIfNeeded: ms))
        return true
    }

    /// The end of sequence, after the last picture.
    func writeEnd() {
        guard lastVideo > .min else { return }
        session.writer.add([0x17, 0x02, 0, 0, 0])
        finish(RTMPMessageType.video, Self.videoChunkStream, at: UInt32(truncatingIfNeeded: lastVideo))
    }

    func takeBytes() -> Int {
        defer { bytes = 0 }
        return bytes
    }

    private func finish(_ type: UInt8, _ chunkStream: UInt8, at time: UInt32) {
        session.writer.finish(chunkStream: chunkStream, type: type, streamID: session.streamID, timestamp: time)
    }
}
