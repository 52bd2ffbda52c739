import Foundation
import Testing

/// deploy/compose.mediaserver.yaml, nalcast pushing into MediaMTX, stays true to the CLI and
/// to itself: its nalcast command lines pass `--dry-run` (alone and with compose.x11.yaml over
/// it), the push goes to the MediaMTX service on a port that service listens on, and every
/// published port is bound to this machine unless the operator widens it. (yamllint checks
/// the file with the rest of deploy/, in DeployFilesTests; there is no Docker engine here.)
@Suite(.serialized) struct MediaServerDeployTests {
    static let file = "deploy/compose.mediaserver.yaml"

    /// The compose file and the X11 override as JSON, through PyYAML (as DeployFilesTests).
    static func load() throws -> (services: [String: [String: Any]], x11: [String: [String: Any]]) {
        let script = "import json, sys, yaml\njson.dump([yaml.safe_load(open(p)) for p in sys.argv[1:]], sys.stdout)"
        let r = try Run.program("/usr/bin/python3", ["-c", script, Run.root.appendingPathComponent(file).path,
                                                      Run.root.appendingPathComponent("deploy/compose.x11.yaml").path])
        try #require(r.status == 0, "reading \(file) (needs Debian python3-yaml; run scripts/setup): \(r.stderr)")
        let docs = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [[String: Any]])
        let services = try #require(docs[0]["services"] as? [String: [String: Any]], "\(file) has no services")
        return (services, docs[1]["services"] as? [String: [String: Any]] ?? [:])
    }

    /// Compose's `${VAR:-default}` as the default: what the file means when nothing is set.
    static func interpolated(_ text: String) -> String {
        var out = text
        while let start = out.range(of: "${"), let end = out[start.upperBound...].firstIndex(of: "}") {
            let inner = out[start.upperBound..<end]
            let value = inner.range(of: ":-").map { String(inner[$0.upperBound...]) } ?? ""
            out.replaceSubrange(start.lowerBound...end, with: value)
        }
        return out
    }

    /// `ADDRESS:HOST:CONTAINER[/udp]` → (address, container port, protocol); nil for a port
    /// without an address (published on every interface).
    static func published(_ entry: Any) -> (address: String, port: Int, proto: String)? {
        let text = interpolated(String(describing: entry))
        let parts = text.split(separator: ":").map(String.init)
        guard parts.count == 3 else { return nil }
        let last = parts[2].split(separator: "/").map(String.init)
        guard let port = Int(last[0]) else { return nil }
        return (parts[0], port, last.count > 1 ? last[1] : "tcp")
    }

    /// A service's `command` as nalcast's arguments, with the file's environment.
    static func commandLine(_ name: String, _ service: [String: Any], override: [String: Any]? = nil) throws -> Deploy.CommandLine {
        let words = try #require((override?["command"] ?? service["command"]) as? [Any], "\(name) has no command")
        let args = words.map { String(describing: $0) }
        var env: [String: String] = [:]
        for source in [service["environment"], override?["environment"]] {
            for (k, v) in source as? [String: Any] ?? [:] { env[k] = interpolated(String(describing: v)) }
        }
        return Deploy.CommandLine(origin: "\(file) \(name)", arguments: args, environment: env)
    }

    /// The arguments without `--forward URL`, and the URL.
    static func splitForward(_ arguments: [String]) -> (rest: [String], forward: String?) {
        guard let i = arguments.firstIndex(of: "--forward"), i + 1 < arguments.count else { return (arguments, nil) }
        return (Array(arguments[..<i] + arguments[(i + 2)...]), arguments[i + 1])
    }

    @Test func theFileHoldsAMediaServerAndAProducerPushingIntoIt() throws {
        let (services, _) = try Self.load()
        #expect(Set(services.keys) == ["mediamtx", "producer"], "\(services.keys.sorted())")
        let server = try #require(services["mediamtx"])
        let producer = try #require(services["producer"])

        // MediaMTX: its own image at a pinned major version, RTSP over TCP (Docker's NAT), and
        // the four ways viewers read published.
        let image = try #require(server["image"] as? String)
        #expect(image.hasPrefix("bluenviron/mediamtx:") && !image.hasSuffix(":latest"), "\(image)")
        let env = server["environment"] as? [String: Any] ?? [:]
        #expect(env["MTX_RTSPTRANSPORTS"] as? String == "tcp", "\(env)")
        let serverPorts = (server["ports"] as? [Any] ?? []).compactMap(Self.published)
        let tcp = Set(serverPorts.filter { $0.proto == "tcp" }.map(\.port))
        #expect(tcp.isSuperset(of: [8554, 1935, 8888, 8889]), "MediaMTX publishes \(serverPorts)")

        // The producer: the repository's image, built as compose.yaml builds it.
        let build = producer["build"] as? [String: Any] ?? [:]
        #expect(build["context"] as? String == ".." && build["dockerfile"] as? String == "Dockerfile", "\(build)")
        #expect(producer["image"] as? String == "nalcast:latest")
        let dependsOn = producer["depends_on"] as? [String: Any] ?? [:]
        #expect(dependsOn["mediamtx"] != nil, "the producer starts before MediaMTX: \(dependsOn)")

        // Every published port, of either service, is bound to an address: this machine
        // unless the operator widens it.
        for (name, service) in services {
            for entry in service["ports"] as? [Any] ?? [] {
                let port = Self.published(entry)
                #expect(port?.address == "127.0.0.1", "\(name) publishes \(entry) beyond this machine by default")
            }
        }

        // The push goes to the MediaMTX service, on the port it listens on for the scheme.
        let command = try Self.commandLine("producer", producer)
        let forward = try #require(Self.splitForward(command.arguments).forward, "the producer pushes nowhere: \(command)")
        let url = try #require(URL(string: forward), "\(forward)")
        let expectedPort = ["rtsp": 8554, "rtmp": 1935, "srt": 8890][url.scheme ?? ""]
        #expect(expectedPort != nil, "--forward \(forward): MediaMTX takes rtsp://, rtmp:// or srt://")
        #expect(url.host == "mediamtx" && url.port == expectedPort, "--forward \(forward) is not MediaMTX's \(url.scheme ?? "?") port")
        #expect(url.user == nil && url.password == nil, "--forward \(forward): a password belongs in an override, not in the repository")
        #expect(command.arguments.contains("--threads"), "x264's automatic threads follow the host's cores and break the memory limit")
    }

    /// The producer's command line and health check pass `--dry-run`, alone and with the X11
    /// override. `--forward` to a media server comes with the push support: while
    /// `nalcast produce --help` does not list it, the line without it must pass and the full
    /// line fail on that option alone; once it does, the full line must pass and name its
    /// target.
    @Test func everyNalcastCommandLinePassesDryRun() throws {
        let (services, x11) = try Self.load()
        let producer = try #require(services["producer"])
        let command = try Self.commandLine("producer", producer)
        let withX11 = try Self.commandLine("producer + compose.x11.yaml", producer, override: x11["producer"])
        let rest = Self.splitForward(command.arguments).rest
        #expect(rest.count == command.arguments.count - 2, "the producer pushes nowhere: \(command)")

        let help = try Run.nalcast(["produce", "--help"], environment: Deploy.environment())
        let pushes = help.text.contains("--forward")
        for line in [command, withX11] {
            let plain = Deploy.CommandLine(origin: line.origin + " without --forward", arguments: Self.splitForward(line.arguments).rest,
                                           environment: line.environment)
            let r = try Deploy.dryRun(plain)
            #expect(r.status == 0, "\(plain) → exit \(r.status): \(r.stderr)")
            #expect(r.text.contains("listen: tcp://0.0.0.0:7264"), "\(r.text)")
            let full = try Deploy.dryRun(line)
            if pushes {
                #expect(full.status == 0, "\(line) → exit \(full.status): \(full.stderr)")
                #expect(full.text.contains("mediamtx"), "\(line): --dry-run does not name the push target:\n\(full.text)")
            } else {
                #expect(full.status == 64 && full.stderr.contains("--forward"), "\(line) → exit \(full.status): \(full.stderr)")
            }
        }
        let x11Plan = try Deploy.dryRun(Deploy.CommandLine(origin: withX11.origin, arguments: rest, environment: withX11.environment)).text
        #expect(x11Plan.contains("source: x11"), "\(x11Plan)")
        // The harness notices a broken line.
        #expect(try Deploy.dryRun(Deploy.CommandLine(origin: command.origin, arguments: rest, environment: command.environment),
                                  extra: ["--no-such-option"]).status == 64)

        // The health check is nalcast's probe of the served stream.
        let health = try #require((producer["healthcheck"] as? [String: Any])?["test"] as? [String])
        #expect(Array(health.prefix(2)) == ["CMD", "nalcast"], "\(health)")
        let check = Deploy.CommandLine(origin: "\(Self.file) producer healthcheck", arguments: Array(health.dropFirst(2)))
        let r = try Deploy.dryRun(check)
        #expect(r.status == 0 && !r.text.isEmpty, "\(check) → exit \(r.status): \(r.stderr)")
    }
}
