import Media
import TestSupport
import Testing
@testable import H264

/// An access unit comes out of `AnnexBParser` as soon as it is known complete: once the
/// first NAL unit of the next one has arrived far enough to tell (its header, and for a
/// slice its slice header), never later, whatever the chunking; and the access units are
/// the same as a whole-file parse gives, each once.
@Suite struct AccessUnitTimingTests {
    /// The reference: the file cut into NAL units in one go, each pushed whole into an
    /// assembler (no look at unfinished NAL units), and where each NAL unit lies.
    struct Reference {
        let units: [AccessUnit]
        /// For every access unit but the first: the stream offset by which its beginning is
        /// known, so the access unit before it must have come out.
        let deadlines: [Int]
    }

    static func reference(_ bytes: [UInt8]) -> Reference {
        var scanner = AnnexBScanner()
        var nals = scanner.push(bytes)
        if let last = scanner.finish() { nals.append(last) }
        precondition(scanner.skippedBytes == 0)
        var assembler = AccessUnitAssembler()
        var units: [AccessUnit] = []
        // Parameter sets as they come, to read slice headers independently of the assembler.
        var spsById: [Int: SequenceParameterSet] = [:]
        var ppsById: [Int: PictureParameterSet] = [:]
        var deadlines: [Int] = []
        var offset = 0
        var previous: NALUnit? = nil
        for nal in nals {
            if let unit = assembler.push(nal) {
                units.append(unit)
                deadlines.append(deadline(nal, at: offset, after: previous, sps: spsById, pps: ppsById))
            }
            if nal.type == .sps, let sps = try? SequenceParameterSet(nal) { spsById[sps.id] = sps }
            if nal.type == .pps, let pps = try? PictureParameterSet(nal) { ppsById[pps.id] = pps }
            offset += nal.wire.count
            previous = nal
        }
        if let last = assembler.finish() { units.append(last) }
        precondition(offset == bytes.count)
        return Reference(units: units, deadlines: deadlines)
    }

    /// Where the first NAL unit of an access unit (`nal`, its wire at `offset`) has arrived
    /// far enough to show that the access unit before it is complete: just past its header
    /// byte, or for a slice (after a slice, no end of sequence between) just past the
    /// bytes its slice header's deciding fields occupy. A zero byte at the end of what has
    /// arrived may be the first byte of the next start code, not the NAL unit's own: the
    /// parser counts only up to the last non-zero byte, so the deadline reaches the next.
    static func deadline(_ nal: NALUnit, at offset: Int, after previous: NALUnit?, sps: [Int: SequenceParameterSet], pps: [Int: PictureParameterSet]) -> Int {
        let headerOffset = offset + (nal.headerIndex - nal.wire.startIndex)
        let closedByEnd = previous.map { $0.type == .endOfSequence || $0.type == .endOfStream } ?? false
        guard [NALType.slice, .sliceDataA, .idrSlice].contains(nal.type), !closedByEnd else { return headerOffset + 1 }
        let payload = Array(nal.escapedPayload)
        // The shortest prefix of the payload whose slice header reads without running out.
        var needed = payload.count
        for length in 1...payload.count {
            let rbsp = RBSP.unescape(Array(payload.prefix(length)))[...]
            guard let peek = try? SliceHeader.peekPPSId(rbsp: rbsp) else { continue }
            if let p = pps[peek.ppsId], let s = sps[p.spsId] {
                guard (try? SliceHeader(rbsp: rbsp, header: nal.header, sps: s, pps: p)) != nil else { continue }
            }
            needed = length
            break
        }
        var last = needed - 1
        while last < payload.count - 1 && payload[last] == 0 { last += 1 }
        return headerOffset + 1 + last + 1
    }

    /// `bytes` parsed in `pieces`; each access unit with the index of the piece whose push
    /// emitted it (`pieces.count` for `finish`).
    static func timedParse(_ pieces: [[UInt8]]) -> [(unit: AccessUnit, piece: Int)] {
        var parser = AnnexBParser()
        var out: [(AccessUnit, Int)] = []
        for (i, piece) in pieces.enumerated() { parser.push(piece) { out.append(($0, i)) } }
        parser.finish { out.append(($0, pieces.count)) }
        return out
    }

    /// Cuts `bytes` at the given offsets.
    static func split(_ bytes: [UInt8], at cuts: [Int]) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var from = 0
        for cut in cuts.sorted() where cut > from && cut < bytes.count {
            out.append(Array(bytes[from..<cut]))
            from = cut
        }
        out.append(Array(bytes[from...]))
        return out
    }

    /// Checks one chunking against the reference: the same access units, each emitted by the
    /// piece in which its successor's deadline falls, the last one at `finish`.
    static func check(_ pieces: [[UInt8]], against ref: Reference, _ label: String) {
        let timed = timedParse(pieces)
        #expect(timed.count == ref.units.count, "\(label)")
        guard timed.count == ref.units.count else { return }
        // The offset each piece ends at.
        var ends: [Int] = []
        var total = 0
        for piece in pieces {
            total += piece.count
            ends.append(total)
        }
        for (k, (unit, piece)) in timed.enumerated() {
            let expected = ref.units[k]
            #expect(unit.nalUnits.map { Array($0.wire) } == expected.nalUnits.map { Array($0.wire) }, "\(label): access unit \(k)")
            #expect(unit.isIDR == expected.isIDR, "\(label): access unit \(k)")
            #expect(unit.resolution == expected.resolution, "\(label): access unit \(k)")
            #expect(unit.parameterSets.map { Array($0.body) } == expected.parameterSets.map { Array($0.body) }, "\(label): access unit \(k)")
            if k < ref.deadlines.count {
                // The first piece that brings the deadline's bytes must have emitted it.
                let due = ends.firstIndex { $0 >= ref.deadlines[k] } ?? pieces.count
                #expect(piece <= due, "\(label): access unit \(k) came out with piece \(piece), due with piece \(due) (deadline at byte \(ref.deadlines[k]))")
            } else {
                #expect(piece == pieces.count, "\(label): the last access unit came out before the end")
            }
        }
    }

    @Test(arguments: ConformanceStream.all)
    func accessUnitsComeOutAsSoonAsTheNextOneShows(stream: ConformanceStream) throws {
        let bytes = try stream.load()
        let ref = Self.reference(bytes)
        #expect(ref.units.count == stream.accessUnits)
        var chunkings: [(String, [[UInt8]])] = [
            ("at once", [bytes]),
            ("one byte at a time", pieces(bytes, sizes: [1])),
            ("odd sizes", pieces(bytes, sizes: [7, 13, 1, 2, 3, 1021])),
            ("4 KiB", pieces(bytes, sizes: [4096])),
        ]
        var rng = SplitMix(state: UInt64(bytes.count))
        for round in 0..<4 {
            chunkings.append(("random \(round)", pieces(bytes, sizes: (0..<16).map { _ in Int.random(in: 1...300, using: &rng) })))
        }
        for (name, chunks) in chunkings { Self.check(chunks, against: ref, name) }
    }

    /// Cut in two at every byte from just before each access unit's start code to just
    /// past its deadline: inside start codes, NAL headers and slice headers.
    @Test(arguments: ConformanceStream.all)
    func everySplitAroundABoundary(stream: ConformanceStream) throws {
        let bytes = try stream.load()
        let ref = Self.reference(bytes)
        var starts: [Int] = []
        var offset = 0
        for unit in ref.units {
            starts.append(offset)
            offset += unit.byteCount
        }
        for k in 1..<ref.units.count {
            for cut in (starts[k] - 1)...(ref.deadlines[k - 1] + 1) {
                Self.check(Self.split(bytes, at: [cut]), against: ref, "split at \(cut) (access unit \(k) at \(starts[k]))")
            }
            // And a second cut inside the same stretch: three pieces, the middle one short.
            let middle = (starts[k] + ref.deadlines[k - 1]) / 2
            Self.check(Self.split(bytes, at: [starts[k] + 2, middle]), against: ref, "cuts at \(starts[k] + 2), \(middle)")
        }
    }

    /// FREXT01_JVC_D has no AUD, SEI or repeated parameter sets: each access unit after the
    /// first is begun by a slice, told apart by its slice header alone. Each one has the
    /// parameter sets of its own picture, the last one too.
    @Test func accessUnitsBegunBySlicesCarryTheirOwnParameterSets() throws {
        let stream = ConformanceStream.named("FREXT01_JVC_D.264")
        let (units, _) = parse(try stream.load(), chunks: [1021])
        #expect(units.count == stream.accessUnits)
        #expect(units.dropFirst().allSatisfy { $0.nalUnits.first?.type == .slice })
        #expect(units.allSatisfy { $0.parameterSets.map(\.type) == [.sps, .pps] })
    }

    /// A parameter set is kept for as long as its id is not reused: in storage of its own, so
    /// that it does not keep the whole chunk it was read in alive (a reader of 256 KiB chunks
    /// would otherwise hold one per parameter set, and the heap churn faults pages in again).
    @Test func keptParameterSetsDoNotShareTheChunk() throws {
        let chunk = try ConformanceStream.named("FREXT01_JVC_D.264").load()
        var parser = AnnexBParser()
        let units = parser.push(chunk) + parser.finish()
        let range = chunk.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress)..<(UInt(bitPattern: $0.baseAddress) + UInt($0.count)) }
        let kept = units.flatMap(\.parameterSets)
        #expect(kept.count == 2 * units.count)
        for nal in kept {
            let address = nal.wire.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
            #expect(!range.contains(address))
        }
        // The NAL units of the access units themselves still share it.
        let slice = try #require(units.first?.nalUnits.last)
        #expect(range.contains(slice.wire.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }))
    }

    /// The boundary questions on their own.
    @Test func beginsAccessUnitAnswersFromTheFirstBytes() throws {
        let bytes = try ConformanceStream.named("FREXT01_JVC_D.264").load()
        var scanner = AnnexBScanner()
        let nals = scanner.push(bytes)
        // The first access unit (SPS, PPS, IDR) in hand; the next picture's slice follows.
        var assembler = AccessUnitAssembler()
        for nal in nals.prefix(3) { #expect(assembler.push(nal) == nil) }
        let next = Array(nals[3].body)
        #expect(nals[3].type == .slice)
        // Only the header byte: not enough for a slice.
        #expect(assembler.beginsAccessUnit(head: next.prefix(1), isWhole: false) == nil)
        // ...unless nothing more will come: an unreadable slice header joins the picture.
        #expect(assembler.beginsAccessUnit(head: next.prefix(1), isWhole: true) == false)
        // Enough of the slice header: a new picture.
        #expect(assembler.beginsAccessUnit(head: next.prefix(AnnexBScanner.headLength)[...], isWhole: false) == true)
        // An AUD, SPS or SEI header after a picture begins one from its first byte.
        for header: UInt8 in [0x09, 0x67, 0x06] {
            #expect(assembler.beginsAccessUnit(head: [header], isWhole: false) == true)
        }
        // End of sequence belongs to the picture before it.
        #expect(assembler.beginsAccessUnit(head: [0x0a], isWhole: false) == false)
        #expect(assembler.bytesInHand == nals.prefix(3).reduce(0) { $0 + $1.wire.count })
        let ended = assembler.endAccessUnit()
        let unit = try #require(ended)
        #expect(unit.isIDR && unit.nalUnits.count == 3)
        #expect(assembler.bytesInHand == 0)
        // Settled already: appended without asking again, nothing comes out.
        assembler.append(nals[3])
        #expect(assembler.nalUnitsInHand == 1)
    }

    /// What the parser holds is what has not come out: the access unit still arriving (the
    /// timing checks above say it holds no complete one).
    @Test(arguments: ConformanceStream.all)
    func bytesInProgressIsWhatHasNotComeOut(stream: ConformanceStream) throws {
        let bytes = try stream.load()
        var parser = AnnexBParser()
        var emitted = 0
        for piece in pieces(bytes, sizes: [997, 1, 5]) {
            parser.push(piece) { emitted += $0.byteCount }
            #expect(emitted + parser.bytesInProgress == parser.scanner.totalBytes)
        }
        parser.finish { emitted += $0.byteCount }
        #expect(emitted == bytes.count)
        #expect(parser.bytesInProgress == 0)
    }

    /// Random bytes, start codes and headers among them, with and without a small NAL size
    /// limit: at every point, what came out, what is in progress and what was skipped add up
    /// to what went in; and every chunking gives the same access units as a whole push when
    /// nothing was dropped for its size.
    @Test func randomBytesAreAccountedForAtEveryPoint() {
        var rng = SplitMix(state: 2024)
        for round in 0..<40 {
            let bytes = (0..<6000).map { _ in UInt8.random(in: 0...7, using: &rng) == 0 ? UInt8.random(in: 0...255, using: &rng) : UInt8.random(in: 0...3, using: &rng) }
            let limit = round % 2 == 0 ? 256 : AnnexBScanner.defaultMaxNALUnitSize
            var whole = AnnexBParser(maxNALUnitSize: limit)
            let unitsWhole = whole.push(bytes) + whole.finish()
            for sizes in [[1], [3, 1, 7], [Int.random(in: 1...64, using: &rng)]] {
                var parser = AnnexBParser(maxNALUnitSize: limit)
                var units: [AccessUnit] = []
                var emitted = 0
                for piece in pieces(bytes, sizes: sizes) {
                    parser.push(piece) { units.append($0); emitted += $0.byteCount }
                    #expect(emitted + parser.bytesInProgress + parser.scanner.skippedBytes == parser.scanner.totalBytes, "round \(round), sizes \(sizes)")
                }
                parser.finish { units.append($0); emitted += $0.byteCount }
                #expect(emitted + parser.scanner.skippedBytes == bytes.count, "round \(round), sizes \(sizes)")
                if whole.scanner.oversizedNALUnits == 0 && parser.scanner.oversizedNALUnits == 0 {
                    #expect(units.map { $0.nalUnits.map { Array($0.body) } } == unitsWhole.map { $0.nalUnits.map { Array($0.body) } }, "round \(round), sizes \(sizes)")
                }
            }
        }
    }

    /// A slice dropped for its size still says where an access unit ends, so that a reader
    /// that saw its first bytes early and one that did not give the same access units.
    @Test func anOversizedSliceSettlesTheBoundaryInEveryChunking() throws {
        let bytes = try ConformanceStream.named("FREXT01_JVC_D.264").load()
        // Access unit 13 is one slice of about 16 KB: over a 12 KB limit, dropped.
        let limit = 12_000
        var results: [[[[UInt8]]]] = []
        for sizes in [[Int.max], [1], [5], [4096], [13, 7, 1]] {
            var parser = AnnexBParser(maxNALUnitSize: limit)
            var units: [AccessUnit] = []
            for piece in pieces(bytes, sizes: sizes) { parser.push(piece) { units.append($0) } }
            parser.finish { units.append($0) }
            #expect(parser.scanner.oversizedNALUnits >= 1, "\(sizes)")
            results.append(units.map { $0.nalUnits.map { Array($0.body) } })
        }
        #expect(results.allSatisfy { $0 == results[0] })
    }
}
