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
public final class FileSink: AccessUnitSink {
    public let name: String
    private var output: FileOutput
    private let ownsDescriptor: Bool

    /// Writes to standard output.
    public init() {
        name = "stdout"
        output = FileOutput(fd: 1)
        ownsDescriptor = false
    }

    /// Creates (or truncates) `path`.
    public init(path: String) throws(SinkError) {
        name = "file"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw SinkError(sink: "file", message: "\(path): \(String(cString: strerror(errno)))") }
        output = FileOutput(fd: fd)
        ownsDescriptor = true
    }

    /// `-o TARGET`: standard output for `-`, else the file `TARGET`.
    public convenience init(target: String) throws(SinkError) {
        if target == "-" { self.init() } else { try self.init(path: target) }
    }

    public func write(_ items: ArraySlice<SinkItem>) throws(SinkError) -> WriteReport {
        var report = WriteReport()
        for item in items {
            // Audio never reaches it: its runner keeps it out (`carriesAudio` is false).
            guard case .unit(let u) = item else { continue }
            output.add(u.nalUnits)
            report.units += 1
        }
        let before = output.offset
        do {
            try output.flush()
        } catch {
            throw SinkError(sink: name, message: "write: \(error.message)", peerClosed: error.isBrokenPipe)
        }
        report.bytes = output.offset - before
        return report
    }

    public func close() throws(SinkError) {
        if ownsDescriptor {
            let rc = Glibc.close(output.fd)
            if rc != 0 && errno != EINTR { throw SinkError(sink: name, message: "close: \(String(cString: strerror(errno)))") }
        }
    }
}
