import Media
import TestSupport
import Testing
@testable import H264

/// The six conformance streams give exactly what FFmpeg measured, in every chunking.
@Suite struct ConformanceStreamTests {
    static let chunkings: [(String, [Int])] = [
        ("whole", [Int.max]),
        ("one byte", [1]),
        ("odd sizes", [7, 13, 1, 2, 3, 4093]),
        ("4 KiB", [4096]),
    ]

    @Test(arguments: ConformanceStream.all)
    func countsMatchFFmpeg(stream: ConformanceStream) throws {
        let bytes = try stream.load()
        #expect(bytes.count == stream.bytes)
        for (name, chunks) in Self.chunkings {
            let (units, parser) = parse(bytes, chunks: chunks)
            #expect(units.count == stream.accessUnits, "\(name)")
            #expect(units.filter(\.isIDR).count == stream.idrAccessUnits, "\(name)")
            let byType = Dictionary(uniqueKeysWithValues: parser.nalUnitsByType.map { ($0.key.rawValue, $0.value) })
            #expect(byType == stream.nalUnitsByType, "\(name)")
            #expect(parser.scanner.skippedBytes == 0, "\(name)")
            #expect(parser.assembler.parseErrors == 0, "\(name)")
            for unit in units {
                #expect(unit.resolution == Resolution(width: stream.width, height: stream.height), "\(name)")
            }
            // Nothing lost, nothing added: the access units' bytes are the file.
            let joined = units.flatMap { $0.nalUnits.flatMap { Array($0.wire) } }
            #expect(joined == bytes, "\(name)")
        }
    }

    @Test(arguments: ConformanceStream.all)
    func everyIDRHasItsParameterSets(stream: ConformanceStream) throws {
        let (units, _) = parse(try stream.load(), chunks: [Int.max])
        for unit in units where unit.isIDR {
            let types = unit.nalUnitsForEntry.map(\.type)
            #expect(types.contains(.sps) && types.contains(.pps))
        }
        #expect(units.first?.isIDR == true)
        // Every access unit but the SPS/PPS-only case has exactly one primary picture's slices.
        #expect(units.allSatisfy { $0.nalUnits.contains { $0.type.isVCL } })
    }

    @Test func fieldCodedStreamsGiveOneAccessUnitPerField() throws {
        // HCAFF1 mixes frames and field pairs: 10 frames, 14 access units (4 frames as 2 fields).
        let stream = ConformanceStream.all.first { $0.file == "HCAFF1_HHI.264" }!
        let (units, parser) = parse(try stream.load(), chunks: [Int.max])
        #expect(units.count == 14)
        #expect(parser.assembler.activeSPS?.frameMbsOnly == false)
    }
}
