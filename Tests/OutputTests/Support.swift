import Foundation
import H264
import Media
import TestSupport

enum Fixtures {
    static let directory = ConformanceStream.directory

    static func bytes(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: directory.appendingPathComponent(name)))
    }

    static func accessUnits(_ name: String) throws -> [AccessUnit] {
        var parser = AnnexBParser()
        var units = parser.push(try bytes(name))
        units += parser.finish()
        return units
    }
}

func temporaryDirectory() throws -> String {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("nalcast-consumer-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url.path
}

func files(in directory: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
}
