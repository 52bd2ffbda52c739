import Clocks
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A file descriptor read with a stop check: a pipe that stays silent never holds the
/// thread past `stopped` (poll, 100 ms at a time).
///
/// @unchecked Sendable: opened on the thread that starts capture (to fail early), then
/// used and closed by the source's thread alone.
final class PCMFile: @unchecked Sendable {
    let fd: Int32
    private let owned: Bool

    init(path: String) throws(AudioError) {
        if path == "-" {
            fd = 0
            owned = false
            return
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            let kind: AudioError.Kind = code == ENOENT || code == EACCES || code == ENOTDIR ? .noInput : .unavailable
            throw AudioError(kind, String(cString: strerror(code)))
        }
        var st = stat()
        if fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR {
            close(fd)
            throw AudioError(.noInput, "is a directory")
        }
        self.fd = fd
        owned = true
    }

    deinit { if owned { close(fd) } }

    /// Fills `buffer` as far as the input goes: the count read (short only at the end), or
    /// nil when stopped or on a read error (`error` set).
    func read(into buffer: UnsafeMutableRawBufferPointer, stopped: () -> Bool, error: inout Int32) -> Int? {
        var done = 0
        while done < buffer.count {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if stopped() { return nil }
            let ready = poll(&pfd, 1, 100)
            if ready == 0 { continue }
            if ready < 0 { if errno == EINTR { continue }; error = errno; return nil }
            let n = Glibc.read(fd, buffer.baseAddress! + done, buffer.count - done)
            if n < 0 { if errno == EINTR { continue }; error = errno; return nil }
            if n == 0 { break }
            done += n
        }
        return done
    }
}

/// What a WAV file's header says, and the bytes of it already read past the header.
struct WAVHeader {
    var layout: PCMLayout
    var isFloat: Bool

    /// Reads RIFF/WAVE chunks up to `data`: PCM 8/16/24/32-bit, float 32, plain or
    /// WAVE_FORMAT_EXTENSIBLE. The data chunk's size is not trusted (a pipe's header often
    /// says 0 or 0xFFFFFFFF): the samples run to the end of the input.
    static func read(_ file: PCMFile, name: String, stopped: () -> Bool) throws(AudioError) -> WAVHeader {
        var error: Int32 = 0
        func bytes(_ count: Int) throws(AudioError) -> [UInt8] {
            var out = [UInt8](repeating: 0, count: count)
            let n = out.withUnsafeMutableBytes { file.read(into: $0, stopped: stopped, error: &error) }
            guard let n, n == count else {
                throw AudioError(.badInput, "--audio \(name): not a WAV file (\(error != 0 ? String(cString: strerror(error)) : "it ends in its header"))")
            }
            return out
        }
        func le(_ b: [UInt8], _ at: Int, _ size: Int) -> Int { (0..<size).reduce(0) { $0 | Int(b[at + $1]) << (8 * $1) } }
        let riff = try bytes(12)
        guard riff[0..<4].elementsEqual("RIFF".utf8), riff[8..<12].elementsEqual("WAVE".utf8) else {
            throw AudioError(.badInput, "--audio \(name): not a WAV file (no RIFF/WAVE header)")
        }
        var format: (tag: Int, channels: Int, rate: Int, bits: Int)?
        for _ in 0..<64 {
            let head = try bytes(8)
            let size = le(head, 4, 4)
            let id = String(decoding: head[0..<4], as: UTF8.self)
            if id == "data" {
                guard let f = format else { throw AudioError(.badInput, "--audio \(name): WAV data before its fmt chunk") }
                var tag = f.tag
                if tag == 0xFFFE { tag = 1 }  // extensible: the subformat was read into `tag` below
                let sample: PCMLayout.Sample? = switch (tag, f.bits) {
                case (1, 8): .u8
                case (1, 16): .s16le
                case (1, 24): .s24le
                case (1, 32): .s32le
                case (3, 32): .f32le
                default: nil
                }
                guard let sample, (1...8).contains(f.channels), (8_000...384_000).contains(f.rate) else {
                    throw AudioError(.badInput, "--audio \(name): WAV encoding \(f.tag) at \(f.bits) bits, \(f.channels) channels, \(f.rate) Hz is not one nalcast reads (PCM 8/16/24/32-bit or float 32, up to 8 channels)")
                }
                return WAVHeader(layout: PCMLayout(sample: sample, rate: f.rate, channels: f.channels), isFloat: sample == .f32le)
            }
            guard size < 1 << 20 else { throw AudioError(.badInput, "--audio \(name): a WAV \(id) chunk of \(size) bytes before the data") }
            let body = try bytes(size + (size & 1))
            if id == "fmt " && size >= 16 {
                var tag = le(body, 0, 2)
                if tag == 0xFFFE && size >= 26 { tag = le(body, 24, 2) }  // the subformat GUID's first two bytes
                format = (tag, le(body, 2, 2), le(body, 4, 4), le(body, 14, 2))
            }
        }
        throw AudioError(.badInput, "--audio \(name): no WAV data chunk")
    }
}

/// A WAV or raw PCM file or pipe, played onto the track in real time: each chunk goes at
/// the place of the moment it is read (about 100 ms ahead of the encoder), so a file is
/// heard as if a device were playing it from the start of capture. The end of the input
/// is a line and silence from there.
final class FileInput: Sendable {
    let label: String
    let track: TrackClock
    let channels: Int
    let mix: MixBuffer
    let report: @Sendable (AudioEvent) -> Void
    let state = Mutex<AudioSourceState>(.starting)

    init(label: String, track: TrackClock, channels: Int, mix: MixBuffer, report: @escaping @Sendable (AudioEvent) -> Void) {
        self.label = label
        self.track = track
        self.channels = channels
        self.mix = mix
        self.report = report
    }

    func run(file: PCMFile, layout: PCMLayout, stopped: () -> Bool) {
        let input: Resampler.Input = switch layout.sample {
        case .u8: .u8
        case .s16le: .s16
        case .s24le, .s32le: .s32  // 24-bit is widened to 32 below
        case .f32le: .f32
        }
        guard let resampler = try? Resampler(input: input, rate: layout.rate, channels: layout.channels, outRate: track.rate, outChannels: channels) else {
            state.withLock { $0 = .ended }
            report(.lost(source: label, reason: "cannot convert \(layout)"))
            return
        }
        state.withLock { $0 = .capturing }
        report(.connected(source: label))
        let frames = max(1, layout.rate / 50)  // 20 ms a read
        var raw = [UInt8](repeating: 0, count: frames * layout.frameBytes)
        var wide = [Int32](repeating: 0, count: layout.sample == .s24le ? frames * layout.channels : 0)
        var position = Int64(track.position(atRealtime: WallClock.nanoseconds).rounded())
        var error: Int32 = 0
        var ended = false
        while !stopped() && !ended {
            // Read no more than 100 ms ahead of real time.
            guard sleep(untilRealtime: track.realtime(at: position) &- 100_000_000, unless: stopped) else { break }
            guard let n = raw.withUnsafeMutableBytes({ file.read(into: $0, stopped: stopped, error: &error) }) else { break }
            let got = n / layout.frameBytes
            if n < raw.count { ended = true }
            guard got > 0 else { break }
            let add: (UnsafeBufferPointer<Float>) -> Void = { [mix] out in
                mix.add(out, at: position)
                position += Int64(out.count / self.channels)
            }
            if layout.sample == .s24le {
                for i in 0..<got * layout.channels {
                    let b = 3 * i
                    wide[i] = Int32(bitPattern: UInt32(raw[b]) << 8 | UInt32(raw[b + 1]) << 16 | UInt32(raw[b + 2]) << 24)
                }
                wide.withUnsafeBytes { resampler.convert($0.baseAddress, frames: got, add) }
            } else {
                raw.withUnsafeBytes { resampler.convert($0.baseAddress, frames: got, add) }
            }
        }
        if !stopped() {
            resampler.convert(nil, frames: 0) { out in mix.add(out, at: position) }
            state.withLock { $0 = .ended }
            report(error != 0 ? .lost(source: label, reason: String(cString: strerror(error))) : .ended(source: label))
        }
    }
}
