import Foundation

/// An SRT listener on a free loopback UDP port: `srt-live-transmit` (Debian's srt-tools)
/// receiving from one caller at a time and writing the bytes it gets (MPEG-TS, as pushed) to
/// a file of this run, `received-N.ts` in a private temp directory. When a caller leaves it
/// listens again (srt-live-transmit's auto-reconnect), appending to the same file; `kill()`
/// and `start()` (or `restart()`) take it down and up on the same port, each run with a file
/// of its own (`outputs`).
///
/// srt-live-transmit runs with stdout unbuffered (`stdbuf -o0`): what it has received is in
/// the file as it goes, also after a `kill()`. It writes SRT's statistics of the connection
/// (totals, JSON) after every packet it reads to `stats-N.json` beside it (`stats`).
///
/// What srt-live-transmit (SRT 1.5) does at the end of a stream: it hands each packet on a
/// latency after it came (SRT's TSBPD), and once it sees the caller's close it stops reading
/// and drops what it still held, packets it received and acknowledged and counts neither
/// dropped nor lost. A caller must not close before its last packet's latency has passed
/// (nalcast's pushes wait for it); FFmpeg's does, so the tests of the server itself listen
/// at latency 0 (`latency` option), holding nothing back.
public final class SRTListener {
    public let port: UInt16
    public let directory: URL
    public let process: ServerProcess
    /// Extra SRT socket options for the listener URI (srt-live-transmit names: `latency` in ms,
    /// `passphrase`, `streamid`...).
    public let options: [String: String]
    public private(set) var outputs: [URL] = []

    /// SRT's totals for a connection, as srt-live-transmit reported them after its last read.
    public struct Stats: Equatable, CustomStringConvertible {
        /// Data packets received (`pktRecvTotal`), lost on the way (`pktRcvLossTotal`: a gap
        /// seen, then filled by a retransmission or dropped), dropped too late to play
        /// (`pktRcvDropTotal`, SRTO_TLPKTDROP) and come after their time (`pktRcvBelated`).
        public var received = 0, lost = 0, dropped = 0, belated = 0
        /// The latency agreed with the caller, ms.
        public var latency = 0
        public var description: String {
            "srt-live-transmit: \(received) packets received, \(lost) lost, \(dropped) dropped, \(belated) belated; latency \(latency) ms"
        }
    }

    /// Starts the listener on `port` (a free one by default) and waits until it is bound.
    public init(port: UInt16? = nil, options: [String: String] = [:]) throws {
        directory = try MediaServerDirectory.make("srt")
        self.port = try port ?? FreePort.udp()
        self.options = options
        process = ServerProcess(name: "srt-live-transmit", logURL: directory.appendingPathComponent("srt-live-transmit.log"))
        try start()
    }

    deinit {
        process.stop(timeout: 2)
        MediaServerDirectory.discard(directory)
    }

    /// What a caller connects to: `srt://127.0.0.1:PORT` (FFmpeg: add `?mode=caller`, its default).
    public var url: String { "srt://127.0.0.1:\(port)" }

    /// The listener's URI for srt-live-transmit.
    var listenerURI: String {
        let query = (["mode": "listener"].merging(options) { $1 }).sorted { $0.key < $1.key }
            .map { "\($0.key)=\($0.value)" }.joined(separator: "&")
        return "srt://127.0.0.1:\(port)?\(query)"
    }

    /// Starts srt-live-transmit (again) with a fresh output file and waits until it is bound.
    public func start(timeout: Double = 30) throws {
        let output = directory.appendingPathComponent("received-\(outputs.count + 1).ts")
        outputs.append(output)
        // Unbuffered (coreutils' stdbuf execs it: same PID): srt-live-transmit writes through
        // stdout's 4 KB buffer, which a slow exit on a loaded machine (SIGKILL after the
        // SIGTERM grace) would lose: a second of a low-bitrate test stream.
        let stats = directory.appendingPathComponent("stats-\(outputs.count).json")
        try process.start("stdbuf", ["-o0", try ServerProcess.locate("srt-live-transmit"), "-s:1", "-pf:json", "-f", "-statsout:\(stats.path)",
                                     listenerURI, "file://con"], stdout: output, directory: directory)
        try process.waitUntilListening(port: port, .udp, timeout: timeout)
    }

    /// SIGKILL, as a crash: the caller loses its connection.
    public func kill() { process.kill() }

    /// SIGTERM (srt-live-transmit flushes its output and exits), SIGKILL if it lingers.
    public func stop() { process.stop() }

    /// SIGKILL, then the listener again on the same port, writing a new file.
    public func restart() throws {
        process.kill()
        try start()
    }

    /// The file of the current (or last) run.
    public var output: URL { outputs.last! }

    /// What the current (or last) run received so far.
    public var received: Data { (try? Data(contentsOf: output)) ?? Data() }

    /// Bytes in the file of the current (or last) run.
    public var receivedBytes: Int {
        var info = stat()
        return stat(output.path, &info) == 0 ? Int(info.st_size) : 0
    }

    /// The statistics of the current (or last) run's last connection, after its last read
    /// (nil before the first packet).
    public var stats: Stats? {
        let path = directory.appendingPathComponent("stats-\(outputs.count).json").path
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
              let line = text.split(separator: "\n").last(where: { $0.hasPrefix("{") }),
              let json = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
              let recv = json["recv"] as? [String: Any] else { return nil }
        func int(_ key: String) -> Int { (recv[key] as? NSNumber)?.intValue ?? -1 }
        return Stats(received: int("packets"), lost: int("packetsLost"), dropped: int("packetsDropped"),
                     belated: int("packetsBelated"), latency: int("msTsbPdDelay"))
    }

    /// Waits until `count` callers have connected (in every run so far).
    @discardableResult
    public func waitForCaller(count: Int = 1, timeout: Double = 30) -> Bool {
        process.waitForLog("Accepted SRT source connection", count: count, timeout: timeout)
    }

    /// Waits until srt-live-transmit says the current run's caller has gone ("SRT source
    /// disconnected"): it has read and written everything it will by then.
    @discardableResult
    public func waitForCallerGone(timeout: Double = 30) -> Bool {
        let deadline = Moment.now.addingTimeInterval(timeout)
        while Moment.now < deadline {
            let log = process.log
            if let run = log.range(of: "--- start", options: .backwards), log[run.upperBound...].contains("SRT source disconnected") { return true }
            usleep(100_000)
        }
        return false
    }

    /// Waits until at least `bytes` have reached the file of the current run.
    @discardableResult
    public func waitForBytes(_ bytes: Int, timeout: Double = 30) -> Bool {
        let deadline = Moment.now.addingTimeInterval(timeout)
        while receivedBytes < bytes {
            if Moment.now >= deadline || !process.isRunning { return receivedBytes >= bytes }
            usleep(20_000)
        }
        return true
    }

    public var log: String { process.logTail() }
}
