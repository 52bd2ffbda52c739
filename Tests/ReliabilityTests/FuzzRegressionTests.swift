import Foundation
import Media
import Testing
import Capture
@testable import H264

/// Inputs the fuzzers (fuzz/) found, committed under fuzz/regressions/TARGET/, replayed
/// through the same checks as the fuzz targets; plus the findings as small inline fixtures.
@Suite struct FuzzRegressionTests {
    static let regressions = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("fuzz/regressions")

    static func inputs(_ target: String) -> [[UInt8]] {
        let dir = regressions.appendingPathComponent(target)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return names.sorted().compactMap { try? [UInt8](Data(contentsOf: dir.appendingPathComponent($0))) }
    }

    /// The parser's access units for `bytes` pushed in pieces of `chunk` bytes.
    static func parse(_ bytes: ArraySlice<UInt8>, chunk: Int, limit: Int) -> [AccessUnit] {
        var parser = AnnexBParser(maxNALUnitSize: limit)
        var units: [AccessUnit] = []
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let end = offset + min(bytes.endIndex - offset, chunk)
            units += parser.push(Array(bytes[offset..<end]))
            offset = end
        }
        return units + parser.finish()
    }

    static func bodies(_ units: [AccessUnit]) -> [[[UInt8]]] { units.map { $0.nalUnits.map { Array($0.body) } } }

    /// fuzz/targets/AnnexB.swift: first byte = chunk size and NAL size limit, then the stream.
    @Test func annexBInputsGiveTheSameAccessUnitsInEveryChunking() {
        let inputs = Self.inputs("annexb")
        #expect(!inputs.isEmpty)
        for input in inputs where !input.isEmpty {
            let limit = input[0] & 0x40 != 0 ? 256 : AnnexBScanner.defaultMaxNALUnitSize
            let whole = Self.bodies(Self.parse(input.dropFirst(), chunk: .max, limit: limit))
            for chunk in [1, 2, 3, 5, Int(input[0] & 0x3f) + 1] {
                #expect(Self.bodies(Self.parse(input.dropFirst(), chunk: chunk, limit: limit)) == whole, "chunk \(chunk)")
            }
        }
    }

    /// The fuzzer's other check, on every committed input: each byte pushed is in an access
    /// unit handed out, in progress, skipped by the scanner, or in an access unit of nothing
    /// but delimiters (a delimited stream's tail, not handed out: an end of stream alone, as
    /// one input has it, was once left out of the count).
    @Test func annexBInputsAccountForEveryByte() {
        for input in Self.inputs("annexb") where !input.isEmpty {
            let limit = input[0] & 0x40 != 0 ? 256 : AnnexBScanner.defaultMaxNALUnitSize
            for chunk in [1, 3, Int(input[0] & 0x3f) + 1] {
                var parser = AnnexBParser(maxNALUnitSize: limit)
                var out = 0
                var offset = 1
                while offset < input.count {
                    let end = min(input.count, offset + chunk)
                    out += parser.push(Array(input[offset..<end])).reduce(0) { $0 + $1.byteCount }
                    #expect(out + parser.bytesInProgress + parser.scanner.skippedBytes + parser.assembler.delimiterOnlyBytes == end - 1,
                            "chunk \(chunk): bytes unaccounted for at \(end - 1)")
                    offset = end
                }
            }
        }
    }

    /// Found by fuzzing: a NAL unit of exactly the size limit, whose next start code's zeros
    /// ended one read and whose `01` began the next, was dropped as oversized (the zeros were
    /// counted as its bytes); read at once it was kept.
    @Test func nalUnitAtTheLimitIsKeptWhenTheStartCodeIsSplit() {
        // The limit counts a NAL unit's wire bytes: its start code and its body.
        let limit = 64
        // 4-byte start code + a body of `limit - 4` bytes (header 0x06, then 0x11s): exactly
        // the limit; then a 4-byte start code and a 2-byte NAL unit (AUD).
        let first: [UInt8] = [0x06] + [UInt8](repeating: 0x11, count: limit - 5)
        let stream: [UInt8] = [0, 0, 0, 1] + first + [0, 0, 0, 1, 0x09, 0xf0]
        for split in [limit + 1, limit + 2, limit + 3, stream.count] {  // after 1, 2 or 3 zeros; at once
            var scanner = AnnexBScanner(maxNALUnitSize: limit)
            var nals = scanner.push(Array(stream[..<split]))
            nals += scanner.push(Array(stream[split...]))
            if let last = scanner.finish() { nals.append(last) }
            #expect(nals.map { Array($0.body) } == [first, [0x09, 0xf0]], "split at \(split)")
            #expect(scanner.oversizedNALUnits == 0)
        }
        // One byte more is over the limit in every chunking.
        let big: [UInt8] = [0, 0, 0, 1, 0x06] + [UInt8](repeating: 0x11, count: limit - 4) + [0, 0, 0, 1, 0x09, 0xf0]
        for chunk in [1, 3, big.count] {
            var scanner = AnnexBScanner(maxNALUnitSize: limit)
            var nals: [NALUnit] = []
            var offset = 0
            while offset < big.count {
                nals += scanner.push(Array(big[offset..<(offset + min(big.count - offset, chunk))]))
                offset += chunk
            }
            if let last = scanner.finish() { nals.append(last) }
            #expect(nals.map { Array($0.body) } == [[0x09, 0xf0]], "chunk \(chunk)")
            #expect(scanner.oversizedNALUnits == 1)
        }
    }

    /// fuzz/targets/SEI.swift: a timestamp that parses encodes back to its payload, less the
    /// reserved flag bits (found by fuzzing: the reader ignores them, which is right; the
    /// target's check was too strict).
    @Test func seiInputsRoundTripLessTheReservedFlags() {
        let inputs = Self.inputs("sei")
        #expect(!inputs.isEmpty)
        for input in inputs {
            for message in SEI.messages(rbsp: input) {
                guard let t = StreamTimestamp(payload: message.payload) else { continue }
                var expected = Array(message.payload.prefix(StreamTimestamp.payloadSize))
                expected[17] &= 1
                #expect(t.payload == expected)
            }
        }
    }
}
