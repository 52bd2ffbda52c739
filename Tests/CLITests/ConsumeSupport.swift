import Foundation
import TestSupport

/// A TCP socket listening on 127.0.0.1 (backlog 4) on a port the kernel picked: the start of
/// every test peer that plays a server or a forward target. The caller closes the descriptor.
func loopbackListener() throws -> (fd: Int32, port: UInt16) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var one: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, 4)
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = 0
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    let r = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    guard r == 0, listen(fd, 4) == 0 else {
        close(fd)
        throw POSIXError(.EADDRINUSE)
    }
    var bound = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    return (fd, UInt16(bigEndian: bound.sin_port))
}

/// Sends `data` to the connected socket `client` in chunks of the sizes `chunkSizes` cycles
/// through (odd sizes split NAL units and start codes anywhere), sleeping `pause` after each;
/// stops at the first send that fails. Returns how many bytes went out.
func sendInChunks(_ data: [UInt8], to client: Int32, chunkSizes: [Int], pause: useconds_t = 0) -> Int {
    var offset = 0
    var k = 0
    while offset < data.count {
        let n = min(chunkSizes[k % chunkSizes.count], data.count - offset)
        k += 1
        let sent = data[offset..<(offset + n)].withUnsafeBytes { send(client, $0.baseAddress, n, Int32(MSG_NOSIGNAL)) }
        if sent <= 0 { break }
        offset += sent
        if pause > 0 { usleep(pause) }
    }
    return offset
}

/// A one-shot TCP server for consume tests: accepts one reader on 127.0.0.1 and writes
/// `data` in chunks of odd sizes (optionally paced), then closes.
final class TestStreamServer: @unchecked Sendable {
    // `fd` and `port` are set in init before the thread starts and never change.
    let fd: Int32
    let port: UInt16
    var endpoint: String { "tcp://127.0.0.1:\(port)" }

    init(data: [UInt8], chunkSizes: [Int] = [1, 7, 13, 100, 1021, 4099, 65537], pause: useconds_t = 0) throws {
        (fd, port) = try loopbackListener()
        let listener = fd
        Thread {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            _ = sendInChunks(data, to: client, chunkSizes: chunkSizes, pause: pause)
            close(client)
        }.start()
    }

    deinit { close(fd) }
}

/// A forward target on 127.0.0.1: accepts one connection and reads it to its end.
final class ForwardTarget: @unchecked Sendable {
    // `fd` and `port` are set before the thread starts and never change; `data` is written
    // by the thread before it signals `done` and read only after waiting for it.
    let fd: Int32
    let port: Int
    private var data: [UInt8] = []
    private let done = DispatchSemaphore(value: 0)

    init() throws {
        let (fd, port) = try loopbackListener()
        self.fd = fd
        self.port = Int(port)
        Thread { [self] in
            defer { self.done.signal() }
            // Give up after a minute rather than hang the suite.
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 60_000) > 0 else { return }
            let client = accept(fd, nil, nil)
            guard client >= 0 else { return }
            defer { close(client) }
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                var cfd = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
                guard poll(&cfd, 1, 60_000) > 0 else { return }
                let n = read(client, &buffer, buffer.count)
                if n <= 0 { return }
                self.data += buffer[0..<n]
            }
        }.start()
    }

    /// Everything read, once the connection ended.
    func received() -> [UInt8] {
        done.wait()
        return data
    }

    deinit { close(fd) }
}

/// A one-shot TCP server that writes `data` in odd chunk sizes, waits until the reader has
/// acknowledged every byte and `reset()` was called, then resets the connection
/// (SO_LINGER 0: RST, no FIN).
final class ResettingServer: @unchecked Sendable {
    // `fd` and `port` are set before the thread starts and never change; `delivered` is
    // guarded by `lock`.
    let fd: Int32
    let port: UInt16
    var endpoint: String { "tcp://127.0.0.1:\(port)" }
    private let lock = NSLock()
    private var delivered = false
    private let go = DispatchSemaphore(value: 0)

    init(data: [UInt8], chunkSizes: [Int] = [1, 7, 13, 100, 1021, 4099]) throws {
        let fd: Int32
        (fd, port) = try loopbackListener()
        self.fd = fd
        Thread { [self] in
            let client = accept(fd, nil, nil)
            guard client >= 0 else { return }
            let offset = sendInChunks(data, to: client, chunkSizes: chunkSizes)
            // A reset throws away what is still unsent or unacknowledged: wait until the
            // send queue is empty (SIOCOUTQ, 0x5411), i.e. the reader's kernel has it all.
            var queued: Int32 = 1
            let deadline = Moment.now.addingTimeInterval(30)
            while queued > 0 && Moment.now < deadline {
                _ = withUnsafeMutablePointer(to: &queued) { ioctl(client, 0x5411, $0) }
                if queued > 0 { usleep(1_000) }
            }
            self.lock.lock()
            self.delivered = offset == data.count && queued == 0
            self.lock.unlock()
            _ = self.go.wait(timeout: .now() + 60)
            var linger = linger(l_onoff: 1, l_linger: 0)
            setsockopt(client, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
            close(client)
        }.start()
    }

    /// Lets the connection be reset (after every byte was acknowledged).
    func reset() { go.signal() }

    /// True once every byte was sent and acknowledged before the reset.
    var sentAll: Bool { lock.lock(); defer { lock.unlock() }; return delivered }

    deinit { close(fd) }
}

enum Streams {
    /// A small x264 stream made by FFmpeg (cached per parameters in the temporary directory).
    /// Suites run in processes of their own at once and may make the same stream together:
    /// each writes a file of its own and renames it into place (rename(2) replaces a file
    /// another one put there first, where moveItem would refuse).
    static func ffmpeg(frames: Int, keyint: Int, bitrate: String = "500k", size: String = "320x240") throws -> [UInt8] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("nalcast-consume-\(frames)-\(keyint)-\(bitrate)-\(size).h264")
        if !FileManager.default.fileExists(atPath: path.path) {
            let own = path.path + ".\(getpid())-\(UUID().uuidString).tmp"
            let r = try Run.program("ffmpeg", ["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=\(size):rate=30",
                                               "-frames:v", String(frames), "-c:v", "libx264", "-preset", "ultrafast", "-g", String(keyint),
                                               "-bf", "0", "-b:v", bitrate, "-f", "h264", own])
            guard r.status == 0 else { try? FileManager.default.removeItem(atPath: own); throw POSIXError(.EIO) }
            guard rename(own, path.path) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        }
        return [UInt8](try Data(contentsOf: path))
    }
}

/// The JSON lines of an `--events` file, each as an object (a line that is not JSON is left out).
func eventLines(_ url: URL) -> [[String: Any]] {
    let text = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
    return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
}

/// `bytes` written to `DIR/in.h264`, the input file of a consume test.
func inputFile(_ bytes: [UInt8], in dir: URL) throws -> URL {
    let url = dir.appendingPathComponent("in.h264")
    try Data(bytes).write(to: url)
    return url
}

/// What FFmpeg makes of a stream file: its packets (access units) and decoded frames, and
/// whatever it complained about.
struct Decoded {
    let packets: Int
    let frames: Int
    let errors: String

    /// `path`: Annex-B, or a container segment (`.mp4`, `.ts`, `.mkv`: ffprobe finds its demuxer).
    init(_ path: String) throws {
        let raw = isContainer(path) ? [] : ["-f", "h264"]
        let r = try Run.program("ffprobe", ["-v", "error"] + raw + ["-count_frames", "-count_packets",
                                            "-show_entries", "stream=nb_read_frames,nb_read_packets", "-of", "csv=p=0", path])
        let fields = r.text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",").compactMap { Int($0) }
        frames = fields.first ?? -1
        packets = fields.count > 1 ? fields[1] : -1
        errors = r.stderr
    }
}

/// True for the names `consume` writes in a container (the default `.mp4` segments, `.ts`,
/// `.mkv`, `.flv`); `.h264` and other names hold Annex-B.
func isContainer(_ path: String) -> Bool {
    ["mp4", "ts", "mkv", "flv"].contains(URL(fileURLWithPath: path).pathExtension)
}

/// The Annex-B stream inside a container file, its packets copied out by FFmpeg (the raw
/// H.264 muxer puts the parameter sets in band, as a stream carries them).
func annexB(ofContainer path: String) throws -> Data {
    let r = try Run.program("ffmpeg", ["-nostdin", "-v", "error", "-i", path, "-map", "0:v:0", "-c", "copy", "-f", "h264", "-"])
    guard r.status == 0 else { throw AnnexBCopyFailed(path: path, reason: r.stderr) }
    return r.stdout
}

struct AnnexBCopyFailed: Error, CustomStringConvertible {
    let path: String
    let reason: String
    var description: String { "ffmpeg could not copy the H.264 out of \(path): \(reason)" }
}

/// The first access unit's NAL types and the access-unit count, from `nalcast inspect`; a
/// container segment is inspected through the Annex-B copy of its packets.
func inspect(_ path: String) throws -> (accessUnits: Int, firstTypes: [Int]) {
    let r = isContainer(path) ? try Run.nalcast(["inspect", "--json", "-"], stdin: try annexB(ofContainer: path))
                              : try Run.nalcast(["inspect", "--json", path])
    let json = try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any] ?? [:]
    let units = json["units"] as? [[String: Any]] ?? []
    return (json["accessUnits"] as? Int ?? -1, units.first?["nalTypes"] as? [Int] ?? [])
}

/// True when the last NAL unit of `bytes` is an end of stream or end of sequence (type 11 or
/// 10): a producer that says its stream is over. `consume --from` exits 0 at such an end and
/// 69 when the source went away without saying so and was not back within `--reconnect-timeout`.
func endsWithEndOfStream(_ bytes: [UInt8]) -> Bool {
    var i = bytes.count - 3
    while i >= 0 && !(bytes[i] == 0 && bytes[i + 1] == 0 && bytes[i + 2] == 1) { i -= 1 }
    guard i >= 0, i + 3 < bytes.count else { return false }
    return [10, 11].contains(bytes[i + 3] & 0x1f)
}

/// The exit of `consume --from tcp://… --reconnect-timeout 0` once a server that sent
/// `bytes` closed cleanly: 0 for a stream that said it ended, 69 for one that just stopped.
func exitAfterCleanClose(of bytes: [UInt8]) -> Int32 { endsWithEndOfStream(bytes) ? 0 : 69 }
