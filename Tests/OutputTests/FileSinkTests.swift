import Foundation
import Glibc
import H264
import Media
import Output
import Testing

/// `FileSink` of a live run into a pipe delimits the stream as a `--listen` reader's is (the
/// next access unit's AUD behind each, the stream's end after a clean close); into a regular
/// file it writes the access units as they came.
@Suite struct FileSinkTests {
    static let stream = "HCAFR1_HHI.264"

    static func items(_ units: [AccessUnit]) -> ArraySlice<SinkItem> {
        units.map { SinkItem.unit(TimedUnit(unit: $0, mediaTime: .zero, arrivalNs: 0)) }[...]
    }

    @Test func aRegularFileGetsTheBytesAsTheyCame() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/out.h264"
        let sink = try FileSink(path: path, delimitsPipes: true)
        _ = try sink.write(Self.items(try Fixtures.accessUnits(Self.stream)))
        try sink.close()
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) == (try Fixtures.bytes(Self.stream)))
    }

    @Test func aPipeGetsEachAccessUnitEndedAtOnce() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let fifo = dir + "/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        // The reading end first (non-blocking), so that opening the writing end does not wait.
        let readFD = open(fifo, O_RDONLY | O_NONBLOCK)
        #expect(readFD >= 0)
        defer { close(readFD) }
        let sink = try FileSink(path: fifo, delimitsPipes: true)
        let units = try Fixtures.accessUnits(Self.stream)
        var parser = AnnexBParser()
        var out: [AccessUnit] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        for (i, unit) in units.enumerated() {
            _ = try sink.write(Self.items([unit]))
            let n = read(readFD, &buffer, buffer.count)
            parser.push(Array(buffer[..<max(0, n)])) { out.append($0) }
            // What the pipe holds now ends this access unit: a parser has it already.
            #expect(out.count == i + 1)
        }
        try sink.close()
        let n = read(readFD, &buffer, buffer.count)
        parser.push(Array(buffer[..<max(0, n)])) { out.append($0) }
        parser.finish { out.append($0) }
        #expect(out.count == units.count, "the stream's end is no access unit")
        #expect(parser.assembler.endedStream, "a clean close ends the stream with an end of sequence")
        #expect(zip(out, units).allSatisfy { $0.isIDR == $1.isIDR })
    }
}
