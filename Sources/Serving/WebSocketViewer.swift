import IO
import Media
import Delivery
import Metrics

/// One browser viewer of a `StreamServer`, a `StreamReader`: its access units go out as one
/// binary WebSocket message each (`AccessUnitMessage`) instead of raw Annex-B, and it answers
/// the viewer's own frames (`WebSocketReader`: ping → pong, close → its echo, anything else
/// → a close with the reason's code). The server makes it for an upgrade of `GET /ws` that
/// it took over from the `HTTPServer` (`StreamServer.acceptViewer`).
///
/// Its connection carries two kinds of items: access units (the `Broadcaster`'s, one in
/// flight at most) and control frames (the `101` answer, pongs, the close), queued behind
/// whatever is being written so a frame is never cut. What it reports as `units` of its
/// progress are the former alone.
///
/// Every end is a WebSocket close (RFC 6455 section 7.1.1): a close frame behind what is being
/// written, then the connection's graceful close (`Connection.closeGracefully`: half-close,
/// read the viewer's close frame and end of stream, at most `closeTimeout` seconds), never a
/// reset, which would make the browser drop what it had not read and report 1006.
///
/// Loop-owned, like the `Connection` it owns.
final class WebSocketViewer: StreamReader {
    /// Control frames queued and not written past which a viewer that pings without reading
    /// is closed: its pongs would otherwise pile up without bound.
    static let maxQueuedControlFrames = 32
    /// The reason of the close frame (1001) that ends a viewer when the stream ended.
    static let streamEnded = "the stream has ended"

    let peer: String
    var onProgress: ((ReaderProgress) -> Void)?
    var onClose: ((String) -> Void)?
    private let connection: Connection
    private var parser = WebSocketReader()
    private var response: [UInt8]
    private var bytesAfterHead: [UInt8]
    private let bytesSent: Counter
    /// How long an end waits for the viewer's close (`Connection.closeGracefully`).
    private let closeTimeout: Double
    /// The items queued on the connection, oldest first: true for an access unit.
    private var items: [Bool] = []
    private(set) var isUnitInFlight = false
    /// True once a close frame is queued: nothing more is written, input is ignored.
    private(set) var isClosing = false
    /// Why the viewer ended when it ended itself (its close, a protocol error), for the
    /// `reader-closed` event.
    private(set) var closeReason: String?

    /// A viewer on `connection` (taken over from the HTTP server, its transport with it) whose upgrade is answered with `response` (the `101`);
    /// `bytesAfterHead` are frames the client sent with its request.
    init(_ connection: Connection, peer: String, response: [UInt8], bytesAfterHead: [UInt8], _ context: ReaderContext) {
        // Small kernel buffers: lag must show in our queue, where it can be skipped.
        try? connection.socket.configureForStreaming()
        self.connection = connection
        self.peer = peer
        self.response = response
        self.bytesAfterHead = bytesAfterHead
        self.bytesSent = context.bytesSent
        self.closeTimeout = context.closeTimeout
        connection.onProgress = { [unowned self] progress in
            let units = self.finished(items: progress.finishedItems)
            self.onProgress?(ReaderProgress(bytes: progress.bytes, units: units, items: progress.finishedItems))
        }
        connection.onClose = { [unowned self] reason in self.onClose?(self.closeReason ?? reason.description) }
    }

    /// Sends the `101`, starts listening to the viewer's frames and reads the connection.
    func start() {
        writeControl(response)
        response = []
        connection.onData = { [unowned self] bytes in self.received(bytes) }
        let early = bytesAfterHead
        bytesAfterHead = []
        if !early.isEmpty { early.withUnsafeBytes { received($0) } }
        connection.start()
    }

    var isReady: Bool { !isClosing && !isUnitInFlight }
    var isClosed: Bool { connection.isClosed }

    /// Queues `unit` as one message and writes what the socket takes now.
    func write(_ unit: QueuedAccessUnit) -> ReaderProgress {
        // The pts is the media time the unit was published with (`consume`'s relay gives
        // its media clock's) or its timestamp SEI's; with neither, its arrival time here.
        let message = AccessUnitMessage(
            isKeyframe: unit.isIDR, captureTimeMicros: unit.accessUnit.timestamp.map { $0.captureTimeNs / 1000 },
            pts90k: unit.pts90k ?? unit.arrivalNs / 100_000 * 9)
        isUnitInFlight = true
        items.append(true)
        let progress = connection.write(chunks: message.frame(unit.nalUnits))
        return ReaderProgress(bytes: progress.bytes, units: finished(items: progress.finishedItems), items: progress.finishedItems)
    }

    /// The stream ended: a close frame (1001, going away) once the queue is written.
    func end() {
        close(WebSocketFrame.close(.goingAway, reason: Self.streamEnded), reason: nil)
    }

    /// The access units not begun are dropped, the one being written goes on, and the close
    /// frame follows it: 1001 for the stream's end, 1008 for a viewer that made no progress.
    func endNow(_ ending: ReaderEnding) {
        if !isClosing && !connection.isClosed {
            let dropped = connection.dropUnstarted()
            items.removeLast(min(dropped, items.count))
            isUnitInFlight = items.contains(true)
            switch ending {
            case .streamEnded: close(WebSocketFrame.close(.goingAway, reason: Self.streamEnded), reason: nil)
            case .stalled(let reason): close(WebSocketFrame.close(.policyViolation, reason: reason), reason: nil)
            }
        }
        connection.closeGracefully(within: closeTimeout)
    }

    /// Of `count` items just finished (oldest first), how many were access units.
    private func finished(items count: Int) -> Int {
        let done = items.prefix(count)
        items.removeFirst(done.count)
        let units = done.filter { $0 }.count
        if units > 0 { isUnitInFlight = false }
        return units
    }

    private func received(_ bytes: UnsafeRawBufferPointer) {
        guard !isClosing else { return }
        for event in parser.push(bytes) {
            switch event {
            case .message:
                // The parser rejects data messages (a close with 1003): none is delivered.
                break
            case .send(let frame):
                guard items.count < WebSocketViewer.maxQueuedControlFrames else {
                    return close(WebSocketFrame.close(.policyViolation, reason: "pings not read"), reason: "websocket: pings not read")
                }
                writeControl(frame)
            case .close(let code, let reply, let failure):
                let why = failure.map { "websocket: \($0.reason) (\($0.code.rawValue))" } ?? "closed by viewer (\(code.map(String.init) ?? "no code"))"
                return close(reply, reason: why)
            }
        }
    }

    private func close(_ frame: [UInt8], reason: String?) {
        guard !isClosing else { return }
        isClosing = true
        closeReason = reason
        writeControl(frame)
        connection.closeGracefully(within: closeTimeout)
    }

    /// Queues a control frame behind what is queued. Written at once only when nothing was
    /// queued, so what finishes then is this frame alone.
    private func writeControl(_ frame: [UInt8]) {
        items.append(false)
        let progress = connection.write(chunks: [frame[...]])
        bytesSent.increment(by: UInt64(progress.bytes))
        _ = finished(items: progress.finishedItems)
    }
}
