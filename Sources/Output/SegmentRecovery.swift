#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Crash recovery for a segment directory.
///
/// A segment is written as `NAME.part`, next to `NAME.part.idx`: after every batch of
/// complete access units is written, the file's new length is appended to the index as
/// 8 bytes (little-endian). A process killed at any point (even inside `write(2)`, which
/// can leave part of an access unit) leaves a `.part` whose prefix up to the last length
/// in the index holds only complete access units. On the next start, each leftover
/// `.part` is cut there and renamed to `NAME`; one with no complete access unit is removed.
public enum SegmentRecovery {
    /// What was done with one leftover `.part`.
    public struct Outcome: Sendable, Equatable {
        /// The finished name (nil when the part was removed).
        public let path: String?
        public let partPath: String
        /// Bytes kept and bytes cut off.
        public let keptBytes: Int
        public let droppedBytes: Int
    }

    public static let partSuffix = ".part"
    public static let indexSuffix = ".part.idx"

    /// Recovers every leftover `.part` in `directory`, oldest name first.
    public static func recover(directory: String) throws(SinkError) -> [Outcome] {
        guard let dir = opendir(directory) else {
            throw SinkError(sink: "segments", message: "\(directory): \(String(cString: strerror(errno)))")
        }
        var names: [String] = []
        var orphanIndexes: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name.hasSuffix(partSuffix) && name.count > partSuffix.count { names.append(name) }
            if name.hasSuffix(indexSuffix) { orphanIndexes.append(name) }
        }
        closedir(dir)
        var outcomes: [Outcome] = []
        for name in names.sorted() {
            outcomes.append(try recoverOne(directory: directory, partName: name))
        }
        // An index whose part is gone (killed between rename and unlink): remove it.
        for index in orphanIndexes where !names.contains(String(index.dropLast(4))) {
            unlink(directory + "/" + index)
        }
        return outcomes
    }

    /// The last complete-prefix length recorded in an index file, 0 when there is none.
    static func lastRecordedLength(indexPath: String) -> Int {
        let fd = open(indexPath, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return 0 }
        let records = Int(st.st_size) / 8
        guard records > 0 else { return 0 }
        var bytes = [UInt8](repeating: 0, count: 8)
        guard pread(fd, &bytes, 8, off_t((records - 1) * 8)) == 8 else { return 0 }
        var value: UInt64 = 0
        for (i, b) in bytes.enumerated() { value |= UInt64(b) << UInt64(8 * i) }
        return Int(clamping: value)
    }

    private static func recoverOne(directory: String, partName: String) throws(SinkError) -> Outcome {
        let partPath = directory + "/" + partName
        let indexPath = partPath + ".idx"
        var st = stat()
        guard stat(partPath, &st) == 0 else {
            throw SinkError(sink: "segments", message: "\(partPath): \(String(cString: strerror(errno)))")
        }
        let size = Int(st.st_size)
        let keep = min(size, lastRecordedLength(indexPath: indexPath))
        guard keep > 0 else {
            unlink(partPath)
            unlink(indexPath)
            return Outcome(path: nil, partPath: partPath, keptBytes: 0, droppedBytes: size)
        }
        let fd = open(partPath, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SinkError(sink: "segments", message: "\(partPath): \(String(cString: strerror(errno)))") }
        if keep < size && ftruncate(fd, off_t(keep)) != 0 {
            let message = String(cString: strerror(errno))
            close(fd)
            throw SinkError(sink: "segments", message: "ftruncate \(partPath): \(message)")
        }
        fsync(fd)
        close(fd)
        var finalPath = String(partPath.dropLast(partSuffix.count))
        if access(finalPath, F_OK) == 0 { finalPath += ".recovered" }
        guard rename(partPath, finalPath) == 0 else {
            throw SinkError(sink: "segments", message: "rename \(partPath): \(String(cString: strerror(errno)))")
        }
        unlink(indexPath)
        return Outcome(path: finalPath, partPath: partPath, keptBytes: keep, droppedBytes: size - keep)
    }
}
