import Foundation
import Testing

/// A stream whose picture size changes mid-way (a screen resized, an encoder reopened):
/// the consumer starts a new segment at the change, and each segment decodes alone.
@Suite struct ConsumeResolutionTests {
    @Test func resolutionChangeStartsANewSegment() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // Two pieces of our own stream, one 320x240, one 160x120, one after the other: what a
        // reader gets when the producer's source changes size (new SPS/PPS and an IDR).
        var stream = Data()
        for size in ["320x240", "160x120"] {
            let r = try Run.nalcast(["produce", "--frames", "30", "--no-realtime", "--size", size, "-o", "-", "-q"])
            #expect(r.status == 0)
            stream.append(r.stdout)
        }
        let input = dir.appendingPathComponent("in.h264")
        try stream.write(to: input)
        let segments = dir.appendingPathComponent("segments")
        // Long segments: only the change can cut one.
        let r = try Run.nalcast(["consume", "--from", input.path, "--segments", segments.path, "--segment-duration", "60s",
                                 "--segment-name", "s-%n.h264", "-q"])
        #expect(r.status == 0, "\(r.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: segments.path).filter { $0.hasSuffix(".h264") }.sorted()
        #expect(files.count == 2, "\(files)")
        for (file, size) in zip(files, [(320, 240), (160, 120)]) {
            let data = try Data(contentsOf: segments.appendingPathComponent(file))
            let decoded = try ffmpegDecode(data)
            #expect(decoded.errors.isEmpty, "\(file): \(decoded.errors)")
            #expect(decoded.frames == 30, "\(file)")
            let json = try inspect(data)
            #expect(json["width"] as? Int == size.0 && json["height"] as? Int == size.1, "\(file)")
            #expect((json["resolutions"] as? [String])?.count == 1, "\(file) holds one size")
        }
    }
}
