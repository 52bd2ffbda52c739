import Testing
@testable import H264

@Suite struct AnnexBScannerTests {
    /// A small stream with every start-code shape the scanner must handle.
    static let stream: [UInt8] = [
        0x12, 0x34,                    // garbage before the first start code: skipped, counted
        0x00, 0x00, 0x00, 0x01,        // 4-byte start code
        0x09, 0xf0,                    //   AUD (type 9), primary_pic_type 7 + stop bit
        0x00, 0x00, 0x01,              // 3-byte start code
        0x67, 0x42, 0x00, 0x1e,        //   SPS header, profile 66, constraints, level 30
        0x00, 0x00,                    //   trailing_zero_8bits
        0x00, 0x00, 0x01,              // 3-byte start code (so 5 zeros before the 01)
        0x68, 0xce, 0x00, 0x00, 0x03, 0x01,  //   PPS with an emulation prevention byte (00 00 03 01 → 00 00 01)
        0x00, 0x00, 0x00, 0x01,        // 4-byte start code
        0x65, 0x88, 0x84,              //   IDR slice header bytes
        0x00, 0x00,                    // trailing zeros at the end of the stream
    ]

    static let expectedBodies: [[UInt8]] = [
        [0x09, 0xf0],
        [0x67, 0x42, 0x00, 0x1e],
        [0x68, 0xce, 0x00, 0x00, 0x03, 0x01],
        [0x65, 0x88, 0x84],
    ]

    static func chunkings() -> [[Int]] {
        var out: [[Int]] = [[Int.max], [1], [2], [3], [5], [7, 1, 2]]
        // Every split point in two pieces, so each start code is split at each of its bytes.
        for split in 1..<stream.count { out.append([split, Int.max]) }
        var rng = SplitMix(state: 42)
        for _ in 0..<50 { out.append((0..<8).map { _ in Int.random(in: 1...6, using: &rng) }) }
        return out
    }

    @Test func sameNALUnitsInEveryChunking() {
        for chunks in Self.chunkings() {
            let (nals, scanner) = scan(Self.stream, chunks: chunks)
            #expect(nals.map { Array($0.body) } == Self.expectedBodies, "chunks \(chunks)")
            #expect(scanner.skippedBytes == 2, "chunks \(chunks)")
            // The wire bytes put back together are the input less the skipped garbage.
            #expect(nals.flatMap { Array($0.wire) } == Array(Self.stream.dropFirst(2)), "chunks \(chunks)")
        }
    }

    @Test func headerFields() {
        let (nals, _) = scan(Self.stream, chunks: [Int.max])
        #expect(nals.map(\.type) == [.accessUnitDelimiter, .sps, .pps, .idrSlice])
        #expect(nals[1].header.refIdc == 3)
        #expect(nals[0].header.refIdc == 0)
        #expect(!nals[3].header.forbiddenBit)
        #expect(NALHeader(0xe5).forbiddenBit)
        #expect(nals[2].rbsp() == [0xce, 0x00, 0x00, 0x01])
    }

    @Test func startCodeAtTheVeryEndOfAChunkWaitsForTheHeader() {
        var scanner = AnnexBScanner()
        #expect(scanner.push([0, 0, 1, 0x09, 0xf0, 0, 0, 1]).isEmpty == false)
        #expect(scanner.push([0x41, 0x9a]).isEmpty)
        let last = scanner.finish()
        #expect(last.map { Array($0.body) } == [0x41, 0x9a])
    }

    @Test func headerByteEqualToOneIsNotAStartCode() {
        // 00 00 01 01: a NAL unit whose header is 0x01 (type 1, nal_ref_idc 0).
        let (nals, _) = scan([0, 0, 1, 0x01, 0xaa, 0, 0, 1, 0x09, 0xf0], chunks: [1])
        #expect(nals.map { Array($0.body) } == [[0x01, 0xaa], [0x09, 0xf0]])
    }

    @Test func startCodeWithNoHeaderIsSkipped() {
        // 00 00 01 followed at once by another start code: no NAL unit in between.
        for chunks in [[Int.max], [1], [4, 1]] {
            let (nals, scanner) = scan([0, 0, 1, 0, 0, 1, 0x09, 0xf0], chunks: chunks)
            #expect(nals.map { Array($0.body) } == [[0x09, 0xf0]], "chunks \(chunks)")
            #expect(scanner.skippedBytes == 3, "chunks \(chunks)")
        }
    }

    @Test func allZeroBytesGiveNothing() {
        let zeros = [UInt8](repeating: 0, count: 100_000)
        let (nals, scanner) = scan(zeros, chunks: [4096])
        #expect(nals.isEmpty)
        #expect(scanner.skippedBytes == zeros.count)
    }

    @Test func randomBytesNeverCrashAndAreAccountedFor() {
        var rng = SplitMix(state: 7)
        for round in 0..<20 {
            let bytes = (0..<20_000).map { _ in UInt8.random(in: 0...3, using: &rng) }  // many start codes
            let (nals, scanner) = scan(bytes, chunks: [Int.random(in: 1...300, using: &rng)])
            let kept = nals.reduce(0) { $0 + $1.wire.count }
            #expect(kept + scanner.skippedBytes == bytes.count, "round \(round)")
        }
    }

    @Test func oversizedNALUnitIsDroppedAndTheScannerResyncs() {
        var bytes: [UInt8] = [0, 0, 0, 1, 0x09, 0xf0]
        bytes += [0, 0, 0, 1, 0x41] + [UInt8](repeating: 0xab, count: 5000)  // too big
        bytes += [0, 0, 0, 1, 0x09, 0xf0]
        bytes += [0, 0, 0, 1, 0x41, 0x9a]
        for chunks in [[Int.max], [100], [1]] {
            let (nals, scanner) = scan(bytes, chunks: chunks, maxNALUnitSize: 1024)
            #expect(nals.map(\.body.count) == [2, 2, 2], "chunks \(chunks)")
            #expect(nals.last.map { Array($0.body) } == [0x41, 0x9a], "chunks \(chunks)")
            #expect(scanner.oversizedNALUnits == 1, "chunks \(chunks)")
            #expect(scanner.skippedBytes >= 5000, "chunks \(chunks)")
        }
    }

    @Test func nalUnitsInsideOneChunkShareItsStorage() {
        let chunk: [UInt8] = [0, 0, 1, 0x09, 0xf0, 0, 0, 1, 0x41, 0x9a, 0, 0, 1, 0x09, 0xf0]
        var scanner = AnnexBScanner()
        let nals = scanner.push(chunk)
        #expect(nals.count == 2)
        chunk.withUnsafeBufferPointer { base in
            nals[1].wire.withUnsafeBufferPointer { slice in
                #expect(slice.baseAddress == base.baseAddress! + 5)
            }
        }
    }
}

@Suite struct RBSPTests {
    @Test func unescapeRemovesOnlyEmulationPreventionBytes() {
        #expect(RBSP.unescape([0x00, 0x00, 0x03, 0x01]) == [0x00, 0x00, 0x01])
        #expect(RBSP.unescape([0x00, 0x00, 0x03, 0x00, 0x00, 0x03]) == [0x00, 0x00, 0x00, 0x00])
        #expect(RBSP.unescape([0x00, 0x03, 0x01]) == [0x00, 0x03, 0x01])  // one zero: 03 is data
        #expect(RBSP.unescape([0x00, 0x00, 0x03, 0x03]) == [0x00, 0x00, 0x03])
    }

    @Test func escapeRoundTrips() {
        var rng = SplitMix(state: 3)
        for _ in 0..<200 {
            let raw = (0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...4, using: &rng) }
            let escaped = RBSP.escape(raw)
            // No start code: after 00 00 comes 03 (ours) or a byte above 3.
            for i in 0..<Swift.max(0, escaped.count - 2) where escaped[i] == 0 && escaped[i + 1] == 0 {
                #expect(escaped[i + 2] >= 3)
            }
            let back = RBSP.unescape(escaped)
            // A trailing 00 gets a protecting 03 that unescape keeps only when it follows two zeros.
            #expect(Array(back.prefix(raw.count)) == raw)
        }
    }
}

@Suite struct BitReaderTests {
    @Test func expGolomb() throws {
        // 1 | 010 | 011 | 00100 | 00101 → ue 0, 1, 2, 3, 4
        var r = BitReader([0b1010_0110, 0b0100_0010, 0b1000_0000])
        #expect(try r.ue("a") == 0)
        #expect(try r.ue("b") == 1)
        #expect(try r.ue("c") == 2)
        #expect(try r.ue("d") == 3)
        #expect(try r.ue("e") == 4)
        // se: 010 → 1, 011 → -1, 00100 → 2
        var s = BitReader([0b0100_1100, 0b1000_0000])
        #expect(try s.se("a") == 1)
        #expect(try s.se("b") == -1)
        #expect(try s.se("c") == 2)
    }

    @Test func largestCodeAndOverflow() throws {
        // 31 zeros, a 1, 31 ones: 2^32 - 2... then a 32-zero prefix overflows.
        var bits = [Bool](repeating: false, count: 31) + [true] + [Bool](repeating: true, count: 31)
        var r = BitReader(pack(bits))
        #expect(try r.ue("max") == UInt32.max - 1)
        bits = [Bool](repeating: false, count: 40) + [true]
        var o = BitReader(pack(bits))
        #expect(throws: BitstreamError.overflow(field: "x")) { try o.ue("x") }
    }

    @Test func truncationThrowsNamingTheField() {
        var r = BitReader([0b0000_0001])  // prefix of 7 zeros, a 1, then nothing
        #expect(throws: BitstreamError.truncated(field: "level")) { try r.ue("level") }
        var b = BitReader([0xff])
        #expect(throws: BitstreamError.truncated(field: "u16")) { try b.bits(16, "u16") }
        var e = BitReader([])
        #expect(throws: BitstreamError.truncated(field: "flag")) { try e.flag("flag") }
    }

    @Test func moreRBSPData() throws {
        var r = BitReader([0b1100_0000])  // one data bit 1, then the stop bit
        #expect(r.moreRBSPData)
        _ = try r.flag("x")
        #expect(!r.moreRBSPData)
    }

    private func pack(_ bits: [Bool]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: (bits.count + 7) / 8)
        for (i, bit) in bits.enumerated() where bit { out[i / 8] |= 0x80 >> UInt8(i % 8) }
        return out
    }
}

@Suite struct AnnexBScannerDripTests {
    @Test func aLargeNALUnitArrivingOneByteAtATimeComesOutWhole() {
        // 300 000 one-byte reads inside one NAL unit: the kept pieces are folded as they grow.
        var rng = SplitMix(state: 5)
        let body: [UInt8] = [0x65] + (0..<300_000).map { _ in UInt8.random(in: 4...255, using: &rng) }
        let stream: [UInt8] = [0, 0, 0, 1] + body + [0, 0, 0, 1, 0x09, 0xf0]
        let (nals, scanner) = scan(stream, chunks: [1])
        #expect(nals.count == 2)
        #expect(nals.first.map { Array($0.body) == body } == true)
        #expect(scanner.skippedBytes == 0)
    }
}
