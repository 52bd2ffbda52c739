import Foundation

/// Helpers for the deploy-file and docs tests: the repository's files, linters found on the
/// PATH or where scripts/setup puts them, and `nalcast … --dry-run` with a clean environment.
enum Deploy {
    static func text(_ relativePath: String) throws -> String {
        try String(contentsOf: Run.root.appendingPathComponent(relativePath), encoding: .utf8)
    }

    /// A tool on the PATH, or in the virtual environment scripts/setup makes for PyPI tools
    /// (`~/.cache/nalcast-tools/bin`).
    static func tool(_ name: String) -> String? {
        var dirs = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
        dirs += ["/usr/sbin", "/sbin", NSHomeDirectory() + "/.cache/nalcast-tools/bin"]
        for dir in dirs {
            let path = dir + "/" + name
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    /// The environment without any NALCAST_* of the machine running the tests, plus `extra`.
    static func environment(_ extra: [String: String] = [:]) -> [String: String] {
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("NALCAST_") }
        for (k, v) in extra { env[k] = v }
        return env
    }

    /// One command line found in a deploy file: nalcast's arguments and the environment the
    /// file gives it.
    struct CommandLine: CustomStringConvertible {
        let origin: String
        let arguments: [String]
        var environment: [String: String] = [:]
        var description: String { "\(origin): nalcast \(arguments.joined(separator: " "))" + (environment.isEmpty ? "" : " with \(environment)") }
    }

    /// Runs `nalcast ARGS --dry-run` with the command line's environment.
    static func dryRun(_ command: CommandLine, extra: [String] = []) throws -> Run.Result {
        try Run.nalcast(command.arguments + extra + ["--dry-run"], environment: environment(command.environment), timeout: 20)
    }

    /// `[...]` JSON-array (exec form) arguments of a Dockerfile instruction, continuation
    /// lines joined. Returns nil when the instruction is missing.
    static func dockerfileExecForm(_ dockerfile: String, instruction: String) throws -> [String]? {
        let joined = dockerfile.replacingOccurrences(of: "\\\n", with: " ")
        guard let line = joined.split(separator: "\n").first(where: { $0.hasPrefix(instruction + " ") }) else { return nil }
        guard let open = line.firstIndex(of: "["), let close = line.lastIndex(of: "]") else { return nil }
        let array = try JSONSerialization.jsonObject(with: Data(line[open...close].utf8)) as? [String]
        return array
    }
}

/// deploy/nginx/nalcast-web.conf as the tests run it: the file itself, with the few lines an
/// admin replaces swapped for the test's own, inside a minimal nginx.conf.
extension Deploy {
    static let nginxWebSite = "deploy/nginx/nalcast-web.conf"

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The site file with its certificate and key replaced, its access log beside them, and when given, its `listen`
    /// lines by one on `listen` (HOST:PORT) and the upstream `server` by `web` (HOST:PORT).
    /// Each line replaced must be in the file exactly once, so the file cannot drift away
    /// from what the tests run.
    static func nginxWebSite(certificate: String, key: String, listen: String? = nil, web: String? = nil) throws -> String {
        // The access log beside the certificate, in the test's directory.
        let log = (certificate as NSString).deletingLastPathComponent + "/access.log"
        var swaps = [
            ("ssl_certificate     /etc/ssl/nalcast/cert.pem;", "ssl_certificate     \(certificate);"),
            ("ssl_certificate_key /etc/ssl/nalcast/key.pem;", "ssl_certificate_key \(key);"),
            ("access_log /var/log/nginx/access.log nalcast_without_query;", "access_log \(log) nalcast_without_query;"),
        ]
        if let listen { swaps += [("listen 443 ssl;", "listen \(listen) ssl;"), ("listen [::]:443 ssl;", "")] }
        if let web { swaps.append(("server 127.0.0.1:8080;", "server \(web);")) }
        var site = try text(nginxWebSite)
        for (line, replacement) in swaps {
            guard site.components(separatedBy: line).count == 2 else { throw Failure(description: "\(nginxWebSite) no longer has exactly one `\(line)`: update Deploy.nginxWebSite(...)") }
            site = site.replacingOccurrences(of: line, with: replacement)
        }
        return site
    }

    /// Writes `site` and an nginx.conf that includes it into `dir` (one process in the
    /// foreground, its pid, log and temporary files in `dir`, nothing in /var or /run) and
    /// returns the nginx.conf, for `nginx -p DIR -c NGINX.CONF`.
    static func nginxConfig(dir: URL, site: String) throws -> URL {
        let sitePath = dir.appendingPathComponent("nalcast-web.conf")
        try site.write(to: sitePath, atomically: true, encoding: .utf8)
        let config = dir.appendingPathComponent("nginx.conf")
        try """
        master_process off;
        daemon off;
        error_log \(dir.path)/error.log;
        pid \(dir.path)/nginx.pid;
        events {}
        http {
            access_log off;
            client_body_temp_path \(dir.path);
            proxy_temp_path \(dir.path);
            fastcgi_temp_path \(dir.path);
            uwsgi_temp_path \(dir.path);
            scgi_temp_path \(dir.path);
            include \(sitePath.path);
        }

        """.write(to: config, atomically: true, encoding: .utf8)
        return config
    }

    /// A self-signed certificate for `address` (an IP address or a DNS name) in `dir`:
    /// (cert.pem, key.pem).
    static func selfSignedCertificate(dir: URL, address: String) throws -> (certificate: String, key: String) {
        let cert = dir.appendingPathComponent("cert.pem").path, key = dir.appendingPathComponent("key.pem").path
        let isIP = address.allSatisfy { $0.isNumber || $0 == "." || $0 == ":" }
        let r = try Run.program("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=\(address)",
                                            "-addext", "subjectAltName=\(isIP ? "IP" : "DNS"):\(address)", "-keyout", key, "-out", cert])
        guard r.status == 0 else { throw Failure(description: "openssl req: \(r.stderr)") }
        return (cert, key)
    }
}
