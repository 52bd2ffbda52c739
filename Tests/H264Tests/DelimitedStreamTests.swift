import Foundation
import Media
import TestSupport
import Testing
@testable import H264

/// A delimited stream (`AccessUnitDelimiting`: each access unit followed at once by the next
/// one's AUD) and nalcast's own parser: an access unit comes out as soon as the next one's
/// AUD header byte has arrived, the stream's tail (an AUD, an end of sequence) is no access
/// unit, and a stream cut right after an AUD has lost nothing.
@Suite struct DelimitedStreamTests {
    /// An IDR slice whose slice header says first_mb_in_slice 0, slice_type 7, pps 0.
    static let idrSlice = NALUnit(escapedBody: [0x65, 0x88, 0x84, 0x21, 0xA0])
    static let aud = NALUnit(escapedBody: [0x09, 0x10])
    /// A baseline SPS (id 0) and a PPS for it.
    static let sps = NALUnit(escapedBody: [0x67, 0x42, 0xC0, 0x1E, 0xDA, 0x02, 0x80, 0xBF, 0xE5, 0x84, 0x00, 0x00, 0x03, 0x00, 0x04, 0x00, 0x00, 0x03, 0x00, 0xF0, 0x3C, 0x60, 0xC9, 0x20])
    static let pps = NALUnit(escapedBody: [0x68, 0xCE, 0x0F, 0xC8])
    /// An SEI (one user-data message) and an end of sequence.
    static let sei = NALUnit(escapedBody: [0x06, 0x05, 0x01, 0x42, 0x80])
    static let eos = NALUnit(escapedBody: [0x0A])

    static func bytes(_ nals: [NALUnit]) -> [UInt8] { nals.flatMap { Array($0.wire) } }

    /// An access unit followed by nothing but the next one's start code and AUD header byte
    /// (`00 00 00 01 09`) is out: the parser does not wait for the AUD to end.
    @Test func accessUnitIsOutAtTheNextDelimitersHeaderByte() {
        var parser = AnnexBParser()
        var units = parser.push(Self.bytes([Self.aud, Self.idrSlice]))
        #expect(units.isEmpty, "nothing shows the access unit is complete yet")
        units = parser.push([0, 0, 0, 1])
        #expect(units.isEmpty, "a start code alone does not say what begins")
        units = parser.push([0x09])
        #expect(units.count == 1)
        #expect(units.first?.nalTypes == [.accessUnitDelimiter, .idrSlice])
        #expect(!parser.hasAccessUnitInProgress, "an AUD alone is nothing lost")
        #expect(parser.bytesInProgress == 5)
        // The AUD's payload and an end of sequence end the stream: no access unit, a clean end.
        units = parser.push([0xF0, 0, 0, 0, 1, 0x0A])
        units += parser.finish()
        #expect(units.isEmpty)
        #expect(parser.assembler.delimiterOnlyUnits == 1)
        #expect(parser.assembler.endedStream)
    }

    @Test func framingSendsTheNextDelimiterBehindEachAccessUnit() {
        var framing = AccessUnitDelimiting()
        let trailer: [UInt8] = [0, 0, 0, 1, 0x09, 0xF0, 0, 0, 0, 1, 0x06]
        let first = framing.frame([Self.aud, Self.idrSlice]).flatMap { $0 }
        #expect(first == Self.bytes([Self.aud, Self.idrSlice]) + trailer, "the first keeps its own AUD")
        let second = framing.frame([Self.aud, Self.sei, Self.idrSlice]).flatMap { $0 }
        #expect(second == [0x05, 0x01, 0x42, 0x80] + Self.bytes([Self.idrSlice]) + trailer, "the SEI the trailer began goes on")
        let third = framing.frame([Self.aud, Self.idrSlice]).flatMap { $0 }
        #expect(third == [0x03, 0x00, 0x80] + Self.bytes([Self.idrSlice]) + trailer, "no SEI first: an empty filler SEI")
        #expect(framing.frame([Self.aud]).isEmpty, "an AUD alone would open a second access unit")
        #expect(framing.closing().flatMap { $0 } == [0x03, 0x00, 0x80, 0, 0, 0, 1, 0x0A])
        var fresh = AccessUnitDelimiting()
        #expect(fresh.closing().flatMap { $0 } == [0, 0, 0, 1, 0x0A], "an end of sequence alone when nothing was written")
        let bare = fresh.frame([Self.idrSlice]).flatMap { $0 }
        #expect(bare == [0, 0, 0, 1, 0x09, 0xF0] + Self.bytes([Self.idrSlice]) + trailer, "a stream without AUDs gets them")
    }

    /// A writer that takes the shared continuation keeps from it what it would keep from the
    /// NAL units themselves: an SPS and PPS that reach it only through a continuation make
    /// the same closing picture.
    @Test func parameterSetsTakenThroughAContinuationAreNoted() {
        let first = [Self.aud, Self.idrSlice]
        let idr = [Self.aud, Self.sps, Self.pps, Self.idrSlice]
        let maker = AccessUnitDelimiting()
        #expect(maker.continuing(first).noted.isEmpty)
        #expect(maker.continuing(idr).noted.map(\.type) == [.sps, .pps])
        var own = AccessUnitDelimiting()
        var sharing = AccessUnitDelimiting()
        _ = own.frame(first)
        _ = sharing.frame(first)
        #expect(sharing.closing().count == 2, "no SPS yet: no closing picture")
        _ = own.frame(idr)
        let tookIDR = sharing.take(maker.continuing(idr))
        #expect(tookIDR)
        #expect(sharing.closing().count == 3, "the closing picture, from the SPS the continuation noted")
        #expect(sharing.closing().flatMap { $0 } == own.closing().flatMap { $0 })
    }

    /// The closing picture is made from the last SPS written, read at the close: after one that
    /// does not read, the stream closes without it (the filler SEI and the end of sequence).
    @Test func theClosingPictureTakesTheLastSPSWritten() {
        let cutSPS = NALUnit(escapedBody: [0x67, 0x42])
        var framing = AccessUnitDelimiting()
        _ = framing.frame([Self.aud, Self.sps, Self.pps, Self.idrSlice])
        #expect(framing.closing().count == 3, "the closing picture, from the SPS")
        _ = framing.frame([Self.aud, cutSPS, Self.pps, Self.idrSlice])
        #expect(framing.closing().flatMap { $0 } == [0x03, 0x00, 0x80, 0, 0, 0, 1, 0x0A], "the last SPS does not read: no closing picture")
    }

    /// What a server makes once per access unit (`continuing`) and its readers take past
    /// their first (`take(_:)`) is byte for byte what each would frame itself,
    /// from the first access unit through an AUD alone to one that ends the stream.
    @Test func sharedChunksAreWhatEachWriterWouldFrame() {
        let units: [[NALUnit]] = [[Self.aud, Self.sps, Self.pps, Self.idrSlice], [Self.aud, Self.sei, Self.idrSlice], [Self.idrSlice], [Self.aud],
                                  [Self.aud, Self.idrSlice], [Self.aud, Self.sei, Self.idrSlice, Self.eos]]
        var own = AccessUnitDelimiting()
        var sharing = AccessUnitDelimiting()
        let maker = AccessUnitDelimiting()
        for (n, unit) in units.enumerated() {
            let shared = maker.continuing(unit)
            let expected = own.frame(unit).flatMap { $0 }
            let chunks = sharing.take(shared) ? shared.chunks : sharing.frame(unit)
            #expect(chunks.flatMap { $0 } == expected, "unit \(n)")
            #expect(sharing.nextIsOpen == own.nextIsOpen && sharing.ended == own.ended, "unit \(n)")
        }
        #expect(own.ended, "the last unit ended the stream")
        var reopened = own
        var reopenedSharing = sharing
        let later = [Self.aud, Self.idrSlice]
        let tookLater = reopenedSharing.take(maker.continuing(later))
        #expect(!tookLater, "after an end, the shared chunks are not this writer's")
        #expect(reopenedSharing.frame(later).flatMap { $0 } == reopened.frame(later).flatMap { $0 },
                "after an end, the next unit begins with its own AUD again")
        #expect(reopenedSharing.closing().flatMap { $0 } == reopened.closing().flatMap { $0 }, "the same closing picture (the SPS noted)")
        #expect(!reopened.closing().isEmpty)
    }

    /// The same through `StreamFraming`, what a server's readers hold: it takes a
    /// continuation that leaves a writer as it is (`leavesWritersAsTheyAre`) by reading its
    /// framing, not changing it, and the bytes, the open delimiter and the closing picture
    /// stay each unit what a writer framing every unit itself has.
    @Test func streamFramingTakesWhatLeavesItAsItIsWithoutChangingIt() {
        let units: [[NALUnit]] = [[Self.aud, Self.idrSlice], [Self.aud, Self.sei, Self.idrSlice], [Self.aud, Self.sps, Self.pps, Self.idrSlice],
                                  [Self.aud], [Self.idrSlice], [Self.aud, Self.sei, Self.idrSlice, Self.eos], [Self.aud, Self.idrSlice]]
        var own = AccessUnitDelimiting()
        var sharing = StreamFraming()
        var maker = StreamFraming()
        var took: [Bool] = []
        for (n, unit) in units.enumerated() {
            let shared = maker.continuing(unit, of: H264Codec())
            let expected = own.frame(unit).flatMap { $0 }
            let taken = sharing.take(shared)
            took.append(taken)
            let chunks = taken ? shared.chunks : sharing.frame(unit, of: H264Codec())
            #expect(chunks.flatMap { $0 } == expected, "unit \(n)")
            #expect(sharing.nextIsOpen == own.nextIsOpen, "unit \(n)")
            #expect(sharing.closing().flatMap { $0 } == own.closing().flatMap { $0 }, "unit \(n): the same closing")
        }
        #expect(took == [false, true, true, true, true, true, false], "the first unit and the one after the end are framed")
        #expect(units.map { maker.continuing($0, of: H264Codec()).leavesWritersAsTheyAre } == [true, true, false, true, true, false, true])
    }

    /// A stream cut anywhere in the trailer has lost nothing; cut in the next access unit's
    /// SEI body, it has.
    @Test func theTrailerIsNothingInProgress() {
        var framing = AccessUnitDelimiting()
        let bytes = framing.frame([Self.aud, Self.idrSlice]).flatMap { $0 }
        var parser = AnnexBParser()
        let units = parser.push(bytes)
        #expect(units.count == 1)
        #expect(!parser.hasAccessUnitInProgress)
        var cut = parser
        #expect(cut.finish().isEmpty, "a stream cut at the trailer ends with no access unit")
        _ = parser.push([0x03])
        #expect(parser.hasAccessUnitInProgress)
    }

    /// Every conformance stream, delimited and pushed a byte at a time: each access unit is
    /// out once the AUD behind it has its header byte in, the access units are the stream's
    /// own (an AUD in front), and the tail adds none.
    @Test(arguments: ConformanceStream.all)
    func conformanceStreamsDelimited(stream: ConformanceStream) throws {
        var parser = AnnexBParser()
        let reference = parser.push(try stream.load()) + parser.finish()
        #expect(reference.count == stream.accessUnits)
        var framing = AccessUnitDelimiting()
        var delimited: [UInt8] = []
        // For each access unit: the offset of the byte that releases it: its trailing AUD's
        // header byte, or for one that ends the stream itself (an end of sequence or of
        // stream last: sent without a trailer) the next access unit's AUD header byte; nil
        // for the last of those (out at the end).
        var released: [Int?] = []
        for unit in reference {
            let start = delimited.count
            let chunks = framing.frame(unit.nalUnits)
            if let last = released.indices.last, released[last] == nil, let aud = chunks.first, let header = aud.firstIndex(of: 0x09) {
                released[last] = start + (header - aud.startIndex)
            }
            delimited += chunks.flatMap { $0 }
            released.append(unit.endsStream ? nil : delimited.count - 7)
        }
        delimited += framing.closing().flatMap { $0 }
        var out: [AccessUnit] = []
        parser = AnnexBParser()
        for (offset, byte) in delimited.enumerated() {
            parser.push([byte]) { out.append($0) }
            let due = released.filter { $0.map { $0 <= offset } ?? false }.count
            #expect(out.count == due, "\(stream): \(out.count) access units out at byte \(offset), \(due) due")
            if out.count != due { break }
        }
        parser.finish { out.append($0) }
        #expect(out.count == reference.count, "the closing picture is no access unit")
        for (n, (got, want)) in zip(out, reference).enumerated() {
            // After the first, each begins with the SEI the trailer began (a filler: these have
            // none), but after one that ended the stream itself: its own AUD, no trailer.
            let opened = n > 0 && !reference[n - 1].endsStream
            let begun: [NALType] = opened ? [.accessUnitDelimiter, .sei] : [.accessUnitDelimiter]
            #expect(got.nalTypes == begun + want.nalTypes.filter { $0 != .accessUnitDelimiter })
            #expect(got.isIDR == want.isIDR)
        }
        let endsItself = reference.last?.endsStream ?? false
        #expect(parser.assembler.delimiterOnlyUnits == (endsItself ? 0 : 1), "the closing, unless the last picture ended the stream")
        #expect(parser.assembler.endedStream)
        try expectFFmpegReadsQuietly(delimited, frames: stream, name: "\(stream)")
    }

    /// The closing completes the access unit the last trailer opened: the filler SEI's body,
    /// a PPS with an id the stream did not use that allows redundant pictures, a
    /// non-reference I slice with redundant_pic_cnt 1 in it, and an end of sequence.
    @Test func closingCompletesTheOpenedAccessUnitWithARedundantPicture() throws {
        let stream = ConformanceStream.named("HCAFF1_HHI.264")
        var parser = AnnexBParser()
        let units = parser.push(try stream.load()) + parser.finish()
        var framing = AccessUnitDelimiting()
        var framed: [UInt8] = []
        for unit in units { framed += framing.frame(unit.nalUnits).flatMap { $0 } }
        let usedPPS = Set(units.flatMap(\.nalUnits).filter { $0.type == .pps }.compactMap { try? PictureParameterSet($0).id })
        let closing = framing.closing().flatMap { $0 }
        #expect(Array(closing.prefix(3)) == AccessUnitDelimiting.fillerSEIBody)
        #expect(Array(closing.suffix(5)) == AccessUnitDelimiting.endOfSequence)
        var reader = AnnexBParser()
        let read = reader.push(framed + closing) + reader.finish()
        #expect(read.count == units.count, "the closing picture is nothing to decode")
        #expect(reader.assembler.delimiterOnlyUnits == 1)
        #expect(reader.assembler.endedStream)
        let nals = NALUnitsOf(Array(AccessUnitDelimiting.trailer) + closing)
        #expect(nals.map(\.type) == [.accessUnitDelimiter, .sei, .pps, .slice, .endOfSequence])
        let pps = try PictureParameterSet(nals[2])
        #expect(!usedPPS.contains(pps.id), "PPS \(pps.id) replaces none of \(usedPPS.sorted())")
        #expect(pps.redundantPicCntPresent && !pps.entropyCodingModeCABAC)
        let sps = try #require(units.last.flatMap { unit in
            unit.parameterSets.first { $0.type == .sps }.flatMap { try? SequenceParameterSet($0) }
        })
        let slice = try SliceHeader(rbsp: nals[3].rbsp()[...], header: nals[3].header, sps: sps, pps: pps)
        #expect(slice.redundantPicCnt == 1 && slice.nalRefIdc == 0 && slice.firstMbInSlice == 0)
    }

    /// FFmpeg reads a delimited stream to its end without a word and decodes every picture
    /// (its parser would write "missing picture in access unit" for an access unit ending
    /// without a slice).
    private func expectFFmpegReadsQuietly(_ delimited: [UInt8], frames stream: ConformanceStream, name: String) throws {
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let plain = dir.appendingPathComponent("plain.h264"), framed = dir.appendingPathComponent("framed.h264")
        try Data(try stream.load()).write(to: plain)
        try Data(delimited).write(to: framed)
        func probe(_ url: URL) throws -> Tool.Result {
            try Tool.run(["ffprobe", "-v", "error", "-f", "h264", "-count_frames", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", url.path])
        }
        let want = try probe(plain), got = try probe(framed)
        #expect(got.stderr == want.stderr, "\(name): FFmpeg said \(got.stderr)")
        #expect(got.stdout == want.stdout, "\(name): the same pictures")
    }
}

/// The NAL units of an Annex-B byte string.
private func NALUnitsOf(_ bytes: [UInt8]) -> [NALUnit] {
    var scanner = AnnexBScanner()
    return scanner.push(bytes) + (scanner.finish().map { [$0] } ?? [])
}

/// Where a delimited stream's access units end: at its AUDs, and where one is missing, where
/// the stream without AUDs would have them end (a parameter set or SEI after a picture, a
/// slice of a new picture by 7.4.1.2.4). Checked against the same stream with its AUDs taken
/// out, with every third AUD missing, and against FFmpeg's packet count, for x264 streams of
/// several kinds.
@Suite struct DelimitedX264StreamTests {
    /// x264 streams with AUDs: High with B-frames and 4 slices a picture; MBAFF interlaced with
    /// 3 slices; slices of at most 600 bytes (many a picture); Baseline with 2 slices.
    static let kinds: [(String, [String])] = [
        ("high, B-frames, 4 slices", ["-profile:v", "high", "-x264-params", "aud=1:slices=4:bframes=2:keyint=12"]),
        ("interlaced, 3 slices", ["-profile:v", "high", "-flags", "+ildct", "-x264-params", "aud=1:slices=3:tff=1:keyint=12"]),
        ("slices of 600 bytes", ["-profile:v", "main", "-x264-params", "aud=1:slice-max-size=600:keyint=12"]),
        ("baseline, 2 slices", ["-profile:v", "baseline", "-x264-params", "aud=1:slices=2:keyint=12"]),
    ]

    static func encode(_ options: [String], in dir: URL) throws -> (bytes: [UInt8], packets: Int) {
        let out = dir.appendingPathComponent("stream.h264")
        let made = try Tool.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-t", "1.6",
                                 "-c:v", "libx264", "-preset", "veryfast"] + options + ["-f", "h264", out.path])
        #expect(made.status == 0, "\(made.stderr)")
        let probe = try Tool.run(["ffprobe", "-v", "error", "-count_packets", "-show_entries", "stream=nb_read_packets", "-of", "csv=p=0", out.path])
        return ([UInt8](try Data(contentsOf: out)), Int(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1)
    }

    /// Each access unit's slices, as bytes: what must group the same whatever the AUDs.
    static func slices(_ units: [AccessUnit]) -> [[[UInt8]]] {
        units.map { $0.nalUnits.filter(\.type.isVCL).map { Array($0.wire) } }
    }

    @Test(arguments: kinds.indices)
    func slicesGroupAsTheWholeRuleGroupsThem(kind: Int) throws {
        let (name, options) = Self.kinds[kind]
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (bytes, packets) = try Self.encode(options, in: dir)
        let (units, parser) = parse(bytes, chunks: [Int.max])
        #expect(units.count == packets && packets == 40, "\(name): FFmpeg's packets")
        #expect(units.allSatisfy { $0.nalUnits.first?.type == .accessUnitDelimiter }, "\(name)")
        #expect(units.contains { $0.nalUnits.filter(\.type.isVCL).count > 1 }, "\(name): pictures of several slices")
        #expect(parser.assembler.parseErrors == 0, "\(name)")
        let nals = units.flatMap(\.nalUnits)
        // Without AUDs: where pictures begin by their slice headers alone, the rule the
        // conformance streams check against FFmpeg.
        let bare = nals.filter { $0.type != .accessUnitDelimiter }.flatMap { Array($0.wire) }
        // Every third AUD missing: the pictures after them begin at their SEI or first slice.
        var seen = 0
        let gappy = nals.filter { nal in
            guard nal.type == .accessUnitDelimiter else { return true }
            seen += 1
            return seen % 3 != 0
        }.flatMap { Array($0.wire) }
        for (variant, stream) in [("no AUDs", bare), ("every third AUD missing", gappy)] {
            for chunks in [[Int.max], [1], [7, 13, 1, 2, 3, 4093]] {
                let other = parse(stream, chunks: chunks).units
                #expect(Self.slices(other) == Self.slices(units), "\(name), \(variant), chunks \(chunks)")
                #expect(other.map(\.isIDR) == units.map(\.isIDR), "\(name), \(variant)")
            }
        }
        // In every chunking, the delimited stream itself cuts the same.
        for chunks in [[1], [7, 13, 1, 2, 3, 4093]] {
            #expect(Self.slices(parse(bytes, chunks: chunks).units) == Self.slices(units), "\(name), chunks \(chunks)")
        }
    }
}
