import Foundation
import Testing

/// What `--hls` does when the stream changes under it: a new upstream after a reconnect
/// (its timestamps start over) begins a segment after `EXT-X-DISCONTINUITY`; new parameter
/// sets (a new size) a segment with a header of their own (`EXT-X-MAP:URI="init1.mp4"`).
/// FFmpeg's HLS demuxer reads both through, every picture, at each size. About a second each.
@Suite struct HLSChangesTests {
    /// The finished playlist of `dir`, checked by the rules; the pictures FFmpeg decodes from
    /// it (`width` of each, in order) and what it complained about.
    static func read(_ dir: String) throws -> (playlist: String, widths: [Int], errors: String) {
        let playlist = try String(contentsOfFile: dir + "/index.m3u8", encoding: .utf8)
        var rules = HLSPlaylistRules()
        let violations = rules.violations(playlist)
        #expect(violations.isEmpty, "\(violations)\n\(playlist)")
        #expect(playlist.hasSuffix("#EXT-X-ENDLIST\n"), "\(playlist)")
        let r = try Run.program("ffprobe", ["-v", "error", "-show_entries", "frame=width", "-select_streams", "v", "-of", "csv=p=0",
                                            dir + "/index.m3u8"], timeout: 60)
        let widths = String(decoding: r.stdout, as: UTF8.self).split(separator: "\n").compactMap { Int($0.prefix { $0 != "," }) }
        return (playlist, widths, r.stderr)
    }

    @Test func aNewUpstreamBeginsASegmentAfterADiscontinuity() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let hls = dir.appendingPathComponent("hls").path
        // Two connections, each a stream of its own from a producer (60 pictures, an IDR each
        // 15, 2 s of media time): the second counts its time from 0 again.
        var streams: [[UInt8]] = []
        for name in ["a.h264", "b.h264"] {
            let path = dir.appendingPathComponent(name).path
            let made = try Run.nalcast(["produce", "--frames", "60", "--keyint", "15", "--size", "320x240", "--no-realtime", "-o", path])
            #expect(made.status == 0, "\(made.stderr)")
            streams.append([UInt8](try Data(contentsOf: URL(fileURLWithPath: path))))
        }
        let server = try SequenceServer(payloads: streams)
        let r = try Run.nalcast(["consume", "--from", server.endpoint, "--reconnect-timeout", "1s", "--hls", hls, "--hls-segment", "1s"], timeout: 60)
        #expect(server.accepted == 2, "\(r.stderr)")
        // The second stream ends with the producer's end of sequence: the run's end.
        #expect(r.status == 0, "exit \(r.status): \(r.stderr)")
        let (playlist, widths, errors) = try Self.read(hls)
        let parsed = HLSPlaylistRules.parse(playlist)
        // Segments 0 and 1 from the first connection, 2 and 3 from the second.
        #expect(parsed.segments.map(\.sequence) == [0, 1, 2, 3], "\(playlist)")
        #expect(parsed.discontinuities == [2], "\(playlist)")
        #expect(!playlist.contains("init1.mp4"), "the same parameter sets need no new header:\n\(playlist)")
        #expect(widths.count == 120 && widths.allSatisfy { $0 == 320 }, "\(widths.count) pictures: \(widths)")
        #expect(errors.isEmpty, "\(errors)")
    }

    @Test func newParameterSetsBeginASegmentWithAHeaderOfTheirOwn() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let hls = dir.appendingPathComponent("hls").path
        let input = dir.appendingPathComponent("in.h264")
        try Data(try Streams.ffmpeg(frames: 45, keyint: 15) + Streams.ffmpeg(frames: 45, keyint: 15, size: "160x120")).write(to: input)
        let r = try Run.nalcast(["consume", "--from", input.path, "--hls", hls, "--hls-segment", "1s"], timeout: 60)
        #expect(r.status == 0, "exit \(r.status): \(r.stderr)")
        let (playlist, widths, errors) = try Self.read(hls)
        let parsed = HLSPlaylistRules.parse(playlist)
        let maps = playlist.split(separator: "\n").filter { $0.hasPrefix("#EXT-X-MAP:") }
        #expect(maps == ["#EXT-X-MAP:URI=\"init.mp4\"", "#EXT-X-MAP:URI=\"init1.mp4\""], "\(playlist)")
        #expect(FileManager.default.fileExists(atPath: hls + "/init1.mp4"))
        // The new header's segment begins the new size, after a discontinuity (its times start over).
        let second = try #require(parsed.discontinuities.first, "\(playlist)")
        #expect(parsed.discontinuities.count == 1)
        let before = playlist.components(separatedBy: "#EXT-X-MAP:URI=\"init1.mp4\"")[0]
        #expect(HLSPlaylistRules.parse(before).segments.count == second, "\(playlist)")
        #expect(widths == Array(repeating: 320, count: 45) + Array(repeating: 160, count: 45), "\(widths)")
        #expect(errors.isEmpty, "\(errors)")
    }
}
