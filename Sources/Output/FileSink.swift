import Media

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `-o -` / `-o FILE` of `produce` and `consume`: the Annex-B stream byte for byte as it
/// came (from the first entry point; after a skip, resuming at an entry point with its
/// parameter sets), to standard output or a file created or truncated.
///
/// When the reading side goes away (EPIPE: ffplay closed, `head` had enough) the sink
/// fails with `peerClosed` and its runner closes it; the other sinks go on.
///
/// With `delimitsPipes` (a live run: access units come as they happen), into anything but a
/// regular file (a pipe into ffplay, a FIFO, a terminal) the stream is delimited as it is
/// for a reader of `--listen` (`StreamFraming`: H.264's `AccessUnitDelimiting`): each access unit goes out with the
/// next one's AUD behind it, so that the parser at the other end releases it at once, and a
/// clean close ends it with the filler SEI and end of sequence. A regular file is read to
/// its end, where its last access unit is complete, and a run that is not live has the next
/// access unit at hand anyway: both keep the bytes as they came.
public final class FileSink: AccessUnitSink {
    public let name: String
    private var output: FileOutput
    private let ownsDescriptor: Bool
    /// Set when the output is not a regular file.
    private var delimiting: StreamFraming?
    /// A write failed: nothing more is written, not even the stream's end.
    private var failed = false

    /// Writes to standard output.
    public init(delimitsPipes: Bool = false) {
        name = "stdout"
        output = FileOutput(fd: 1)
        ownsDescriptor = false
        delimiting = delimitsPipes && !Self.isRegularFile(1) ? StreamFraming() : nil
    }

    /// Whether `fd` is a regular file (else a pipe, FIFO, socket or device: a reader waits).
    private static func isRegularFile(_ fd: Int32) -> Bool {
        var info = stat()
        return fstat(fd, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }

    /// Creates (or truncates) `path`.
    public init(path: String, delimitsPipes: Bool = false) throws(SinkError) {
        name = "file"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw SinkError(sink: "file", message: "\(path): \(String(cString: strerror(errno)))") }
        output = FileOutput(fd: fd)
        ownsDescriptor = true
        delimiting = delimitsPipes && !Self.isRegularFile(fd) ? StreamFraming() : nil
    }

    /// `-o TARGET`: standard output for `-`, else the file `TARGET`.
    public convenience init(target: String, delimitsPipes: Bool = false) throws(SinkError) {
        if target == "-" { self.init(delimitsPipes: delimitsPipes) } else { try self.init(path: target, delimitsPipes: delimitsPipes) }
    }

    public func write(_ items: ArraySlice<SinkItem>) throws(SinkError) -> WriteReport {
        var report = WriteReport()
        for item in items {
            // Audio never reaches it: its runner keeps it out (`carriesAudio` is false).
            guard case .unit(let u) = item else { continue }
            if let chunks = delimiting?.frame(u.nalUnits, of: u.unit.codec) {
                output.add(chunks: chunks)
            } else {
                output.add(u.nalUnits)
            }
            report.units += 1
        }
        let before = output.offset
        do {
            try output.flush()
        } catch {
            failed = true
            throw SinkError(sink: name, message: "write: \(error.message)", peerClosed: error.isBrokenPipe)
        }
        report.bytes = output.offset - before
        return report
    }

    public func close() throws(SinkError) {
        if let delimiting, delimiting.nextIsOpen, !failed {
            // The access unit the last AUD opened never comes: end it as a reader's stream ends.
            output.add(chunks: delimiting.closing())
            do {
                try output.flush()
            } catch {
                throw SinkError(sink: name, message: "write: \(error.message)", peerClosed: error.isBrokenPipe)
            }
        }
        if ownsDescriptor {
            let rc = Glibc.close(output.fd)
            if rc != 0 && errno != EINTR { throw SinkError(sink: name, message: "close: \(String(cString: strerror(errno)))") }
        }
    }
}
