import Foundation
import Testing

/// `scripts/package` builds the .deb of the binary under test: its name and control fields,
/// what it installs where, and that the binary, the package and the Dockerfile agree on the
/// version. (Installing it in a fresh bookworm is scripts/package-smoke, by hand.)
@Suite struct PackageTests {
    static func field(_ deb: URL, _ name: String) throws -> String {
        try Run.program("dpkg-deb", ["--field", deb.path, name]).text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test(.enabled(if: Deploy.tool("dpkg-shlibdeps") != nil, "dpkg-dev is not installed (scripts/setup installs it)"))
    func controlFieldsAndContents() throws {
        let out = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: out) }
        let version = try #require(try Run.nalcast(["--version"]).text.split(separator: "\n").first?.split(separator: " ").last.map(String.init))
        let build = try Run.program(Run.root.appendingPathComponent("scripts/package").path, [],
                                    environment: Deploy.environment(["NALCAST_BINARY": Run.nalcast, "OUT": out.path, "NO_LINTIAN": "1", "PACKAGE_COMPRESSION": "none"]))
        #expect(build.status == 0, "scripts/package: \(build.stderr)")
        let arch = try Run.program("dpkg", ["--print-architecture"]).text.trimmingCharacters(in: .whitespacesAndNewlines)
        let deb = out.appendingPathComponent("nalcast_\(version)_\(arch).deb")
        try #require(FileManager.default.fileExists(atPath: deb.path), "no \(deb.lastPathComponent): \(build.text)")

        #expect(try Self.field(deb, "Package") == "nalcast")
        #expect(try Self.field(deb, "Version") == version)
        #expect(try Self.field(deb, "Architecture") == arch)
        #expect(try Self.field(deb, "Section") == "video")
        #expect(try Self.field(deb, "Maintainer").contains("@"))
        // Depends: the packages of the libraries the binary links, with dpkg-shlibdeps' versions.
        let depends = try Self.field(deb, "Depends").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let dependNames = Set(depends.map { String($0.split(separator: " ")[0]) })
        for package in ["libc6", "libx264-164", "libev4", "libyuv0", "libxcb1", "libxcb-shm0", "libxcb-damage0", "adduser"] {
            #expect(dependNames.contains(package), "Depends: \(depends)")
        }
        #expect(depends.contains { $0.hasPrefix("libc6 (>= ") }, "Depends: \(depends)")
        // Recommends: the dlopen'ed libraries, never required.
        let recommends = try Self.field(deb, "Recommends")
        for package in ["libavformat59", "libavcodec59", "libswresample4", "libpulse0"] {
            #expect(recommends.contains(package), "Recommends: \(recommends)")
            #expect(!dependNames.contains(package), "\(package) is a hard dependency")
        }

        let listing = try Run.program("dpkg-deb", ["--contents", deb.path]).text
        for path in ["./usr/bin/nalcast", "./usr/share/man/man1/nalcast.1.gz", "./usr/share/bash-completion/completions/nalcast",
                     "./usr/share/zsh/vendor-completions/_nalcast", "./usr/share/fish/vendor_completions.d/nalcast.fish",
                     "./usr/lib/systemd/user/nalcast-screen.service", "./usr/lib/systemd/user/nalcast-record.service",
                     "./usr/lib/systemd/system/nalcast.service", "./etc/default/nalcast",
                     "./usr/share/doc/nalcast/copyright", "./usr/share/doc/nalcast/changelog.gz"] {
            #expect(listing.contains(" \(path)\n"), "\(path) is not in the package")
        }
        #expect(listing.split(separator: "\n").allSatisfy { $0.contains(" root/root ") }, "a file not owned by root")

        let unpacked = out.appendingPathComponent("root")
        #expect(try Run.program("dpkg-deb", ["-R", deb.path, unpacked.path]).status == 0)
        let conffiles = try String(contentsOf: unpacked.appendingPathComponent("DEBIAN/conffiles"), encoding: .utf8)
        #expect(conffiles == "/etc/default/nalcast\n")
        for unit in ["nalcast-screen.service", "nalcast-record.service"] {
            let text = try String(contentsOf: unpacked.appendingPathComponent("usr/lib/systemd/user/\(unit)"), encoding: .utf8)
            #expect(text.contains("ExecStart=/usr/bin/nalcast ") && !text.contains(".local/bin"), "\(unit): \(text)")
        }
        // The binary inside is the one under test, stripped: the same --version.
        let packaged = try Run.program(unpacked.appendingPathComponent("usr/bin/nalcast").path, ["--version"])
        #expect(packaged.text.hasPrefix("nalcast \(version)\n"))
        let completion = try String(contentsOf: unpacked.appendingPathComponent("usr/share/bash-completion/completions/nalcast"), encoding: .utf8)
        #expect(completion == (try Run.nalcast(["completions", "bash"]).text))
    }

    /// nalcast.service runs `nalcast consume` with /etc/default/nalcast as its environment:
    /// the shipped file records the local stream into /var/lib/nalcast/segments.
    @Test func systemUnitCommandPassesDryRun() throws {
        let unit = try Deploy.text("deploy/systemd/system/nalcast.service")
        #expect(unit.contains("\nExecStart=/usr/bin/nalcast consume\n") && unit.contains("\nUser=nalcast\n"))
        #expect(unit.contains("\nEnvironmentFile=/etc/default/nalcast\n"))
        var env: [String: String] = [:]
        for line in try Deploy.text("deploy/systemd/system/nalcast.default").split(separator: "\n") where !line.hasPrefix("#") {
            let kv = line.split(separator: "=", maxSplits: 1)
            env[String(kv[0])] = String(kv[1])
        }
        #expect(env.count == 4, "\(env)")
        let r = try Run.nalcast(["consume", "--dry-run"], environment: Deploy.environment(env))
        #expect(r.status == 0 && r.stderr.isEmpty, "\(r.stderr)")
        #expect(r.text.contains("/var/lib/nalcast/segments"), "\(r.text)")
    }

    /// One version: the binary's is the Dockerfile's image label (and the package's, above).
    @Test func dockerfileLabelsTheBinarysVersion() throws {
        let version = try #require(try Run.nalcast(["--version"]).text.split(separator: "\n").first)
        let dockerfile = try Deploy.text("Dockerfile")
        let label = try #require(dockerfile.firstMatch(of: /org\.opencontainers\.image\.version="([^"]+)"/))
        #expect("nalcast " + label.1 == version)
    }
}
