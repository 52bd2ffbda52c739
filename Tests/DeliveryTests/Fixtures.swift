import H264
import Media

/// Access units built from hand-made NAL units: AUD, (SPS, PPS,) SEI-less slices.
enum Fixture {
    static let aud = NALUnit(escapedBody: [0x09, 0xf0])
    static let sps = NALUnit(escapedBody: [0x67, 0x42, 0xc0, 0x1f, 0xda])
    static let pps = NALUnit(escapedBody: [0x68, 0xce, 0x3c, 0x80])

    /// A picture at `frame` of a 30 fps stream (pts 3000 per frame), `payload` bytes of slice.
    static func picture(_ frame: Int, idr: Bool, payload: Int = 100, withParameterSets: Bool = true, timestamp: Bool = true) -> AccessUnit {
        let header: UInt8 = idr ? 0x65 : 0x41
        let slice = NALUnit(escapedBody: [header] + Array(repeating: UInt8(truncatingIfNeeded: frame | 0x10), count: payload))
        var nals = [aud]
        if idr && withParameterSets { nals += [sps, pps] }
        nals.append(slice)
        let ts = timestamp
            ? StreamTimestamp(sequence: UInt64(frame), captureTimeNs: 0, pts90k: UInt64(frame) * 3000, isKeyframe: idr)
            : nil
        return AccessUnit(codec: H264Codec(), nalUnits: nals, isIDR: idr, resolution: Resolution(width: 64, height: 64), timestamp: ts, parameterSets: [sps, pps])
    }

    /// Frames `range` of a stream with an IDR every `gop` frames.
    static func stream(_ range: Range<Int>, gop: Int = 30, payload: Int = 100) -> [AccessUnit] {
        range.map { picture($0, idr: $0 % gop == 0, payload: payload) }
    }
}

extension Array where Element == NALUnit {
    var types: [NALType] { map(\.type) }
}
