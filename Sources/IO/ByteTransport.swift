/// How a `Connection`'s bytes cross its socket: as they are (`PlainTransport`, the default),
/// or through a layer such as TLS (`TLSTransport`, in the TLS module) that reads and writes
/// the socket itself. The connection keeps its queue, its watchers and its ends (flush,
/// half-close, graceful close) whatever the transport; the transport only moves bytes.
///
/// A layer may need the other direction to make progress: a TLS handshake that a write
/// started must read the peer's answer, a read may have to write. It says so
/// (`writeNeedsReadable`, `readNeedsWritable`) and the connection retries the stalled
/// direction when the socket is ready the other way.
///
/// Loop-owned, like its connection.
public protocol ByteTransport: AnyObject {
    /// Reads into `buffer`: the byte count, 0 at the peer's end of stream, nil when nothing
    /// can be read now.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int?
    /// Writes what it takes of `slices` from `cursor` on (the same slices from the same
    /// cursor after a `.wouldBlock`: a layer may have to retry exactly what it began).
    func write(_ slices: [ArraySlice<UInt8>], from cursor: SliceCursor) throws(Errno) -> IOResult<Int>
    /// Writes what it takes of `shared`'s slices from their start: a plain socket sends its
    /// `iovec` list as it is, a layer writes the slices its own way (the default).
    func write(_ shared: SharedWrite) throws(Errno) -> IOResult<Int>
    /// Ends our side: the peer reads everything, then its end of stream.
    func shutdownWrite() throws(Errno)
    /// The last read stopped until the socket is writable.
    var readNeedsWritable: Bool { get }
    /// The last write stopped until the socket is readable.
    var writeNeedsReadable: Bool { get }
    /// Bytes already taken from the socket and not read yet (a TLS record's rest): the
    /// socket's readiness will not say so.
    var hasBufferedInput: Bool { get }
    /// A write was begun and must be finished with the same bytes (TLS after a would-block):
    /// nothing queued may be dropped meanwhile.
    var hasPendingWrite: Bool { get }
}

extension ByteTransport {
    public func write(_ shared: SharedWrite) throws(Errno) -> IOResult<Int> {
        try write(shared.slices, from: SliceCursor())
    }
}

/// The socket as it is: gathered writes (`sendmsg`), plain reads.
public final class PlainTransport: ByteTransport {
    private let socket: Socket

    public init(_ socket: Socket) { self.socket = socket }

    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int? {
        try socket.read(into: buffer)
    }

    public func write(_ slices: [ArraySlice<UInt8>], from cursor: SliceCursor) throws(Errno) -> IOResult<Int> {
        try GatheredWrite.write(slices, from: cursor, to: .socket(socket.fd))
    }

    public func write(_ shared: SharedWrite) throws(Errno) -> IOResult<Int> {
        guard shared.isShared else { return try write(shared.slices, from: SliceCursor()) }
        return try shared.send(to: socket.fd)
    }

    public func shutdownWrite() throws(Errno) { try socket.shutdownWrite() }

    public var readNeedsWritable: Bool { false }
    public var writeNeedsReadable: Bool { false }
    public var hasBufferedInput: Bool { false }
    public var hasPendingWrite: Bool { false }
}
