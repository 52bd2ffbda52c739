import Foundation
@testable import H264
import Media
import TestSupport

/// `bytes` cut into pieces of the given sizes (cycled; sizes below 1 count as 1).
func pieces(_ bytes: [UInt8], sizes: [Int]) -> [[UInt8]] {
    var out: [[UInt8]] = []
    var i = 0
    var k = 0
    while i < bytes.count {
        let n = Swift.max(1, sizes[k % sizes.count])
        k += 1
        let end = i + Swift.min(bytes.count - i, n)
        out.append(Array(bytes[i..<end]))
        i = end
    }
    return out
}

/// Parses `bytes` pushed in the given chunk sizes (cycled), returning the access units.
func parse(_ bytes: [UInt8], chunks: [Int]) -> (units: [AccessUnit], parser: AnnexBParser) {
    var parser = AnnexBParser()
    var units: [AccessUnit] = []
    for piece in pieces(bytes, sizes: chunks) { parser.push(piece) { units.append($0) } }
    parser.finish { units.append($0) }
    return (units, parser)
}

/// Scans in the given chunk sizes, returning the NAL units and the scanner.
func scan(_ bytes: [UInt8], chunks: [Int], maxNALUnitSize: Int = AnnexBScanner.defaultMaxNALUnitSize) -> (nals: [NALUnit], scanner: AnnexBScanner) {
    var scanner = AnnexBScanner(maxNALUnitSize: maxNALUnitSize)
    var nals: [NALUnit] = []
    for piece in pieces(bytes, sizes: chunks) { scanner.push(piece) { nals.append($0) } }
    if let last = scanner.finish() { nals.append(last) }
    return (nals, scanner)
}

/// Deterministic pseudo-random numbers (the tests must repeat).
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}
