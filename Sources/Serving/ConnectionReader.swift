import EventLoop
import Relay

/// How a byte-stream reader puts access units on its connection: one per wire format
/// (`AnnexBFraming`, `TransportStreamFraming`), one value per reader, so it may keep what
/// the reader was sent before (a delimiter owed, continuity counters).
protocol ByteFraming {
    /// Follows the peer's address in `reader-joined` (` (mpegts)`); empty for none.
    static var peerTag: String { get }
    init()
    /// The bytes of `unit` for this reader, next after what it was sent before: one item on
    /// the connection (no bytes for a unit this format left out).
    mutating func frame(_ unit: QueuedAccessUnit) -> [ArraySlice<UInt8>]
    /// What ends the stream behind the last unit sent (Annex-B's end of sequence); nil when
    /// the format's stream just ends.
    func closing() -> [ArraySlice<UInt8>]?
}

/// A reader whose transport is one `Connection`, a TCP or unix socket a listener accepted,
/// and whose access units go out as the bytes `Framing` makes of them: the Annex-B reader
/// (`AnnexBReader`) and the MPEG-TS reader (`TransportStreamReader`).
///
/// Every end is a graceful close (`Connection.closeGracefully`), never a reset. Loop-owned,
/// like its connection; the server keeps it until the connection closed.
final class ConnectionReader<Framing: ByteFraming>: StreamReader {
    let peer: String
    var onProgress: ((ReaderProgress) -> Void)?
    var onClose: ((String) -> Void)?
    private let connection: Connection
    private var framing = Framing()
    private let closeTimeout: Double

    init(_ socket: Socket, peer: String, _ context: ReaderContext) {
        // Small kernel buffers: lag must show in our queue, where it can be skipped.
        try? socket.configureForStreaming()
        connection = Connection(loop: context.loop, socket: socket)
        self.peer = peer + Framing.peerTag
        closeTimeout = context.closeTimeout
        // One item per access unit: what finishes is access units.
        connection.onProgress = { [unowned self] progress in
            self.onProgress?(ReaderProgress(bytes: progress.bytes, units: progress.finishedItems, items: progress.finishedItems))
        }
        connection.onClose = { [unowned self] reason in self.onClose?(reason.description) }
    }

    func start() { connection.start() }

    /// A connection whose write just failed is closed (and idle) before it says so on the
    /// loop's next turn; its in-flight access unit stays unfinished until then.
    var isReady: Bool { !connection.isClosed && connection.isIdle }
    var isClosed: Bool { connection.isClosed }
    var closeReason: String? { nil }

    func write(_ unit: QueuedAccessUnit) -> ReaderProgress {
        let progress = connection.write(chunks: framing.frame(unit))
        return ReaderProgress(bytes: progress.bytes, units: progress.finishedItems, items: progress.finishedItems)
    }

    func end() {
        if let closing = framing.closing() { connection.write(chunks: closing) }
        connection.closeGracefully(within: closeTimeout)
    }

    func endNow(_ ending: ReaderEnding) {
        guard !connection.isClosed else { return }
        if !connection.isEnding {
            connection.dropUnstarted()
            // After the access unit being written (an end of sequence alone is no stream).
            if connection.bytesSent > 0, let closing = framing.closing() { connection.write(chunks: closing) }
        }
        connection.closeGracefully(within: closeTimeout)
    }
}
