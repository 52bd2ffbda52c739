import Foundation

/// The conformance streams in `Tests/Fixtures/h264/` and what FFmpeg measured of them: the
/// table of that folder's README, in one place for every test target.
public struct ConformanceStream: Sendable, CustomStringConvertible {
    public let file: String
    public let bytes: Int
    public let accessUnits: Int
    public let idrAccessUnits: Int
    /// NAL units by type (1 non-IDR slice, 5 IDR, 7 SPS, 8 PPS, 10 end of sequence, 11 end of stream).
    public let nalUnitsByType: [UInt8: Int]
    public let width = 352
    public let height = 288

    public var description: String { file }

    public static let all: [ConformanceStream] = [
        .init(file: "FRExt1_Panasonic.avc", bytes: 36711, accessUnits: 8, idrAccessUnits: 2, nalUnitsByType: [1: 6, 5: 2, 7: 2, 8: 8, 10: 2, 11: 1]),
        .init(file: "FRExt3_Panasonic.avc", bytes: 25014, accessUnits: 11, idrAccessUnits: 1, nalUnitsByType: [1: 10, 5: 1, 7: 1, 8: 11, 10: 1, 11: 1]),
        .init(file: "HCAFR1_HHI.264", bytes: 19672, accessUnits: 10, idrAccessUnits: 1, nalUnitsByType: [1: 9, 5: 1, 7: 1, 8: 1]),
        .init(file: "HCAFF1_HHI.264", bytes: 19850, accessUnits: 14, idrAccessUnits: 1, nalUnitsByType: [1: 13, 5: 1, 7: 1, 8: 1]),
        .init(file: "HCAMFF1_HHI.264", bytes: 19978, accessUnits: 10, idrAccessUnits: 1, nalUnitsByType: [1: 9, 5: 1, 7: 1, 8: 1]),
        .init(file: "FREXT01_JVC_D.264", bytes: 53343, accessUnits: 16, idrAccessUnits: 1, nalUnitsByType: [1: 15, 5: 1, 7: 1, 8: 1]),
    ]

    /// One of `all`, by file name.
    public static func named(_ file: String) -> ConformanceStream {
        guard let stream = all.first(where: { $0.file == file }) else { preconditionFailure("no conformance stream \(file)") }
        return stream
    }

    /// `Tests/Fixtures/h264/`.
    public static let directory: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/h264")

    public var url: URL { Self.directory.appendingPathComponent(file) }
    public var path: String { url.path }
    public func load() throws -> [UInt8] { [UInt8](try Data(contentsOf: url)) }
}
