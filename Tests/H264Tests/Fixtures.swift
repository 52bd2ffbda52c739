import Foundation
@testable import H264

/// The conformance streams in ../shared/fixtures/h264/ and what FFmpeg measured of them
/// (the README table there).
struct ConformanceStream: Sendable, CustomStringConvertible {
    let file: String
    let bytes: Int
    let accessUnits: Int
    let idrAccessUnits: Int
    let nalUnitsByType: [UInt8: Int]
    let width = 352
    let height = 288

    var description: String { file }

    static let all: [ConformanceStream] = [
        .init(file: "FRExt1_Panasonic.avc", bytes: 36711, accessUnits: 8, idrAccessUnits: 2, nalUnitsByType: [1: 6, 5: 2, 7: 2, 8: 8, 10: 2, 11: 1]),
        .init(file: "FRExt3_Panasonic.avc", bytes: 25014, accessUnits: 11, idrAccessUnits: 1, nalUnitsByType: [1: 10, 5: 1, 7: 1, 8: 11, 10: 1, 11: 1]),
        .init(file: "HCAFR1_HHI.264", bytes: 19672, accessUnits: 10, idrAccessUnits: 1, nalUnitsByType: [1: 9, 5: 1, 7: 1, 8: 1]),
        .init(file: "HCAFF1_HHI.264", bytes: 19850, accessUnits: 14, idrAccessUnits: 1, nalUnitsByType: [1: 13, 5: 1, 7: 1, 8: 1]),
        .init(file: "HCAMFF1_HHI.264", bytes: 19978, accessUnits: 10, idrAccessUnits: 1, nalUnitsByType: [1: 9, 5: 1, 7: 1, 8: 1]),
        .init(file: "FREXT01_JVC_D.264", bytes: 53343, accessUnits: 16, idrAccessUnits: 1, nalUnitsByType: [1: 15, 5: 1, 7: 1, 8: 1]),
    ]

    static let directory: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("shared/fixtures/h264")

    var url: URL { Self.directory.appendingPathComponent(file) }
    func load() throws -> [UInt8] { [UInt8](try Data(contentsOf: url)) }
}

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
