import IO
import Delivery

/// A reader whose transport is one `Connection`, a TCP or unix socket a listener accepted,
/// and whose access units go out as bytes its format makes of them: what the Annex-B reader
/// (`AnnexBReader`) and the MPEG-TS reader (`TransportStreamReader`) share. Each subclass is
/// its format: `frame(_:)` (one item on the connection per access unit) and `closing()`.
///
/// Every end is a graceful close (`Connection.closeGracefully`), never a reset. Loop-owned,
/// like its connection; the server keeps it until the connection closed.
class ConnectionReader: StreamReader {
    /// An access unit's bytes for one reader (`frame(_:)`).
    enum FramedUnit {
        /// Bytes of the reader's own (its first access unit, its continuity counters).
        case own([ArraySlice<UInt8>])
        /// The bytes every reader in step with the stream gets, the `iovec` list of their
        /// gathered write made once for all of them.
        case shared(SharedWrite)
    }

    let peer: String
    final var onProgress: ((ReaderProgress) -> Void)?
    final var onClose: ((String) -> Void)?
    private let connection: Connection
    private let closeTimeout: Double

    init(_ socket: Socket, peer: String, _ context: ReaderContext) {
        // Small kernel buffers: lag must show in our queue, where it can be skipped.
        try? socket.configureForStreaming()
        connection = Connection(loop: context.loop, socket: socket)
        self.peer = peer
        closeTimeout = context.closeTimeout
        // One item per access unit: what finishes is access units.
        connection.onProgress = { [unowned self] progress in
            self.onProgress?(ReaderProgress(bytes: progress.bytes, units: progress.finishedItems, items: progress.finishedItems))
        }
        connection.onClose = { [unowned self] reason in self.onClose?(reason.description) }
    }

    /// The bytes of `unit` for this reader, next after what it was sent before (no bytes for
    /// a unit its format left out): its own, or the write every reader in step shares. The
    /// subclass's.
    func frame(_ unit: QueuedAccessUnit) -> FramedUnit {
        preconditionFailure("\(Self.self) does not frame access units")
    }

    /// What ends the stream behind the last unit sent (Annex-B's end of sequence); nil when
    /// the format's stream just ends.
    func closing() -> [ArraySlice<UInt8>]? { nil }

    final func start() { connection.start() }

    /// A connection whose write just failed is closed (and idle) before it says so on the
    /// loop's next turn; its in-flight access unit stays unfinished until then.
    final var isReady: Bool { !connection.isClosed && connection.isIdle }
    final var isClosed: Bool { connection.isClosed }
    final var closeReason: String? { nil }

    final func write(_ unit: QueuedAccessUnit) -> ReaderProgress {
        let progress = switch frame(unit) {
        case .own(let chunks): connection.write(chunks: chunks)
        case .shared(let shared): connection.write(shared: shared)
        }
        return ReaderProgress(bytes: progress.bytes, units: progress.finishedItems, items: progress.finishedItems)
    }

    final func end() {
        if let closing = closing() { connection.write(chunks: closing) }
        connection.closeGracefully(within: closeTimeout)
    }

    final func endNow(_ ending: ReaderEnding) {
        guard !connection.isClosed else { return }
        if !connection.isEnding {
            connection.dropUnstarted()
            // After the access unit being written (an end of sequence alone is no stream).
            if connection.bytesSent > 0, let closing = closing() { connection.write(chunks: closing) }
        }
        connection.closeGracefully(within: closeTimeout)
    }
}
