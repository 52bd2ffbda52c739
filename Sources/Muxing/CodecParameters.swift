import CMedia
import Media
import Output

/// What a muxer's streams declare to libavformat (their `AVCodecParameters`), set in one
/// place for every muxer: `Muxer` (files, segments, pushes) and `TSStreamMuxer` (the `ts:`
/// listeners).
enum CodecParameters {
    /// A video stream of `codec`: its picture size when known, and its parameter sets as
    /// extradata (`extradata`: the codec's decoder configuration record, or Annex-B from
    /// `annexB(_:)`).
    static func video(_ par: UnsafeMutablePointer<AVCodecParameters>, codec: any VideoCodec, resolution: Resolution?,
                      extradata: [UInt8]) throws(MuxError) {
        par.pointee.codec_type = AVMEDIA_TYPE_VIDEO
        par.pointee.codec_id = try codecID(codec)
        if let resolution {
            par.pointee.width = Int32(clamping: resolution.width)
            par.pointee.height = Int32(clamping: resolution.height)
        }
        try setExtradata(par, extradata)
    }

    /// An AAC track as `format` says: rate, channels, packet length, bit rate, and its
    /// AudioSpecificConfig as extradata.
    static func aac(_ par: UnsafeMutablePointer<AVCodecParameters>, _ format: AudioFormat) throws(MuxError) {
        CMedia_aac_track(par, Int32(clamping: format.sampleRate), Int32(clamping: format.channels), Int32(clamping: format.samplesPerPacket),
                            Int64(format.bitrate))
        try setExtradata(par, format.extradata)
    }

    /// libavcodec's id of `codec`, by the name both use.
    static func codecID(_ codec: any VideoCodec) throws(MuxError) -> AVCodecID {
        switch codec.name {
        case "h264": return AV_CODEC_ID_H264
        default: throw MuxError("no container codec for \(codec.name)")
        }
    }

    /// Parameter sets as Annex-B extradata: each behind a 4-byte start code.
    static func annexB(_ parameterSets: [NALUnit]) -> [UInt8] {
        var extradata: [UInt8] = []
        for nal in parameterSets {
            extradata.append(contentsOf: [0, 0, 0, 1])
            extradata.append(contentsOf: nal.body)
        }
        return extradata
    }

    private static func setExtradata(_ par: UnsafeMutablePointer<AVCodecParameters>, _ extradata: [UInt8]) throws(MuxError) {
        guard !extradata.isEmpty else { return }
        let rc = extradata.withUnsafeBufferPointer { CMedia_set_extradata(par, $0.baseAddress, Int32($0.count)) }
        guard rc >= 0 else { throw MuxError("out of memory") }
    }
}
