/// SPS, PPS and slice-header parsers. Input: one selector byte, then
///
///     0: SPS RBSP
///     1: PPS RBSP
///     2+: u8 spsLength, SPS RBSP, u8 ppsLength, PPS RBSP, u8 nal header, slice RBSP
///
/// so the fuzzer can grow the slice header against parameter sets it chose.
func fuzzParameterSets(_ bytes: [UInt8]) {
    guard bytes.count > 1 else { return }
    let body = Array(bytes.dropFirst())
    switch bytes[0] % 3 {
    case 0:
        if let sps = try? SequenceParameterSet(rbsp: body) { _ = sps.resolution; _ = sps.timing }
        _ = try? SequenceParameterSet(NALUnit(escapedBody: [0x67] + body))
    case 1:
        _ = try? PictureParameterSet(rbsp: body)
        _ = try? PictureParameterSet(NALUnit(escapedBody: [0x68] + body))
    default:
        var i = 0
        func take() -> [UInt8]? {
            guard i < body.count else { return nil }
            let n = Int(body[i])
            i += 1
            guard n <= body.count - i else { return nil }
            defer { i += n }
            return Array(body[i..<(i + n)])
        }
        guard let spsBytes = take(), let ppsBytes = take(), i < body.count else { return }
        let header = NALHeader(body[i])
        let slice = body[(i + 1)...]
        guard let sps = try? SequenceParameterSet(rbsp: spsBytes), let pps = try? PictureParameterSet(rbsp: ppsBytes) else { return }
        _ = try? SliceHeader.peekPPSId(rbsp: slice)
        _ = try? SliceHeader(rbsp: slice, header: header, sps: sps, pps: pps)
    }
}
