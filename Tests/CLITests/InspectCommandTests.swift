import TestSupport
import Foundation
import Testing

/// `nalcast inspect` against the conformance streams, checked against FFmpeg's own counts.
@Suite struct InspectCommandTests {
    struct Expected: Sendable, CustomStringConvertible {
        let file: String
        let accessUnits: Int
        let idr: Int
        let types: [String: Int]
        var description: String { file }
    }

    // The table of Tests/Fixtures/h264/README.md (measured with FFmpeg).
    static let table: [Expected] = ConformanceStream.all.map { stream in
        Expected(file: stream.file, accessUnits: stream.accessUnits, idr: stream.idrAccessUnits,
                 types: Dictionary(uniqueKeysWithValues: stream.nalUnitsByType.map { (String($0.key), $0.value) }))
    }

    @Test(arguments: table)
    func jsonSummaryMatchesTheTable(expected: Expected) throws {
        let path = Run.fixtures.appendingPathComponent(expected.file).path
        let r = try Run.nalcast(["inspect", "--json", path])
        #expect(r.status == 0, "\(r.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any])
        #expect(json["accessUnits"] as? Int == expected.accessUnits)
        #expect(json["idrAccessUnits"] as? Int == expected.idr)
        #expect(json["nalUnitsByType"] as? [String: Int] == expected.types)
        #expect(json["width"] as? Int == 352)
        #expect(json["height"] as? Int == 288)
        #expect(json["skippedBytes"] as? Int == 0)
        #expect(json.keys.contains("frameRate"))
        #expect((json["units"] as? [Any])?.count == expected.accessUnits)
    }

    @Test func stdinAndTextOutput() throws {
        let data = try Data(contentsOf: Run.fixtures.appendingPathComponent("FRExt1_Panasonic.avc"))
        let r = try Run.nalcast(["inspect", "-"], stdin: data)
        #expect(r.status == 0)
        let lines = r.text.split(separator: "\n")
        #expect(lines.filter { $0.contains(" IDR ") }.count == 2)
        #expect(r.text.contains("access units: 8 (2 IDR)"))
    }

    @Test func accessUnitCountAgreesWithFFprobe() throws {
        // The same question asked of FFmpeg directly, not only of its README figures.
        let path = Run.fixtures.appendingPathComponent("HCAFF1_HHI.264").path
        let probe = try Run.program("ffprobe", ["-v", "error", "-f", "h264", "-show_packets", "-show_entries", "packet=flags", "-of", "csv=p=0", path])
        let ours = try Run.nalcast(["inspect", "--json", "--summary", path])
        let json = try #require(try JSONSerialization.jsonObject(with: ours.stdout) as? [String: Any])
        #expect(json["accessUnits"] as? Int == probe.text.split(separator: "\n").count)
    }

    @Test func garbageIsSkippedAndCounted() throws {
        var data = Data(repeating: 0xaa, count: 1000)
        data.append(try Data(contentsOf: Run.fixtures.appendingPathComponent("HCAFR1_HHI.264")))
        let r = try Run.nalcast(["inspect", "--json", "--summary", "-"], stdin: data)
        let json = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any])
        #expect(json["skippedBytes"] as? Int == 1000)
        #expect(json["accessUnits"] as? Int == 10)
    }

    @Test func usageErrorsExit64WithOneLine() throws {
        for args in [["inspect", "--bogus", "x"], ["inspect"], ["inspect", "--max-nal-size", "lots", "-"], ["nonsense"]] {
            let r = try Run.nalcast(args)
            #expect(r.status == 64, "\(args)")
            #expect(r.stderr.split(separator: "\n").count == 1, "\(args): \(r.stderr)")
        }
        let missing = try Run.nalcast(["inspect", "/nonexistent/file.h264"])
        #expect(missing.status == 66)
    }

    @Test func helpAndVersion() throws {
        let help = try Run.nalcast(["--help"])
        #expect(help.status == 0)
        #expect(help.text.contains("inspect"))
        let version = try Run.nalcast(["--version"])
        #expect(version.text.hasPrefix("nalcast "))
        let inspectHelp = try Run.nalcast(["inspect", "--help"])
        #expect(inspectHelp.text.contains("--json"))
        #expect(inspectHelp.text.contains("NALCAST_"))
    }
}
