import Foundation
import TestSupport
import Testing

/// docs/ stays true: every ```sh block preceded by `<!-- runnable -->` runs (bash -euo
/// pipefail, an empty temporary directory, the built nalcast first on the PATH) and exits 0;
/// protocol.md's example SEI is what nalcast writes; operations.md's metric tables name
/// exactly the metrics a running producer and consumer serve.
@Suite(.serialized) struct DocsTests {
    static let marker = "<!-- runnable -->"

    /// The runnable blocks of a document, with the line each starts on.
    static func runnableBlocks(_ file: String) throws -> [(line: Int, script: String)] {
        let lines = try Deploy.text(file).components(separatedBy: "\n")
        var out: [(Int, String)] = []
        var i = 0
        while i < lines.count {
            if lines[i].trimmingCharacters(in: .whitespaces) == marker {
                #expect(i + 1 < lines.count && lines[i + 1] == "```sh", "\(file):\(i + 1): the runnable marker must precede a ```sh block")
                var body: [String] = []
                var j = i + 2
                while j < lines.count && lines[j] != "```" { body.append(lines[j]); j += 1 }
                out.append((i + 3, body.joined(separator: "\n")))
                i = j
            }
            i += 1
        }
        return out
    }

    static func run(_ file: String, expectAtLeast count: Int) throws {
        let blocks = try runnableBlocks(file)
        #expect(blocks.count >= count, "\(file): \(blocks.count) runnable blocks")
        let binDir = URL(fileURLWithPath: Run.nalcast).deletingLastPathComponent().path
        for block in blocks {
            let dir = try temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: dir) }
            var env = Deploy.environment()
            env["PATH"] = binDir + ":" + (env["PATH"] ?? "/usr/bin:/bin")
            // `cd` into the directory, then the block; setsid-free: the block's own `wait`s end its jobs.
            let script = "cd '\(dir.path)'\n" + block.script
            let r = try Run.program("bash", ["-euo", "pipefail", "-c", script], environment: env, timeout: 30)
            #expect(r.status == 0, "\(file):\(block.line) exited \(r.status)\n\(block.script)\nstdout: \(r.text)\nstderr: \(r.stderr)")
        }
    }

    @Test func usageRecipesRun() throws { try Self.run("docs/usage.md", expectAtLeast: 10) }
    @Test func operationsCommandsRun() throws { try Self.run("docs/operations.md", expectAtLeast: 3) }

    @Test func theMarkerIsNotMisused() throws {
        for file in ["docs/usage.md", "docs/operations.md", "docs/protocol.md", "docs/architecture.md"] {
            let text = try Deploy.text(file)
            #expect(!text.contains("<!-- runnable-->") && !text.contains("<!--runnable"), "\(file): a misspelt marker")
            // x11 needs a display: no runnable block may use it.
            for block in try Self.runnableBlocks(file) {
                #expect(!block.script.contains("x11"), "\(file):\(block.line): x11 in a runnable block")
            }
        }
    }

    /// Removes emulation prevention bytes (00 00 03 → 00 00).
    static func unescape(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var zeros = 0
        for b in bytes {
            if zeros >= 2 && b == 3 { zeros = 0; continue }
            out.append(b)
            zeros = b == 0 ? zeros + 1 : 0
        }
        return out
    }

    @Test func protocolExampleSEIIsWhatNalcastWrites() throws {
        let doc = try Deploy.text("docs/protocol.md")
        let start = try #require(doc.range(of: "<!-- sei-example -->\n```\n"))
        let end = try #require(doc.range(of: "```", range: start.upperBound..<doc.endIndex))
        // Each line: hex bytes (brackets mark emulation prevention), then the description.
        var example: [UInt8] = []
        for line in doc[start.upperBound..<end.lowerBound].split(separator: "\n") {
            for word in line.split(separator: " ") {
                let hex = word.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
                guard hex.count == 2, let byte = UInt8(hex, radix: 16) else { break }
                example.append(byte)
            }
        }
        #expect(example.count == 4 + 1 + 2 + 42 + 6 + 1, "example has \(example.count) bytes")
        // The capture time the text states is the one in the bytes.
        let stated = try #require(doc.firstMatch(of: /capture_time_ns (\d+)/).map { UInt64($0.1)! })
        let raw = Self.unescape(Array(example.dropFirst(5)))  // SEI payload type, size, payload, trailing bits
        let timeBytes = raw[2 + 26..<2 + 34]
        #expect(timeBytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) } == stated)

        // The real thing: the first SEI of a fresh stream carrying our UUID.
        let r = try Run.nalcast(["produce", "--size", "64x64", "--frames", "1", "--no-realtime", "-o", "-"], environment: Deploy.environment())
        #expect(r.status == 0, "\(r.stderr)")
        let stream = [UInt8](r.stdout)
        let uuid: [UInt8] = [0x0d, 0x64, 0xdd, 0x68, 0x59, 0x73, 0x44, 0xac, 0x92, 0x82, 0x6e, 0x38, 0x0b, 0x34, 0xdc, 0xd1]
        var found: [UInt8]?
        var i = 0
        while i + 4 < stream.count {
            if stream[i] == 0, stream[i + 1] == 0, stream[i + 2] == 1, stream[i + 3] & 0x1f == 6,
               Array(stream[(i + 6)..<min(stream.count, i + 22)]) == uuid {
                var j = i + 4
                while j + 3 <= stream.count && !(stream[j] == 0 && stream[j + 1] == 0 && (stream[j + 2] == 1 || stream[j + 2] == 0)) { j += 1 }
                found = [0, 0, 0, 1] + Array(stream[(i + 3)..<min(j, stream.count)])
                break
            }
            i += 1
        }
        let real = try #require(found, "no timestamp SEI in nalcast's output")
        var a = Self.unescape(Array(real.dropFirst(4)))
        var b = Self.unescape(Array(example.dropFirst(4)))
        #expect(a.count == b.count, "real SEI \(a.count) bytes after unescaping, example \(b.count)")
        guard a.count == b.count else { return }
        // Only the capture time (NAL header, type, size, then offset 26 of the payload) may differ.
        for k in (3 + 26)..<(3 + 34) { a[k] = 0; b[k] = 0 }
        #expect(a == b, "real \(a.map { String(format: "%02x", $0) }.joined(separator: " "))")
        // Escaped, both have the same shape too (the zero fields need the same 03s).
        #expect(Array(real.prefix(29)) == Array(example.prefix(29)))
    }

    /// Metric names in a table after `<!-- metrics: COMMAND -->`.
    static func documentedMetrics(_ command: String) throws -> Set<String> {
        let doc = try Deploy.text("docs/operations.md")
        let start = try #require(doc.range(of: "<!-- metrics: \(command) -->\n"))
        var names: Set<String> = []
        for line in doc[start.upperBound...].split(separator: "\n", omittingEmptySubsequences: false) {
            guard line.hasPrefix("|") else { break }
            if let m = line.firstMatch(of: /^\| `(nalcast_[a-z_]+)/) { names.insert(String(m.1)) }
        }
        return names
    }

    static func servedMetrics(_ port: Int) -> Set<String> {
        guard let r = try? Run.program("bash", ["-c", "exec 3<>/dev/tcp/127.0.0.1/\(port); printf 'GET /metrics HTTP/1.0\\r\\n\\r\\n' >&3; cat <&3"], timeout: 5) else { return [] }
        return Set(r.text.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("# TYPE ") else { return nil }
            return line.split(separator: " ").dropFirst(2).first.map(String.init)
        })
    }

    @Test func operationsMetricTablesMatchRunningProcesses() throws {
        // Two free ports (FreePort: checked by binding them, outside the ephemeral range).
        let port = try freePort(), consumePort = try freePort()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let sock = dir.appendingPathComponent("s.sock").path
        let p = try Background(Run.nalcast, ["produce", "--size", "160x120", "--listen", "unix:\(sock)", "-o", dir.appendingPathComponent("o.h264").path,
                                             "--metrics", "tcp://127.0.0.1:\(port)"], environment: Deploy.environment())
        let c = try Background(Run.nalcast, ["consume", "--from", "unix:\(sock)", "--segments", dir.path, "--forward", "unix:\(dir.path)/nobody.sock",
                                             "--metrics", "tcp://127.0.0.1:\(consumePort)"], environment: Deploy.environment())
        var produced: Set<String> = [], consumed: Set<String> = []
        Wait.until(every: 0.1) {
            if produced.isEmpty { produced = Self.servedMetrics(port) }
            if consumed.isEmpty { consumed = Self.servedMetrics(consumePort) }
            return !produced.isEmpty && !consumed.isEmpty
        }
        c.signal(SIGTERM)
        p.signal(SIGTERM)
        c.wait()
        p.wait()
        #expect(!produced.isEmpty, "no metrics from produce: \(p.stderr)")
        #expect(!consumed.isEmpty, "no metrics from consume: \(c.stderr)")
        #expect(try Self.documentedMetrics("produce") == produced, "served by produce: \(produced.sorted())")
        #expect(try Self.documentedMetrics("consume") == consumed, "served by consume: \(consumed.sorted())")
    }

    /// A WHIP ingest serves `consume`'s metrics and the WHIP ones.
    @Test func operationsMetricTableOfTheWHIPIngest() throws {
        // Ports the process binds itself (0), read back: none taken between a check and the bind.
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let c = try Background(Run.nalcast, ["consume", "--from", "whip-listen://127.0.0.1:0/whip", "-o", dir.appendingPathComponent("o.ts").path,
                                             "--metrics", "tcp://127.0.0.1:0"], environment: Deploy.environment())
        #expect(c.waitFor("publishers POST their SDP offer to"), "\(c.stderr)")
        let port = try #require(ContractProcess.metricsPort(c), "\(c.stderr)")
        var served: Set<String> = []
        Wait.until(every: 0.1) {
            served = Self.servedMetrics(port)
            return !served.isEmpty
        }
        c.signal(SIGTERM)
        c.wait()
        #expect(try Self.documentedMetrics("consume").union(Self.documentedMetrics("consume --from whip-listen")) == served, "served: \(served.sorted())")
    }
}
