import IO

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One answer on a connection an `HTTPServer` route took over (`.takeOver`), for routes that
/// answer later (a blocking playlist reload) or with a body that is not text (files, byte
/// ranges): the head, then the body from memory or from files read a chunk at a time as the
/// socket drains (by `FileReads`, off the loop: one chunk in flight at a time), then a
/// graceful close. Loop-owned; its owner keeps it until `onClose` (a read in flight keeps it
/// until the read comes back, which closes its files).
public final class HTTPReply {
    private let connection: Connection
    private let reads: FileReads
    /// A chunk is being read: the files stay open until it is back.
    private var reading = false
    /// A part of a body: bytes in memory, or a range of a file (the descriptor owned here).
    public enum Piece: Sendable {
        case bytes([UInt8])
        case file(fd: Int32, offset: Int, length: Int)
        var length: Int {
            switch self {
            case .bytes(let b): b.count
            case .file(_, _, let length): length
            }
        }
    }
    private var pieces: [Piece] = []
    static let chunk = 256 << 10
    public var onClose: (() -> Void)?

    /// Takes over a route's connection (its transport, TLS or not, with it) and starts
    /// reading it again (to see the peer go); nothing is written yet.
    public init(connection: Connection, reads: FileReads) {
        self.connection = connection
        self.reads = reads
        connection.onClose = { [unowned self] _ in self.closed() }
        connection.onData = { _ in }
        connection.start()
    }

    public var isClosed: Bool { connection.isClosed }

    /// The head of a response: status line, the fields, `Content-Length`, `Connection: close`.
    public static func head(status: Int, contentType: String?, length: Int, headers: [(String, String)]) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(status == 206 ? "Partial Content" : status == 416 ? "Range Not Satisfiable" : HTTPResponse.reason(status))\r\n"
        if let contentType { head += "Content-Type: \(contentType)\r\n" }
        head += "Content-Length: \(length)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "Connection: close\r\n\r\n"
        return Array(head.utf8)
    }

    /// Answers with `body` and closes.
    public func send(status: Int, contentType: String?, body: [UInt8], headers: [(String, String)] = [], headOnly: Bool = false) {
        guard !connection.isClosed else { return }
        let head = Self.head(status: status, contentType: contentType, length: body.count, headers: headers)
        _ = connection.write(chunks: headOnly || body.isEmpty ? [head[...]] : [head[...], body[...]])
        connection.closeGracefully(within: 2)
    }

    /// Answers with the bytes of `files` (each a descriptor, owned here from now on, an
    /// offset and a length), one after the other, read as the socket takes them.
    public func send(status: Int, contentType: String?, files: [(fd: Int32, offset: Int, length: Int)], headers: [(String, String)] = [], headOnly: Bool = false) {
        send(status: status, contentType: contentType, pieces: files.map { .file(fd: $0.fd, offset: $0.offset, length: $0.length) }, headers: headers, headOnly: headOnly)
    }

    /// Answers with `pieces` one after the other, the files read as the socket takes them.
    public func send(status: Int, contentType: String?, pieces files: [Piece], headers: [(String, String)] = [], headOnly: Bool = false) {
        guard !connection.isClosed else { return closeFiles(files) }
        let total = files.reduce(0) { $0 + $1.length }
        _ = connection.write(chunks: [Self.head(status: status, contentType: contentType, length: total, headers: headers)[...]])
        if headOnly {
            closeFiles(files)
        } else {
            pieces = files
        }
        connection.onProgress = { [unowned self] _ in self.pump() }
        pump()
    }

    /// Asks for the next chunk while little is queued (one read in flight); closes when all
    /// is written.
    private func pump() {
        while !reading, connection.pendingBytes < Self.chunk, !connection.isClosed {
            guard let first = pieces.first else {
                connection.onProgress = nil
                connection.closeGracefully(within: 2)
                return
            }
            guard case .file(let fd, let offset, let length) = first else {
                if case .bytes(let bytes) = first, !bytes.isEmpty { _ = connection.write(chunks: [bytes[...]]) }
                pieces.removeFirst()
                continue
            }
            reading = true
            // The reply stays alive until its read comes back (its files are closed then).
            reads.read(fd: fd, offset: offset, count: min(Self.chunk, length)) { [self] bytes, _ in
                self.read(bytes, of: (fd, offset, length))
            }
        }
    }

    /// A chunk of the first piece came back: write it and ask for the next.
    private func read(_ bytes: [UInt8], of piece: (fd: Int32, offset: Int, length: Int)) {
        reading = false
        guard !connection.isClosed else { return closeFiles() }
        guard !bytes.isEmpty else {
            // The file shrank under us: the length promised cannot be kept.
            closeFiles()
            connection.close()
            return
        }
        pieces.removeFirst()
        if bytes.count == piece.length {
            closeFiles([.file(fd: piece.fd, offset: 0, length: 0)], keeping: pieces)
        } else {
            pieces.insert(.file(fd: piece.fd, offset: piece.offset + bytes.count, length: piece.length - bytes.count), at: 0)
        }
        _ = connection.write(chunks: [bytes[...]])
        pump()
    }

    private func closeFiles() {
        closeFiles(pieces)
        pieces = []
    }

    /// Closes the descriptors of `files` that no piece of `keeping` still reads (several
    /// pieces may share one).
    private func closeFiles(_ files: [Piece], keeping: [Piece] = []) {
        var seen = Set<Int32>()
        for case .file(let fd, _, _) in keeping { seen.insert(fd) }
        for case .file(let fd, _, _) in files where seen.insert(fd).inserted { _ = Glibc.close(fd) }
    }

    private func closed() {
        if !reading { closeFiles() }  // else when the read in flight comes back
        onClose?()
    }

    /// `Range: bytes=A-B`, `bytes=A-`, `bytes=-N` over `length` bytes: the first and last
    /// byte; nil for no range (or a form not served: several ranges), `.invalid` for one past
    /// the end.
    public enum RangeAnswer: Equatable { case whole, range(Int, Int), invalid }
    public static func range(_ header: String?, length: Int) -> RangeAnswer {
        guard let header, header.hasPrefix("bytes="), !header.contains(",") else { return .whole }
        let spec = header.dropFirst(6).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false).map { $0.trimmingPrefix(" ") }
        guard spec.count == 2 else { return .whole }
        if spec[0].isEmpty {
            guard let n = Int(spec[1]), n > 0, length > 0 else { return .invalid }
            return .range(max(0, length - n), length - 1)
        }
        guard let first = Int(spec[0]), first >= 0 else { return .whole }
        guard first < length else { return .invalid }
        let last = spec[1].isEmpty ? length - 1 : min(Int(spec[1]) ?? length - 1, length - 1)
        return last < first ? .invalid : .range(first, last)
    }
}
