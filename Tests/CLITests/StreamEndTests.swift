import Foundation
import TestSupport
import Testing

/// What `nalcast consume` keeps when its input stream ends. A peer that closes cleanly ends
/// the stream as a file ends: every access unit is written, the last one too, also when
/// nothing (no AUD, no end-of-stream NAL unit) marks where it ends. A connection reset in
/// the middle of an access unit loses exactly that access unit.
///
/// "Byte-identical" is checked against what the consumer writes: every output starts at an
/// IDR (the entry gate drops what comes before), and where that IDR's access unit does not
/// carry its SPS and PPS the consumer puts the ones it saw earlier in front
/// (`AccessUnit.nalUnitsForEntry`), which would add bytes. In every input here the first
/// IDR access unit carries both, so nothing is added: each output is the input from its
/// first IDR access unit on (the whole input, but for the one that joins mid-GOP).
@Suite(.serialized) struct StreamEndTests {
    static let inputs = ConsumeCommandTests.fixtures + ["nalcast without AUD", "nalcast without AUD and SEI", "nalcast without AUD, joined mid-GOP"]

    /// The input named: a conformance fixture, or `nalcast produce` output (30 frames of the
    /// test pattern, an IDR every 15, two slices a picture) with NAL units taken out, so
    /// that slices or SEIs alone tell where access units begin; "joined mid-GOP" starts at
    /// its fifth access unit, so the output starts at the second IDR.
    static func stream(_ name: String) throws -> [UInt8] {
        if name.hasSuffix("joined mid-GOP") {
            let whole = try stream("nalcast without AUD")
            return Array(whole[try accessUnits(whole).units[4].offset...])
        }
        guard name.hasPrefix("nalcast") else { return [UInt8](try Data(contentsOf: Run.fixtures.appendingPathComponent(name))) }
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("produced.h264").path
        let r = try Run.nalcast(["produce", "--source", "testsrc", "--frames", "30", "--size", "320x240", "--no-realtime",
                                 "--keyint", "500ms", "--threads", "2", "-o", path, "-q"], timeout: 60)
        guard r.status == 0 else { throw POSIXError(.EIO) }
        let produced = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        return removingNALUnits(ofTypes: name.hasSuffix("SEI") ? [9, 6] : [9], from: produced)
    }

    /// `bytes` less every NAL unit of the given types (start code included).
    static func removingNALUnits(ofTypes types: Set<UInt8>, from bytes: [UInt8]) -> [UInt8] {
        // Start code positions (the first zero of `00 00 01`, or of `00 00 00 01`).
        var starts: [Int] = []
        var i = 0
        while i + 3 < bytes.count {
            if bytes[i] == 0 && bytes[i + 1] == 0 && bytes[i + 2] == 1 {
                starts.append(i > 0 && bytes[i - 1] == 0 ? i - 1 : i)
                i += 3
            } else {
                i += 1
            }
        }
        var out = Array(bytes[..<(starts.first ?? bytes.count)])
        for (n, start) in starts.enumerated() {
            let end = n + 1 < starts.count ? starts[n + 1] : bytes.count
            let header = bytes[start] == 0 && bytes[start + 2] == 0 ? start + 4 : start + 3
            if !types.contains(bytes[header] & 0x1f) { out += bytes[start..<end] }
        }
        return out
    }

    /// Each access unit's offset and size in `bytes`, from `nalcast inspect --json`, and
    /// the offset of the first IDR access unit that carries its SPS and PPS.
    static func accessUnits(_ bytes: [UInt8]) throws -> (units: [(offset: Int, size: Int)], entry: Int) {
        let json = try inspect(Data(bytes))
        let units = json["units"] as? [[String: Any]] ?? []
        var out: [(offset: Int, size: Int)] = []
        var offset = 0
        var entry: Int? = nil
        for unit in units {
            let size = unit["bytes"] as? Int ?? 0
            let types = unit["nalTypes"] as? [Int] ?? []
            if entry == nil && unit["idr"] as? Bool == true && types.contains(7) && types.contains(8) { entry = offset }
            out.append((offset, size))
            offset += size
        }
        #expect(offset == bytes.count, "inspect accounts for every byte")
        return (out, entry ?? bytes.count)
    }

    /// The NAL units of an Annex-B stream, leaving out what a live forward's delimiting adds
    /// or moves (`docs/protocol.md`): access unit delimiters, the empty filler SEI, a lone SEI
    /// header at the end, ends of sequence and stream, and the closing picture in front of
    /// the end (a PPS and a non-reference slice, header byte `01`, that nalcast never sends
    /// otherwise). A forward that delimits carries the same NAL units as its input, in the
    /// same order, with each access unit begun early.
    static func carriedNALUnits(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        var starts: [Int] = []
        var i = 0
        while i + 2 < bytes.count {
            if bytes[i] == 0, bytes[i + 1] == 0, bytes[i + 2] == 1 {
                starts.append(i + 3)
                i += 3
            } else {
                i += 1
            }
        }
        var units: [ArraySlice<UInt8>] = []
        for (n, start) in starts.enumerated() {
            var end = n + 1 < starts.count ? starts[n + 1] - 3 : bytes.count
            while end > start, bytes[end - 1] == 0 { end -= 1 }
            let nal = bytes[start..<end]
            guard let header = nal.first else { continue }
            let type = header & 0x1F
            if type == 10 || type == 11, units.count >= 2, units[units.count - 1].first == 0x01, units[units.count - 2].first == 0x68 {
                units.removeLast(2)
            }
            if type == 9 || type == 10 || type == 11 { continue }
            if Array(nal) == [0x06] || Array(nal) == [0x06, 0x03, 0x00, 0x80] { continue }
            units.append(nal)
        }
        return units
    }

    /// Consumes `server`'s stream into a file, segments and a forward target at once; returns
    /// the three outputs (segments concatenated) and consume's stderr. With `resetWhen`, once
    /// the file holds that many bytes (the consumer has read that far), `reset` is called.
    static func consume(_ server: String, expectedStatus: Int32, resetWhen written: Int? = nil, reset: () -> Void = {}) throws -> (file: [UInt8], segments: [UInt8], forwarded: [UInt8], stderr: String) {
        let target = try ForwardTarget()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out.h264")
        let segs = dir.appendingPathComponent("segs")
        let consumer = try Background(Run.nalcast, ["consume", "--from", server, "--reconnect-timeout", "0", "-o", out.path,
                                                    "--segments", segs.path, "--segment-max-bytes", "1", "--segment-name", "s-%n.h264",
                                                    "--forward", "tcp://127.0.0.1:\(target.port)"])
        if let written {
            let deadline = Moment.now.addingTimeInterval(30)
            var size = 0
            while size < written && Moment.now < deadline {
                usleep(5_000)
                size = (try? FileManager.default.attributesOfItem(atPath: out.path)[.size] as? Int) ?? 0
            }
            #expect(size == written, "the consumer wrote \(size) bytes before the reset: \(consumer.stderr)")
            reset()
        }
        let status = consumer.wait(timeout: 60)
        let stderr = consumer.stderr
        #expect(status == expectedStatus, "\(stderr)")
        var segments: [UInt8] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: segs.path).sorted() {
            #expect(name.hasSuffix(".h264"), "\(name) left unfinished")
            segments += [UInt8](try Data(contentsOf: segs.appendingPathComponent(name)))
        }
        let forwarded = target.received()
        return ([UInt8](try Data(contentsOf: out)), segments, forwarded, stderr)
    }

    /// Served in odd chunk sizes and closed cleanly: the file and the segments get the input
    /// byte for byte, its last access unit included; the forward target (delimited, as a live
    /// forward is) the same NAL units.
    @Test(arguments: inputs)
    func cleanCloseKeepsEveryAccessUnitToTheLast(input: String) throws {
        let bytes = try Self.stream(input)
        let (units, entry) = try Self.accessUnits(bytes)
        #expect((entry == 0) == !input.hasSuffix("mid-GOP"), "\(input): first IDR with its parameter sets at \(entry)")
        let expected = Array(bytes[entry...])
        // The ending must not mark itself: no end-of-stream NAL unit to close the last one.
        let endsMarked = endsWithEndOfStream(bytes)
        let server = try TestStreamServer(data: bytes)
        let got = try Self.consume(server.endpoint, expectedStatus: exitAfterCleanClose(of: bytes))
        #expect(got.file == expected, "\(input): -o has \(got.file.count) of \(expected.count) bytes (\(units.count) access units, end marked: \(endsMarked))")
        #expect(got.segments == expected, "\(input): segments have \(got.segments.count) of \(expected.count) bytes")
        // The forward is live (consume reads a socket): delimited, the same NAL units.
        #expect(Self.carriedNALUnits(got.forwarded) == Self.carriedNALUnits(expected), "\(input): forwarded \(got.forwarded.count) of \(expected.count) bytes")
        #expect(got.stderr.contains("closed by peer"), "\(got.stderr)")
        #expect(!got.stderr.contains("unfinished"), "\(got.stderr)")
    }

    /// Reset (SO_LINGER 0) halfway through an access unit, well past its first NAL unit's
    /// headers: every access unit before it is written, that one is not, and the consumer
    /// says how many bytes of it it dropped.
    @Test(arguments: ["FREXT01_JVC_D.264", "HCAFF1_HHI.264", "FRExt3_Panasonic.avc", "nalcast without AUD", "nalcast without AUD and SEI"])
    func resetMidAccessUnitLosesExactlyThatOne(input: String) throws {
        let bytes = try Self.stream(input)
        let (units, entry) = try Self.accessUnits(bytes)
        let victim = units[units.count - 3]
        let cut = victim.offset + victim.size / 2
        let server = try ResettingServer(data: Array(bytes[..<cut]))
        let expected = Array(bytes[entry..<victim.offset])
        // Reset once the consumer has written everything before the victim: it has read
        // that far, so the reset cannot overtake the connection's start.
        // A reset is a lost upstream: exit 69 once --reconnect-timeout (0) has passed.
        let got = try Self.consume(server.endpoint, expectedStatus: 69, resetWhen: expected.count) { server.reset() }
        #expect(got.file == expected, "\(input): -o has \(got.file.count) bytes, expected \(expected.count)")
        #expect(got.segments == expected, "\(input): segments have \(got.segments.count) bytes, expected \(expected.count)")
        #expect(Self.carriedNALUnits(got.forwarded) == Self.carriedNALUnits(expected), "\(input): forwarded \(got.forwarded.count) bytes, expected \(expected.count)")
        #expect(got.stderr.contains("an unfinished access unit dropped (\(cut - victim.offset) bytes)"), "\(got.stderr)")
        #expect(server.sentAll, "the server sent every byte before the reset")
    }
}
