import Foundation
import Testing
import TestSupport

/// The damaged container files the fuzzing found (`fuzz/regressions/demux`: the `demux`
/// libFuzzer target's and `fuzz/consume-mutations`' findings), through the whole `consume`
/// into an MP4: each is read (exit 0, what could not be read counted) or refused with one
/// line (65, bad input data, also when libavformat stops reading a damaged file part way),
/// never a crash, a hang or an I/O error.
@Suite struct DamagedContainerTests {
    @Test func damagedContainerFilesAreReadOrRefusedInOneLine() throws {
        let dir = Run.root.appendingPathComponent("fuzz/regressions/demux")
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        #expect(!names.isEmpty)
        let scratch = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        for name in names {
            let out = scratch.appendingPathComponent("\(name).mp4")
            let r = try Run.nalcast(["consume", "--from", dir.appendingPathComponent(name).path, "-o", out.path, "-q"], timeout: 30)
            #expect(r.status == 0 || r.status == 65, "\(name): exit \(r.status)\n\(r.stderr)")
            // The one line of bad input comes last (counts, such as malformed packets, may be said before it).
            if r.status == 65 { #expect(r.stderr.split(separator: "\n").last?.hasPrefix("nalcast: consume: ") == true, "\(name)\n\(r.stderr)") }
        }
    }
}
