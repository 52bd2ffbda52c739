import EventLoop
import Media
import Relay

/// The WebSocket side of one browser viewer of a `StreamServer`: what makes its reader's
/// bytes one binary message per access unit (`AccessUnitMessage`) instead of raw Annex-B,
/// and what answers the viewer's own frames (`WebSocketReader`: ping → pong, close → its
/// echo, anything else → a close with the reason's code).
///
/// Its connection carries two kinds of items: access units (the `Broadcaster`'s, one in
/// flight at most) and control frames (the `101` answer, pongs, the close), queued behind
/// whatever is being written so a frame is never cut. `finished(items:)` tells the server
/// how many of the items a write finished were access units.
///
/// Every end is a WebSocket close (RFC 6455 section 7.1.1): a close frame behind what is being
/// written, then the connection's graceful close (`Connection.closeGracefully`: half-close,
/// read the viewer's close frame and end of stream, at most `closeTimeout` seconds), never a
/// reset, which would make the browser drop what it had not read and report 1006.
///
/// Loop-owned, like the `Connection` it writes to.
final class WebSocketViewer {
    /// Control frames queued and not written past which a viewer that pings without reading
    /// is closed: its pongs would otherwise pile up without bound.
    static let maxQueuedControlFrames = 32

    private var parser = WebSocketReader()
    private var response: [UInt8]
    private var bytesAfterHead: [UInt8]
    private let bytesSent: Counter
    /// How long an end waits for the viewer's close (`Connection.closeGracefully`).
    private let closeTimeout: Double
    private weak var connection: Connection?
    /// The items queued on the connection, oldest first: true for an access unit.
    private var items: [Bool] = []
    private(set) var isUnitInFlight = false
    /// True once a close frame is queued: nothing more is written, input is ignored.
    private(set) var isClosing = false
    /// Why the viewer ended when it ended itself (its close, a protocol error), for the
    /// `reader-closed` event.
    private(set) var closeReason: String?

    /// A viewer whose upgrade is answered with `response` (the `101`); `bytesAfterHead` are
    /// frames the client sent with its request.
    init(response: [UInt8], bytesAfterHead: [UInt8], bytesSent: Counter, closeTimeout: Double) {
        self.response = response
        self.bytesAfterHead = bytesAfterHead
        self.bytesSent = bytesSent
        self.closeTimeout = closeTimeout
    }

    /// Sends the `101` and starts listening to the viewer's frames; before `connection.start()`.
    func begin(_ connection: Connection) {
        self.connection = connection
        writeControl(response)
        response = []
        connection.onData = { [unowned self] bytes in self.received(bytes) }
        let early = bytesAfterHead
        bytesAfterHead = []
        if !early.isEmpty { early.withUnsafeBytes { received($0) } }
    }

    /// Queues `unit` as one message and writes what the socket takes now.
    func write(_ unit: QueuedAccessUnit) -> Connection.Progress {
        guard let connection else { return Connection.Progress() }
        // The pts is the media time the unit was published with (`consume`'s relay gives
        // its media clock's) or its timestamp SEI's; with neither, its arrival time here.
        let message = AccessUnitMessage(
            isKeyframe: unit.isIDR, captureTimeMicros: unit.accessUnit.timestamp.map { $0.captureTimeNs / 1000 },
            pts90k: unit.pts90k ?? unit.arrivalNs / 100_000 * 9)
        isUnitInFlight = true
        items.append(true)
        return connection.write(chunks: message.frame(unit.nalUnits))
    }

    /// Of `count` items just finished (oldest first), how many were access units.
    func finished(items count: Int) -> Int {
        let done = items.prefix(count)
        items.removeFirst(done.count)
        let units = done.filter { $0 }.count
        if units > 0 { isUnitInFlight = false }
        return units
    }

    /// The stream ended: a close frame (1001, going away) once the queue is written.
    func end() {
        close(WebSocketFrame.close(.goingAway, reason: Self.streamEnded), reason: nil)
    }

    static let streamEnded = "the stream has ended"

    /// Ends a viewer before its queue is written (the drain's time is up, or it made no
    /// progress): the access units not begun are dropped, the one being written goes on, and
    /// the close frame follows it.
    func endNow(_ code: WebSocketCloseCode, reason: String) {
        guard !isClosing, let connection else { return }
        let dropped = connection.dropUnstarted()
        items.removeLast(min(dropped, items.count))
        isUnitInFlight = items.contains(true)
        close(WebSocketFrame.close(code, reason: reason), reason: nil)
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
        guard !isClosing, let connection else { return }
        isClosing = true
        closeReason = reason
        writeControl(frame)
        connection.closeGracefully(within: closeTimeout)
    }

    /// Queues a control frame behind what is queued. Written at once only when nothing was
    /// queued, so what finishes then is this frame alone.
    private func writeControl(_ frame: [UInt8]) {
        guard let connection else { return }
        items.append(false)
        let progress = connection.write(chunks: [frame[...]])
        bytesSent.increment(by: UInt64(progress.bytes))
        _ = finished(items: progress.finishedItems)
    }
}
