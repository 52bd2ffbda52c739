import Foundation
import Testing
import TestSupport

/// What `--audio` costs in memory. Opening libavcodec maps Debian's ~40 codec libraries and
/// touches some 14 MiB of their file pages (symbol tables, relocations, constructors) that
/// sound never uses again; once the encoder is open the producer gives them back
/// (`LoadingPages`, docs/architecture.md "Memory"). Without that the producer with sound held
/// about 14 MiB more file pages than without; now about 2 (the code the encoding uses).
@Suite struct SoundMemoryTests {
    /// The producer's resident file pages (RssFile, KiB) once it says it is capturing.
    static func residentFilePages(_ extra: [String]) throws -> Int {
        let producer = try Background(Run.nalcast, ["produce", "--source", "testsrc", "--size", "320x240", "--preset", "ultrafast",
                                                    "--duration", "10s", "-o", "/dev/null"] + extra)
        defer { producer.signal(SIGTERM); producer.wait() }
        #expect(producer.waitFor("capturing"), "\(producer.stderr)")
        let status = try String(contentsOfFile: "/proc/\(producer.process.processIdentifier)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("RssFile:") })
        return try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
    }

    @Test func theLibrariesLoadingPagesAreGivenBack() throws {
        let without = try Self.residentFilePages([])
        let with = try Self.residentFilePages(["--audio", "tone"])
        #expect(with - without < 6 * 1024, "RssFile without sound \(without) KiB, with --audio tone \(with) KiB")
    }
}
