import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The finished segments of `--segments DIR` by wall-clock time, kept as they finish (and
/// as `--keep` deletes them), so that `/recordings` and `/recordings/get` never scan the
/// directory: one line per segment in `DIR/.recordings` (start in ns since the epoch,
/// duration in ns, the file name), appended when it finishes, read once at start (the lines
/// whose files are still there). Each segment's fragment layout (`MP4Fragments`) is read
/// once, the first time a request needs it. Shared by the segments' finisher thread and the
/// loop thread.
public final class RecordingIndex: Sendable {
    public struct Entry: Sendable {
        public let name: String
        public let startNs: UInt64
        public let durationNs: UInt64
        public var endNs: UInt64 { startNs + durationNs }
    }

    public let directory: String
    public static let fileName = ".recordings"
    private struct State {
        var entries: [Entry] = []
        var layouts: [String: MP4Fragments] = [:]
    }
    private let state = Mutex(State())

    /// Loads what earlier runs recorded in `directory`, the files still there.
    public init(directory: String) {
        self.directory = directory
        var entries: [Entry] = []
        if let text = Self.readFile("\(directory)/\(Self.fileName)") {
            for line in text.split(separator: "\n") {
                let f = line.split(separator: " ", maxSplits: 2)
                guard f.count == 3, let start = UInt64(f[0]), let duration = UInt64(f[1]) else { continue }
                let name = String(f[2])
                if access("\(directory)/\(name)", F_OK) == 0 { entries.append(Entry(name: name, startNs: start, durationNs: duration)) }
            }
        }
        entries.sort { $0.startNs < $1.startNs }
        state.withLock { $0.entries = entries }
    }

    public var entries: [Entry] { state.withLock { $0.entries } }

    /// A segment finished (`path` in the directory).
    public func add(path: String, startNs: UInt64, durationNs: UInt64) {
        let name = String(path.split(separator: "/").last ?? "")
        let entry = Entry(name: name, startNs: startNs, durationNs: durationNs)
        state.withLock { state in
            let at = state.entries.firstIndex { $0.startNs > startNs } ?? state.entries.count
            state.entries.insert(entry, at: at)
        }
        let line = "\(startNs) \(durationNs) \(name)\n"
        let fd = open("\(directory)/\(Self.fileName)", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return }
        _ = line.withCString { write(fd, $0, strlen($0)) }
        close(fd)
    }

    /// A segment was deleted (`--keep`).
    public func remove(path: String) {
        let name = String(path.split(separator: "/").last ?? "")
        state.withLock { state in
            state.entries.removeAll { $0.name == name }
            state.layouts[name] = nil
        }
    }

    /// The segments that overlap `[startNs, endNs)`, in time order.
    public func covering(startNs: UInt64, endNs: UInt64) -> [Entry] {
        state.withLock { $0.entries.filter { $0.endNs > startNs && $0.startNs < endNs } }
    }

    /// The fragment layout of a segment, read once.
    public func layout(_ name: String) -> MP4Fragments? {
        if let known = state.withLock({ $0.layouts[name] }) { return known }
        guard let layout = MP4Fragments.read(path: "\(directory)/\(name)") else { return nil }
        state.withLock { $0.layouts[name] = layout }
        return layout
    }

    static func readFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            out += chunk[..<n]
        }
        return String(decoding: out, as: UTF8.self)
    }
}
