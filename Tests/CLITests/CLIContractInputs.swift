import Foundation
import TestSupport

/// The files the contract's command lines name, made in the test's directory (the runs use
/// paths relative to it, so that nothing of the machine shows in what they print).
enum ContractInputs {
    static let width = 160, height = 120
    static var frameBytes: Int { width * height * 3 / 2 }
    static var y4mHeader: String { "YUV4MPEG2 W\(width) H\(height) F30:1 Ip A1:1 C420jpeg\n" }

    /// `in.y4m` (two grey frames), `bad.y4m` (a header without a height), `trunc.y4m` (its
    /// second frame cut short), `in.yuv` (two raw I420 frames), `short.yuv` (less than one),
    /// `in.wav` (0.1 s of 48 kHz stereo silence), `notwav.wav`, `in.pcm`, `conf.264` (a
    /// conformance stream), `seg/` (an empty folder); with `containers`, `a.mp4`, `a.ts`,
    /// `a.mkv` and `a.flv` (three frames each, made by FFmpeg).
    static func make(in dir: URL, containers: Bool) throws {
        let frame = Data(repeating: 128, count: frameBytes)
        let y4m = Data(y4mHeader.utf8) + Data("FRAME\n".utf8) + frame + Data("FRAME\n".utf8) + frame
        try y4m.write(to: dir.appendingPathComponent("in.y4m"))
        try Data("YUV4MPEG2 W\(width) Hx F30:1\nFRAME\n".utf8).write(to: dir.appendingPathComponent("bad.y4m"))
        try (Data(y4mHeader.utf8) + Data("FRAME\n".utf8) + frame + Data("FRAME\n".utf8) + frame.prefix(100))
            .write(to: dir.appendingPathComponent("trunc.y4m"))
        try (frame + frame).write(to: dir.appendingPathComponent("in.yuv"))
        try Data(repeating: 0, count: 1000).write(to: dir.appendingPathComponent("short.yuv"))
        try wav(seconds: 0.1).write(to: dir.appendingPathComponent("in.wav"))
        try Data("not a wav file\n".utf8).write(to: dir.appendingPathComponent("notwav.wav"))
        try Data(repeating: 0, count: 4800).write(to: dir.appendingPathComponent("in.pcm"))
        try FileManager.default.copyItem(at: ConformanceStream.named("FRExt1_Panasonic.avc").url, to: dir.appendingPathComponent("conf.264"))
        try FileManager.default.copyItem(at: ConformanceStream.named("HCAFR1_HHI.264").url, to: dir.appendingPathComponent("in.h264"))
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("seg"), withIntermediateDirectories: true)
        if containers { try makeContainers(in: dir) }
    }

    static func makeContainers(in dir: URL) throws {
        var arguments = ["-nostdin", "-v", "error", "-f", "lavfi", "-t", "0.1", "-i", "testsrc=s=\(width)x\(height):r=30"]
        for ext in ["mp4", "ts", "mkv", "flv"] { arguments += ["-c:v", "libx264", "-y", dir.appendingPathComponent("a.\(ext)").path] }
        let r = try Run.program("ffmpeg", arguments, timeout: 30)
        guard r.status == 0 else { throw MediaServerError("ffmpeg could not make the container inputs: \(r.stderr)") }
    }

    /// A PCM WAV file of silence: 48 kHz, stereo, 16-bit.
    static func wav(seconds: Double) -> Data {
        let rate = 48_000, channels = 2, bytesPerSample = 2
        let dataBytes = Int(Double(rate) * seconds) * channels * bytesPerSample
        var out = Data("RIFF".utf8)
        func le32(_ v: Int) { withUnsafeBytes(of: UInt32(v).littleEndian) { out.append(contentsOf: $0) } }
        func le16(_ v: Int) { withUnsafeBytes(of: UInt16(v).littleEndian) { out.append(contentsOf: $0) } }
        le32(36 + dataBytes)
        out += Data("WAVEfmt ".utf8)
        le32(16); le16(1); le16(channels); le32(rate); le32(rate * channels * bytesPerSample); le16(channels * bytesPerSample); le16(16)
        out += Data("data".utf8)
        le32(dataBytes)
        out += Data(repeating: 0, count: dataBytes)
        return out
    }
}

/// A loopback TCP socket the test holds: bound and listening (a port in use), or bound
/// only (a port where a connection is refused at once). Closed by `close()`.
struct HeldPort {
    let fd: Int32
    let port: Int

    init(listening: Bool) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, !listening || listen(fd, 16) == 0 else {
            let code = errno
            Glibc.close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        self.fd = fd
        port = Int(UInt16(bigEndian: addr.sin_port))
    }

    func close() { _ = Glibc.close(fd) }
}
