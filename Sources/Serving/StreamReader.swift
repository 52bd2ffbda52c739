import IO
import Delivery
import Metrics

/// One reader of a `StreamServer`: a peer, the transport that reaches it and the wire format
/// it gets. What the server needs of a reader, and all it knows of one: the server takes
/// each reader's access units from the `Broadcaster` (its `ReaderQueue`, the one `SkipQueue`
/// policy: join at an IDR, skip to the next when behind, time out) and hands them over one at
/// a time; the reader frames them, writes them to its peer and says what got out.
///
/// Implementations, each in a file of its own: raw Annex-B (`AnnexBReader`) and MPEG-TS
/// (`TransportStreamReader`) readers of a listener's socket, both a `ConnectionReader`, and
/// the browser page's WebSocket viewers (`WebSocketViewer`). The reader owns its transport
/// (a `Connection` for these three): nothing here requires one, so a reader over another
/// transport (UDP, files) is one more implementation.
///
/// Loop-owned: the server calls it on the loop thread, and it calls back there.
protocol StreamReader: AnyObject {
    /// Who the reader is, for `reader-joined`: the peer's address and, for a format that is
    /// not the default, what it is (`127.0.0.1:40000 (mpegts)`).
    var peer: String { get }
    /// Set by the server before `start()`: what a write finished later (the transport took
    /// the rest of it). Set to nil when the reader is ended early: nothing more is counted.
    var onProgress: ((ReaderProgress) -> Void)? { get set }
    /// Set by the server before `start()`: the transport closed, with why (the reader's own
    /// `closeReason` when it ended itself, else the transport's). Called once, on a later
    /// turn of the loop than whatever closed it.
    var onClose: ((String) -> Void)? { get set }

    /// Starts the transport (reading the peer's input, writing any greeting the format has).
    func start()
    /// True when it takes the next access unit now: nothing of the last one still waits to
    /// be written and it is not ending.
    var isReady: Bool { get }
    /// True when it is not ready only because it spaces its writes out (a WebRTC viewer's
    /// `CatchUpPacer`): the server writes to it anyway while its queue is near its bound,
    /// so that pacing never makes it skip to the next IDR.
    var isPacing: Bool { get }
    /// Writes `unit` (the head of its queue, now in flight) and what the transport takes of
    /// it now. Only when `isReady` (or `isPacing`, its queue near its bound).
    func write(_ unit: QueuedAccessUnit) -> ReaderProgress
    /// The stream ended and everything queued was written: ends the stream its format's way
    /// (an end of sequence, a close frame) and closes gracefully.
    func end()
    /// Ends before its queue is written (the drain's time is up, or it made no progress):
    /// what was not begun is dropped, what is being written goes on, then the stream's end as
    /// `ending` says and a graceful close within the server's `closeTimeout`.
    func endNow(_ ending: ReaderEnding)
    /// The transport is closed: nothing more is written or reported but `onClose`.
    var isClosed: Bool { get }
    /// Why the reader ended itself (a viewer's close, a protocol error), for `reader-closed`;
    /// nil when it did not.
    var closeReason: String? { get }
}

extension StreamReader {
    /// Readers that do not pace: not ready is their transport's.
    var isPacing: Bool { false }
}

/// What writes to a reader finished.
struct ReaderProgress {
    /// Bytes the transport took.
    var bytes = 0
    /// Access units now written whole (the `Broadcaster`'s: its queue's head pops).
    var units = 0
    /// Everything the transport finished: access units and the reader's own messages (a
    /// viewer's pongs). The server writes more when any finished.
    var items = 0
}

/// Why the server ends a reader before its queue is written.
enum ReaderEnding {
    /// The stream ended and the drain's time is up.
    case streamEnded
    /// The reader made no progress for the reader timeout: `reason` says so.
    case stalled(reason: String)
}

/// What a server gives each reader it makes.
struct ReaderContext {
    let loop: EventLoop
    /// How long an ended transport waits for its peer's end (`Connection.closeGracefully`).
    let closeTimeout: Double
    /// For what a reader writes on its own (a viewer's `101` and control frames); what it
    /// writes of access units the server counts from `ReaderProgress`.
    let bytesSent: Counter
}
