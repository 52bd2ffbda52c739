import Foundation
import TestSupport
import Testing

/// The ffplay lines the docs give for watching a stream show the join IDR at once.
///
/// ffplay needs a display, so each recipe's reader options go to ffmpeg instead (same
/// demuxer, same decoder, same options), decoding `nalcast produce` to framemd5. The check
/// is not a timing: ffmpeg's raw H.264 reader numbers packets from the first one it read,
/// so the first decoded picture having pts 0 means the first access unit received (the
/// IDR nalcast starts every reader with) was decoded. Options that throw away the packets
/// read while probing (`-fflags nobuffer`) lose that IDR and the first picture comes at the
/// next natural one, keyint later (pts 60 at 30 fps).
///
/// A line with no `-f` is the MPEG-TS listener's (`--listen ts:…`), which players open with
/// no options: it is read from such a listener, and must decode without a complaint (a
/// reader that did not start at an IDR with its parameter sets gets the decoder's errors;
/// TSListenerTests checks the keyframe itself).
@Suite(.serialized) struct ViewerRecipeTests {
    static let files = ["README.md", "docs/usage.md", "deploy/compose.yaml", "deploy/compose.x11.yaml",
                        "deploy/systemd/nalcast-screen.service", "deploy/systemd/nalcast-record.service", "Dockerfile"]

    /// Every ffplay command line in `file` (continuation lines joined, comment marks removed),
    /// as its words after `ffplay`.
    static func ffplayLines(_ file: String) throws -> [[String]] {
        var joined: [String] = []
        var pending = ""
        for raw in try Deploy.text(file).components(separatedBy: "\n") {
            var line = raw.trimmingCharacters(in: .whitespaces)
            while line.hasPrefix("#") { line = String(line.dropFirst()).trimmingCharacters(in: .whitespaces) }
            if line.hasSuffix("\\") {
                pending += String(line.dropLast()) + " "
                continue
            }
            joined.append(pending + line)
            pending = ""
        }
        return joined.compactMap { line in
            guard let range = line.range(of: "ffplay ") else { return nil }
            // Prose mentions (`-fflags nobuffer` in backquotes) are not command lines.
            guard range.lowerBound == line.startIndex else { return nil }
            return line[range.upperBound...].split(separator: " ").map(String.init)
        }
    }

    /// The options of an ffplay line that ffmpeg understands as input options: everything
    /// before the URL, without ffplay's own display options.
    static func readerOptions(_ words: [String]) -> [String] {
        let displayOnly: Set<String> = ["-framedrop", "-noframedrop", "-fs", "-nodisp", "-an", "-sync"]
        var out: [String] = []
        for word in words where !word.hasPrefix("tcp://") && !word.hasPrefix("unix:") && !displayOnly.contains(word) {
            out.append(word)
        }
        return out
    }

    /// ffmpeg with the reader options against a live producer: the pts of each decoded picture.
    static func decodedPTS(options: [String], frames: Int, transportStream: Bool = false) throws -> (pts: [Int], stderr: String) {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let sock = dir.appendingPathComponent("live.sock").path
        // Stopped once ffmpeg has its pictures (the --duration is a bound, not a race with a
        // slow start of ffmpeg).
        let producer = try Background(Run.nalcast, ["produce", "--size", "320x240", "--duration", "120s", "--keyint", "2s", "--listen", (transportStream ? "ts:" : "") + "unix:\(sock)"],
                                      environment: Deploy.environment())
        defer { producer.signal(SIGTERM); producer.wait() }
        #expect(producer.waitFor("serving "), "\(producer.stderr)")
        let r = try Run.program("ffmpeg", ["-nostdin", "-v", "error"] + options + ["-i", "unix:\(sock)", "-frames:v", String(frames), "-f", "framemd5", "-"], timeout: 30)
        #expect(r.status == 0, "ffmpeg \(options.joined(separator: " ")): \(r.stderr)")
        let pts = r.text.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap { line in
            Int(line.split(separator: ",").dropFirst().first?.trimmingCharacters(in: .whitespaces) ?? "")
        }
        return (pts, r.stderr)
    }

    @Test func everyDocumentedFFplayLineShowsTheJoinIDRFirst() throws {
        var recipes: [(String, [String])] = []
        for file in Self.files {
            // A listener's readers only: an HLS playlist over HTTP (`/hls/index.m3u8`) is read by
            // HLSTests, with FFmpeg's and GStreamer's HLS demuxers.
            for words in try Self.ffplayLines(file) where !words.contains(where: { $0.hasPrefix("http://") || $0.hasPrefix("https://") }) {
                recipes.append((file, Self.readerOptions(words)))
            }
        }
        #expect(recipes.count >= 5, "ffplay recipes found: \(recipes.map(\.0))")
        // Recipes that are the same options need one run.
        var seen: Set<[String]> = []
        for (file, options) in recipes where seen.insert(options).inserted {
            if !options.contains("-f") {
                let (pts, stderr) = try Self.decodedPTS(options: options, frames: 10, transportStream: true)
                #expect(pts.count == 10 && stderr.isEmpty, "\(file): ffplay \(options.joined(separator: " ")) of a TS listener: \(pts.count) of 10 pictures\n\(stderr)")
                continue
            }
            #expect(options.contains("-f") && options.contains("h264"), "\(file): ffplay without -f h264: \(options)")
            let frames = 10
            let (pts, stderr) = try Self.decodedPTS(options: options, frames: frames)
            #expect(pts.count == frames, "\(file): ffplay \(options.joined(separator: " ")): \(pts.count) of \(frames) pictures decoded\n\(stderr)")
            // Not a timing: the first picture is the first access unit received, the join IDR.
            #expect(pts.first == 0, "\(file): ffplay \(options.joined(separator: " ")): the first picture is packet \(pts.first ?? -1), not the join IDR (0)")
        }
    }
}
