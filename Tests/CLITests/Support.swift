import Foundation
import TestSupport

/// Runs programs for the end-to-end tests: the built `nalcast` and real peers.
enum Run {
    /// The `nalcast` binary under test: `NALCAST_BINARY` when set (the test script runs the
    /// end-to-end tests once more against the release build), else the one next to this
    /// test bundle.
    static let nalcast: String = {
        if let chosen = ProcessInfo.processInfo.environment["NALCAST_BINARY"], !chosen.isEmpty { return chosen }
        let dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [dir, dir.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent("nalcast").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        // swift-testing runs the bundle from the build directory too.
        let build = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug/nalcast").path
        return build
    }()

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let fixtures = ConformanceStream.directory

    struct Result {
        let status: Int32
        let stdout: Data
        let stderr: String
        var text: String { String(decoding: stdout, as: UTF8.self) }
    }

    /// 150 frames of 320x240 30 fps noise as Y4M in `dir` (noise.y4m): a picture that costs
    /// many bits, to fill a reader's buffers quickly.
    static func noiseY4M(in dir: URL) throws -> URL {
        let input = dir.appendingPathComponent("noise.y4m")
        let r = try program("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "nullsrc=s=320x240:r=30,geq=random(1)*255:128:128", "-frames:v", "150",
                                       "-pix_fmt", "yuv420p", "-f", "yuv4mpegpipe", input.path])
        guard r.status == 0 else { throw MediaServerError("ffmpeg could not make the noise input: \(r.stderr)") }
        return input
    }

    /// Runs `executable` with `arguments`, feeding `stdin`, and waits (at most `timeout` s);
    /// in `directory` when given.
    @discardableResult
    static func program(_ executable: String, _ arguments: [String], stdin: Data? = nil, environment: [String: String]? = nil,
                        directory: URL? = nil, timeout: Double = 120) throws -> Result {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable.hasPrefix("/") ? executable : "/usr/bin/env")
        p.arguments = executable.hasPrefix("/") ? arguments : [executable] + arguments
        if let environment { p.environment = environment }
        if let directory { p.currentDirectoryURL = directory }
        let out = Pipe(), err = Pipe(), inp = Pipe()
        p.standardOutput = out
        p.standardError = err
        p.standardInput = stdin == nil ? FileHandle.nullDevice : inp
        try p.run()
        let group = DispatchGroup()
        // Written by the two readers, read only after group.wait(): the group orders the accesses.
        nonisolated(unsafe) var outData = Data(), errData = Data()
        group.enter()
        DispatchQueue.global().async { outData = out.fileHandleForReading.readDataToEndOfFile(); group.leave() }
        group.enter()
        DispatchQueue.global().async { errData = err.fileHandleForReading.readDataToEndOfFile(); group.leave() }
        if let stdin {
            DispatchQueue.global().async {
                try? inp.fileHandleForWriting.write(contentsOf: stdin)
                try? inp.fileHandleForWriting.close()
            }
        }
        Wait.until(timeout: timeout, every: 0.01) { !p.isRunning }
        // Foundation starts the child as the leader of its own process group: on a timeout the
        // whole group is stopped, a script's background jobs (an ffmpeg holding a port and
        // the output pipes) with it, not the script alone.
        let processGroup = p.processIdentifier
        let timedOut = p.isRunning
        if timedOut { kill(-processGroup, SIGTERM) }
        // A child can inherit a signal mask with SIGTERM blocked from the test thread that
        // spawned it (tests that run an event loop block SIGINT and SIGTERM): after 2 s, kill it.
        Wait.until(timeout: 2, every: 0.01) { !p.isRunning }
        if timedOut { kill(-processGroup, SIGKILL) }
        p.waitUntilExit()
        group.wait()
        return Result(status: p.terminationStatus, stdout: outData, stderr: String(decoding: errData, as: UTF8.self))
    }

    static func nalcast(_ arguments: [String], stdin: Data? = nil, environment: [String: String]? = nil, directory: URL? = nil,
                        timeout: Double = 120) throws -> Result {
        try program(nalcast, arguments, stdin: stdin, environment: environment, directory: directory, timeout: timeout)
    }
}

func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("nalcast-test-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// A plain blocking TCP or unix reader of a stream, reading on its own thread.
final class StreamReaderClient: @unchecked Sendable {
    // `data` and `closed` are guarded by `lock`; `fd` is written once before the thread starts.
    private let lock = NSLock()
    private var data = Data()
    private var closedByPeer = false
    private var paused = false
    private var stop = false
    let fd: Int32
    private let done = DispatchSemaphore(value: 0)

    /// Connects to `tcp://127.0.0.1:PORT` or `unix:PATH`; a small receive buffer makes a
    /// paused reader back up quickly.
    init(_ endpoint: String, receiveBuffer: Int32? = nil, startPaused: Bool = false) throws {
        paused = startPaused
        if endpoint.hasPrefix("unix:") {
            fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var addr = sockaddr_un()
            addr.sun_family = sa_family_t(AF_UNIX)
            let path = Array(endpoint.dropFirst(5).utf8)
            withUnsafeMutableBytes(of: &addr.sun_path) { raw in
                for (i, b) in path.enumerated() { raw[i] = b }
            }
            if let receiveBuffer { var v = receiveBuffer; setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, 4) }
            let r = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
            guard r == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        } else {
            let port = UInt16(endpoint.split(separator: ":").last!)!
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            if let receiveBuffer { var v = receiveBuffer; setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, 4) }
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = port.bigEndian
            addr.sin_addr.s_addr = inet_addr("127.0.0.1")
            let r = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            guard r == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        }
        let thread = Thread { [self] in self.readLoop() }
        thread.start()
    }

    private func readLoop() {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            lock.lock()
            let (p, s) = (paused, stop)
            lock.unlock()
            if s { break }
            if p {
                usleep(10_000)
                continue
            }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 50) > 0 else { continue }
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 {
                lock.lock()
                closedByPeer = true
                lock.unlock()
                break
            }
            lock.lock()
            data.append(contentsOf: buffer[0..<n])
            lock.unlock()
        }
        done.signal()
    }

    var received: Data { lock.lock(); defer { lock.unlock() }; return data }
    var isClosedByPeer: Bool { lock.lock(); defer { lock.unlock() }; return closedByPeer }
    func resume() { lock.lock(); paused = false; lock.unlock() }

    /// Stops reading and closes; returns everything received.
    func finish() -> Data {
        lock.lock()
        stop = true
        lock.unlock()
        done.wait()
        close(fd)
        return received
    }
}

/// Access unit delimiters (`00 00 01 09`) in a reader's bytes from `from` on: each access
/// unit nalcast sends begins with one (in MPEG-TS too, at the start of its PES packet), and
/// the trailer behind the last picture is one more. A count cheap enough to wait on; a caller
/// that waits on a growing stream passes where it searched to last time (less 3 bytes).
func accessUnitDelimiters(in stream: Data, from: Int = 0) -> Int {
    let delimiter = Data([0, 0, 1, 9])
    var count = 0
    var at = stream.startIndex + max(0, from)
    while at < stream.endIndex, let found = stream.range(of: delimiter, in: at..<stream.endIndex) {
        count += 1
        at = found.upperBound
    }
    return count
}

/// IDR pictures in a reader's bytes: runs of IDR slices (NAL type 5), however many slices
/// each picture has (no AUD, SEI or parameter set comes between the slices of one picture,
/// H.264 7.4.1.2.3).
func idrPictures(in stream: Data) -> Int {
    stream.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> Int in
        let b = raw.bindMemory(to: UInt8.self)
        var count = 0
        var lastType: UInt8 = 0
        var i = 2
        while i + 1 < b.count {
            if b[i] == 1 && b[i - 1] == 0 && b[i - 2] == 0 {
                let type = b[i + 1] & 0x1F
                if type == 5 && lastType != 5 { count += 1 }
                lastType = type
            }
            i += 1
        }
        return count
    }
}

/// Decodes an Annex-B stream with FFmpeg: the frame count and FFmpeg's complaints (stderr).
/// A stream a reader took from a live server and left ends with the trailer the server
/// sends behind every picture (the next access unit's AUD and the first byte of its SEI,
/// `AccessUnitDelimiting.trailer`): the start of an access unit that had not come yet, as
/// any stream cut between two pictures now ends. It is left out, as a cut inside a picture
/// would have to be.
func ffmpegDecode(_ stream: Data) throws -> (frames: Int, errors: String) {
    let dir = try temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: dir) }
    let file = dir.appendingPathComponent("s.h264")
    let trailer = Data([0, 0, 0, 1, 0x09, 0xF0, 0, 0, 0, 1, 0x06])
    try (stream.suffix(trailer.count) == trailer ? stream.dropLast(trailer.count) : stream).write(to: file)
    let decode = try Run.program("ffmpeg", ["-hide_banner", "-v", "error", "-f", "h264", "-i", file.path, "-f", "null", "-"])
    let probe = try Run.program("ffprobe", ["-v", "error", "-f", "h264", "-count_frames", "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", file.path])
    let frames = Int(probe.text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
    return (frames, decode.stderr.trimmingCharacters(in: .whitespacesAndNewlines))
}

/// `nalcast inspect --json` of a stream, parsed.
func inspect(_ stream: Data) throws -> [String: Any] {
    let r = try Run.nalcast(["inspect", "--json", "-"], stdin: stream)
    return (try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any]) ?? [:]
}
