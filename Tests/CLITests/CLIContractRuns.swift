import Foundation
import TestSupport
import Testing

/// The shape of what running nalcast reports, without its values: the metric families and
/// series of `/metrics`, and the fields of each kind of `--events` line.
enum ContractShape {
    /// Events whose coming depends on the machine's speed (a loaded machine may make them
    /// happen in any run): left out of the comparison, never expected.
    static let speedDependentEvents: Set<String> = ["handoff-gap", "handoff-resumed", "reader-skipped", "skipped", "audio-resynced", "stalled"]

    /// Prometheus text as its `# HELP` and `# TYPE` lines and series names (labels kept,
    /// values dropped), one block per family as served, the blocks sorted by family name
    /// (the order of registration is no part of the format).
    static func metricNames(_ text: String) -> String {
        var blocks: [(name: String, lines: [String])] = []
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# HELP ") {
                blocks.append((String(line.dropFirst(7).prefix { $0 != " " }), [String(line)]))
            } else if line.hasPrefix("#") {
                if blocks.isEmpty { blocks.append(("", [])) }
                blocks[blocks.count - 1].lines.append(String(line))
            } else {
                if blocks.isEmpty { blocks.append(("", [])) }
                let series = line.lastIndex(of: " ").map { line[..<$0] } ?? line[...]
                blocks[blocks.count - 1].lines.append(String(series))
            }
        }
        return blocks.enumerated().sorted { ($0.element.name, $0.offset) < ($1.element.name, $1.offset) }
            .flatMap(\.element.lines).joined(separator: "\n") + "\n"
    }

    /// JSON lines as `EVENT: field, field, …` (the fields in the order written), one line per
    /// distinct kind, sorted; a line that is not one flat JSON object is kept as `not JSON`.
    static func eventFields(_ text: String) -> String {
        var kinds: Set<String> = []
        for line in text.split(separator: "\n") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let event = object["event"] as? String, let keys = keysInOrder(String(line)) else {
                kinds.insert("not JSON: \(line.prefix(80))")
                continue
            }
            if speedDependentEvents.contains(event) { continue }
            kinds.insert("\(event): " + keys.joined(separator: ", "))
        }
        return kinds.sorted().joined(separator: "\n") + "\n"
    }

    /// The keys of a flat JSON object as written (values: strings, numbers, true, false, null).
    static func keysInOrder(_ line: String) -> [String]? {
        var keys: [String] = []
        var chars = Array(line.unicodeScalars)[...]
        func string() -> String? {
            guard chars.first == "\"" else { return nil }
            chars = chars.dropFirst()
            var out = ""
            while let c = chars.first {
                chars = chars.dropFirst()
                if c == "\"" { return out }
                if c == "\\" { chars = chars.dropFirst() }
                out.unicodeScalars.append(c)
            }
            return nil
        }
        guard chars.first == "{" else { return nil }
        chars = chars.dropFirst()
        while chars.first != "}" {
            guard let key = string(), chars.first == ":" else { return nil }
            chars = chars.dropFirst()
            keys.append(key)
            if chars.first == "\"" {
                guard string() != nil else { return nil }
            } else {
                while let c = chars.first, c != ",", c != "}" { chars = chars.dropFirst() }
            }
            if chars.first == "," { chars = chars.dropFirst() }
            guard !chars.isEmpty else { return nil }
        }
        return keys
    }
}

/// One nalcast running in the background for a contract run, its events in a file.
struct ContractProcess {
    let arguments: [String]
    let events: URL
    let process: Background

    init(_ arguments: [String], events: URL, dir: URL) throws {
        self.arguments = arguments + ["--events", events.path]
        self.events = events
        process = try Background(Run.nalcast, self.arguments, environment: Contract.environment(dir))
    }

    /// The port of the first `pattern` match in the log (waiting for `the page on`, the end
    /// of the line that says where the stream is served).
    func port(_ pattern: Regex<(Substring, Substring)>) -> Int? {
        guard process.waitFor("the page on ") else { return nil }
        return process.stderr.firstMatch(of: pattern).flatMap { Int($0.1) }
    }

    /// The port of `--metrics tcp://127.0.0.1:0`: the one port it listens on that its log
    /// does not name (the log names its listeners and its page). Read from /proc, so that no
    /// port has to be chosen before it starts (a port found free is free for anyone to take).
    func metricsPort(timeout: Double = 20) -> Int? { Self.metricsPort(process, timeout: timeout) }

    /// `metricsPort()` of any nalcast `process` started with `--metrics tcp://127.0.0.1:0`.
    static func metricsPort(_ process: Background, timeout: Double = 20) -> Int? {
        let deadline = Moment.now.addingTimeInterval(timeout)
        while Moment.now < deadline && process.process.isRunning {
            let named = Set(process.stderr.matches(of: /127\.0\.0\.1:(\d+)/).compactMap { Int($0.1) })
            let unnamed = ContractProcess.listeningPorts(process.process.processIdentifier).subtracting(named)
            if unnamed.count == 1 { return unnamed.first }
            usleep(20_000)
        }
        return nil
    }

    /// The TCP ports process `pid` listens on: its sockets' inodes, looked up in /proc/net/tcp.
    static func listeningPorts(_ pid: Int32) -> Set<Int> {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        let inodes = Set(fds.compactMap { fd -> String? in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)"),
                  target.hasPrefix("socket:[") else { return nil }
            return String(target.dropFirst(8).dropLast())
        })
        let table = (try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8)) ?? ""
        var ports: Set<Int> = []
        for row in table.split(separator: "\n").dropFirst() {
            let fields = row.split(separator: " ")
            // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode; st 0A is LISTEN.
            guard fields.count > 9, fields[3] == "0A", inodes.contains(String(fields[9])),
                  let port = fields[1].split(separator: ":").last.flatMap({ Int($0, radix: 16) }) else { continue }
            ports.insert(port)
        }
        return ports
    }

    /// Waits until the events file holds `count` events named `name`.
    @discardableResult
    func waitForEvent(_ name: String, count: Int = 1, timeout: Double = 20) -> Bool {
        let deadline = Moment.now.addingTimeInterval(timeout)
        while Moment.now < deadline {
            let text = (try? String(contentsOf: events, encoding: .utf8)) ?? ""
            if text.components(separatedBy: "\"event\":\"\(name)\"").count - 1 >= count { return true }
            if !process.process.isRunning { return false }
            usleep(20_000)
        }
        return false
    }

    /// Stops it with SIGTERM: its exit code and the fields of its events.
    func stop() -> (status: Int32, events: String) {
        process.signal(SIGTERM)
        let status = process.wait()
        let text = (try? String(contentsOf: events, encoding: .utf8)) ?? ""
        return (status, ContractShape.eventFields(text))
    }

    /// The fixture's part for this run: the command line, its exit code, the shape of its
    /// /metrics (`served`, from `metricNames`) and of its events; `masks` applied.
    func section(_ end: (status: Int32, events: String), metrics served: String, from place: String, masks: [(String, String)]) -> String {
        let text = "$ nalcast " + arguments.map(ContractCase.quoted).joined(separator: " ") + "\n"
            + "exit \(end.status)\n"
            + "--- /metrics (\(place)): # HELP, # TYPE and series, families sorted by name\n" + served
            + "--- events: the fields of each kind, in the order written\n" + end.events
        return masks.reduce(text) { $0.replacingOccurrences(of: $1.0, with: $1.1) }
    }

    static func metrics(_ port: Int) throws -> String {
        try Run.program("curl", ["-s", "--max-time", "10", "http://127.0.0.1:\(port)/metrics"]).text
    }
}

/// A `--forward tcp://` target: accepts one connection and reads it to its end.
final class ForwardCatcher: @unchecked Sendable {
    // `listener` and `port` are set before the thread starts; the thread owns the connection.
    private let listener: HeldPort
    var port: Int { listener.port }
    private let done = DispatchSemaphore(value: 0)

    init() throws {
        listener = try HeldPort(listening: true)
        let fd = listener.fd
        let thread = Thread { [done] in
            let connection = accept(fd, nil, nil)
            if connection >= 0 {
                var buffer = [UInt8](repeating: 0, count: 65536)
                while read(connection, &buffer, buffer.count) > 0 {}
                close(connection)
            }
            done.signal()
        }
        thread.name = "forward-catcher"
        thread.start()
    }

    /// Waits for the sender to close (at most `timeout` s), then closes the listener.
    func finish(timeout: Double = 10) {
        _ = done.wait(timeout: .now() + timeout)
        shutdown(listener.fd, Int32(SHUT_RDWR))  // wakes an accept still waiting
        listener.close()
    }
}
