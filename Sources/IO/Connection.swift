#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One connected socket on the loop: writes queued items (an access unit, an HTTP response)
/// with gathered writes (`GatheredWrite`) straight from the shared buffers, and reads whatever the peer sends.
///
/// Writing: `write(_:)` queues an item (a list of byte slices, e.g. the NAL units of one access
/// unit, never copied) and writes at once as much as the socket takes. The rest goes out when
/// the socket is writable; the connection watches writability only while it has something
/// queued, and reports progress (bytes, items finished) through `onProgress`.
///
/// Reading: with `onData` set, bytes go there (the HTTP server in Serving). Without it the peer
/// is a stream reader, which should not send: bytes are counted and discarded, and past
/// `discardLimit` the connection closes.
///
/// Closing: end of stream, an error, or too much input close the connection and call
/// `onClose` once, always from a watcher callback, never from inside `write` or `close`.
/// `close()` itself reports nothing. `closeGracefully(within:)` is the end without a reset:
/// the peer gets everything, then the end of the stream, and the socket closes only once the
/// peer has said its last word (or the time is up).
///
/// Transport: the bytes cross the socket through a `ByteTransport`, the socket itself by
/// default (`PlainTransport`), or TLS; everything above (the queue, the ends) is the same.
/// An HTTP connection that becomes a WebSocket is handed over whole (`pauseReading`, then
/// its new owner sets the callbacks and calls `start()`), its transport with it.
///
/// Loop-owned: use it and release it on the loop thread.
public final class Connection {
    /// Why a connection closed.
    public enum CloseReason: Sendable, Hashable, CustomStringConvertible {
        /// The peer closed its side (end of stream).
        case peerClosed
        /// A read or write failed (`sendmsg: Connection reset by peer`).
        case error(Errno)
        /// A stream reader sent more than the connection discards.
        case sentTooMuch(bytes: Int)
        /// `closeAfterFlush()` was asked and everything was written; or `closeGracefully`
        /// ended (the peer's end of stream, or its time up).
        case finished

        public var description: String {
            switch self {
            case .peerClosed: "closed by peer"
            case .error(let errno): errno.description
            case .sentTooMuch(let bytes): "reader sent \(bytes) bytes"
            case .finished: "finished"
            }
        }
    }

    /// What a write attempt achieved.
    public struct Progress: Sendable, Equatable {
        public var bytes = 0
        /// Items (calls to `write`) now completely written.
        public var finishedItems = 0
        public init(bytes: Int = 0, finishedItems: Int = 0) {
            self.bytes = bytes
            self.finishedItems = finishedItems
        }
    }

    private let loop: EventLoop
    public let socket: Socket
    public let discardLimit: Int
    /// How bytes cross the socket.
    public let transport: any ByteTransport
    private var reader: IOWatcher?
    /// `pauseReading()` was asked: the next `start()` reads again.
    private var readingPaused = false
    /// Reads what the transport holds on the loop's next turn.
    private var pendingRead: LoopTimer?
    private var writer: IOWatcher?
    private var closer: LoopTimer?

    /// Queued slices; `chunkHead` is the first not fully written, `chunkOffset` bytes into it.
    private var chunks: [ArraySlice<UInt8>] = []
    private var chunkHead = 0
    private var chunkOffset = 0
    /// For each queued item, the index into `chunks` one past its last slice.
    private var itemEnds: [Int] = []
    private var itemHead = 0
    private var closeWhenFlushed = false
    /// Whether the first item not finished has had bytes written (it cannot be dropped):
    /// the write position is past the start of its chunks.
    private var headStarted: Bool {
        guard itemHead < itemEnds.count else { return false }
        let start = itemHead > 0 ? itemEnds[itemHead - 1] : 0
        return chunkHead > start || chunkOffset > 0
    }
    /// Set by `closeGracefully`: once flushed, half-close instead of closing.
    private var lingers = false
    /// Half-closed (`shutdown(SHUT_WR)`): reading until the peer's end of stream.
    public private(set) var isHalfClosed = false
    /// `closeGracefully` was asked: nothing more is written, the end is under way.
    public var isEnding: Bool { lingers }
    /// `closeGracefully`'s bound.
    private var lingerDeadline: LoopTimer?

    public private(set) var pendingBytes = 0
    public private(set) var bytesSent = 0
    public private(set) var bytesReceived = 0
    public private(set) var isClosed = false

    public var onProgress: ((Progress) -> Void)?
    public var onClose: ((CloseReason) -> Void)?
    public var onData: ((UnsafeRawBufferPointer) -> Void)?

    /// Takes over a connected, non-blocking socket, its bytes through `transport` (nil: as
    /// they are). Call `start()` to begin reading.
    public init(loop: EventLoop, socket: Socket, transport: (any ByteTransport)? = nil, discardLimit: Int = 64 << 10) {
        loop.preconditionOnLoop()
        self.loop = loop
        self.socket = socket
        self.transport = transport ?? PlainTransport(socket)
        self.discardLimit = discardLimit
    }

    /// Starts watching for input (and end of stream), again after `pauseReading()`.
    public func start() {
        loop.preconditionOnLoop()
        guard !isClosed else { return }
        readingPaused = false
        if reader == nil {
            reader = IOWatcher(loop: loop, fd: socket.fd, events: .read) { [unowned self] _ in self.readAvailable() }
        }
        reader?.start()
        // What a layer already took from the socket would wait for input that never comes.
        if transport.hasBufferedInput { readSoon() }
    }

    /// Stops reading until `start()`: for a connection about to change owners, so that no
    /// byte reaches the old owner's `onData` or none at all.
    public func pauseReading() {
        loop.preconditionOnLoop()
        readingPaused = true
        reader?.stop()
    }

    /// Items queued and not completely written yet.
    public var pendingItems: Int { itemEnds.count - itemHead }
    /// True when nothing is waiting to be written.
    public var isIdle: Bool { pendingItems == 0 }

    /// Queues one item made of `chunks` and writes what the socket takes now. An item with no
    /// bytes counts as finished at once. After a close (or `closeGracefully`), nothing is queued.
    @discardableResult
    public func write(chunks newChunks: [ArraySlice<UInt8>]) -> Progress {
        loop.preconditionOnLoop()
        guard !isClosed, !lingers else { return Progress() }
        if isIdle, let progress = writeWhole(newChunks) { return progress }
        return queue(newChunks)
    }

    /// Queues one item that was not written whole at once, and writes what the socket takes
    /// of it now when nothing was queued before it.
    private func queue(_ newChunks: [ArraySlice<UInt8>]) -> Progress {
        let wasIdle = isIdle
        var added = 0
        for chunk in newChunks where !chunk.isEmpty {
            chunks.append(chunk)
            added += chunk.count
        }
        itemEnds.append(chunks.count)
        pendingBytes += added
        guard wasIdle else { return Progress() }
        return flush()
    }

    /// `write(chunks: shared.slices)`, with the `iovec` list made once for every connection
    /// that writes the same bytes (`SharedWrite`): an idle connection's transport takes the
    /// list as it is (a plain socket's `sendmsg`), else the slices are queued as usual.
    @discardableResult
    public func write(shared: SharedWrite) -> Progress {
        guard shared.isShared else { return write(chunks: shared.slices) }
        loop.preconditionOnLoop()
        guard !isClosed, !lingers else { return Progress() }
        if isIdle, let progress = writeWhole(shared.slices, total: shared.byteCount, by: { () throws(Errno) in try transport.write(shared) }) {
            return progress
        }
        return queue(shared.slices)
    }

    /// Closes once everything queued is written (at once if nothing is), then reports
    /// `.finished`.
    public func closeAfterFlush() {
        loop.preconditionOnLoop()
        closeWhenFlushed = true
        if isIdle { closeSoon(.finished) }
    }

    /// Ends without a reset. Once everything queued is written, half-closes (`shutdown`
    /// with `SHUT_WR`: the peer reads all of it, then its end of stream), then goes on reading
    /// what the peer still sends (to `onData`, else discarded) until its end of stream, and
    /// closes, reporting `.finished`. Closing a socket with unread input, or one that input
    /// then reaches, makes the kernel send a reset, and a peer that gets a reset drops what it
    /// had not read yet (a browser reports the WebSocket as closed abnormally, 1006).
    ///
    /// At most `seconds` from now in all, for a peer that neither reads nor closes (the loop
    /// never waits: a timer): then what arrived is read and the socket closes all the same.
    /// A second call changes nothing.
    public func closeGracefully(within seconds: Double) {
        loop.preconditionOnLoop()
        guard !isClosed, !lingers else { return }
        lingers = true
        closeWhenFlushed = true
        let deadline = LoopTimer(loop: loop) { [unowned self] in self.lingerEnded() }
        lingerDeadline = deadline
        deadline.start(after: seconds)
        start()
        if isIdle { halfClose() }
    }

    /// Drops the items not begun yet; the one being written, if any, stays queued (a frame
    /// is never cut). For a reader ended early. Returns how many were dropped. Nothing is
    /// dropped while the transport must finish a write with the same bytes (TLS after a
    /// would-block, which may span items): the end then waits behind the whole queue, still
    /// bounded by `closeGracefully`.
    @discardableResult
    public func dropUnstarted() -> Int {
        loop.preconditionOnLoop()
        guard !transport.hasPendingWrite else { return 0 }
        let keep = itemHead + (headStarted ? 1 : 0)
        let dropped = itemEnds.count - keep
        guard dropped > 0, !isClosed else { return 0 }
        let firstDropped = keep > 0 ? itemEnds[keep - 1] : 0
        pendingBytes -= chunks[firstDropped...].reduce(0) { $0 + $1.count }
        chunks.removeSubrange(firstDropped...)
        itemEnds.removeSubrange(keep...)
        if isIdle {
            writer?.stop()
            compact()
        }
        return dropped
    }

    /// Closes now, dropping what is queued. Reports nothing.
    public func close() {
        loop.preconditionOnLoop()
        shutDown()
        closer = nil
    }

    // MARK: - Writing

    /// The usual case of a reader that keeps up: nothing is queued and the socket takes the
    /// whole item in one gathered write, straight from the caller's slices, so nothing is
    /// queued (no slice is kept, no queue grows and shrinks) for each item. Nil when that is
    /// not so (an empty slice, a transport finishing a write, the socket full): the item is
    /// queued and written as usual. A write that got only part out queues the rest.
    private func writeWhole(_ newChunks: [ArraySlice<UInt8>]) -> Progress? {
        var total = 0
        for chunk in newChunks {
            if chunk.isEmpty { return nil }
            total += chunk.count
        }
        return writeWhole(newChunks, total: total) { () throws(Errno) in try transport.write(newChunks, from: SliceCursor()) }
    }

    /// `writeWhole` of `total` bytes (`newChunks`, none of them empty) by `write`, the
    /// transport's call for them.
    private func writeWhole(_ newChunks: [ArraySlice<UInt8>], total: Int, by write: () throws(Errno) -> IOResult<Int>) -> Progress? {
        guard total > 0, !closeWhenFlushed, !transport.hasPendingWrite, !transport.writeNeedsReadable, !transport.readNeedsWritable else { return nil }
        let written: Int
        do {
            guard case .done(let n) = try write() else { return nil }
            written = n
        } catch {
            closeSoon(.error(error))
            return Progress()
        }
        if written == total {
            bytesSent += written
            return Progress(bytes: written, finishedItems: 1)
        }
        // Part of it: the rest waits in the queue for the socket to take it.
        chunks.append(contentsOf: newChunks)
        itemEnds.append(chunks.count)
        pendingBytes += total
        _ = advance(by: written)
        var progress = flush()
        progress.bytes += written
        return progress
    }

    private func flush() -> Progress {
        var progress = Progress()
        // Items with no bytes are finished before anything is written.
        progress.finishedItems += finishEmptyItems()
        while chunkHead < chunks.count && !isClosed {
            let result: IOResult<Int>
            do {
                result = try transport.write(chunks, from: SliceCursor(index: chunkHead, offset: chunkOffset))
            } catch {
                closeSoon(.error(error))
                break
            }
            guard case .done(let written) = result else { break }
            progress.finishedItems += advance(by: written)
            progress.bytes += written
            compact()
        }
        if (chunkHead < chunks.count && !transport.writeNeedsReadable || transport.readNeedsWritable) && !isClosed {
            watchWritable()
        } else if chunkHead < chunks.count && !isClosed {
            // The reader's watcher retries the write once the socket is readable.
            writer?.stop()
        } else {
            writer?.stop()
            compact()
            if closeWhenFlushed && !isClosed {
                if lingers { halfClose() } else { closeSoon(.finished) }
            }
        }
        return progress
    }

    /// Moves the write position by `bytes`; returns the items finished.
    private func advance(by bytes: Int) -> Int {
        pendingBytes -= bytes
        bytesSent += bytes
        var cursor = SliceCursor(index: chunkHead, offset: chunkOffset)
        cursor.advance(by: bytes, in: chunks)
        chunkHead = cursor.index
        chunkOffset = cursor.offset
        return finishEmptyItems()
    }

    /// Counts the items whose slices are all written (and those with no slices).
    private func finishEmptyItems() -> Int {
        var finished = 0
        while itemHead < itemEnds.count && itemEnds[itemHead] <= chunkHead {
            itemHead += 1
            finished += 1
        }
        return finished
    }

    private func compact() {
        guard itemHead == itemEnds.count else {
            // A connection that is never idle must not keep every slice it ever wrote.
            if chunkHead >= 64 && chunkHead * 2 >= chunks.count {
                chunks.removeFirst(chunkHead)
                itemEnds.removeFirst(itemHead)
                for i in itemEnds.indices { itemEnds[i] -= chunkHead }
                chunkHead = 0
                itemHead = 0
            }
            return
        }
        chunks.removeAll(keepingCapacity: true)
        itemEnds.removeAll(keepingCapacity: true)
        chunkHead = 0
        chunkOffset = 0
        itemHead = 0
    }

    private func watchWritable() {
        if writer == nil {
            writer = IOWatcher(loop: loop, fd: socket.fd, events: .write) { [unowned self] _ in self.writable() }
        }
        if writer?.isActive == false { writer?.start() }
    }

    private func writable() {
        if transport.readNeedsWritable {
            readAvailable()
            if !transport.readNeedsWritable && isIdle { writer?.stop() }
        }
        guard !isClosed, !isIdle else { return }
        let progress = flush()
        if progress.bytes > 0 || progress.finishedItems > 0 { onProgress?(progress) }
    }

    // MARK: - Reading

    private func readAvailable() {
        let writeWaited = transport.writeNeedsReadable
        withUnsafeTemporaryAllocation(byteCount: 16 << 10, alignment: 16) { buffer in
            // A bounded number of reads per wake-up: one chatty peer must not starve the loop.
            for _ in 0..<16 where !isClosed && !readingPaused {
                let n: Int?
                do throws(Errno) {
                    n = try transport.read(into: buffer)
                } catch {
                    finish(.error(error))
                    return
                }
                guard let n else { return afterRead(writeWaited) }
                if n == 0 {
                    finish(isHalfClosed ? .finished : .peerClosed)
                    return
                }
                bytesReceived += n
                if let onData {
                    onData(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                } else if bytesReceived > discardLimit {
                    finish(.sentTooMuch(bytes: bytesReceived))
                    return
                }
            }
            afterRead(writeWaited)
        }
    }

    /// A layer's read may have unblocked a write (a handshake done), or may itself wait for
    /// the socket to be writable; what it keeps buffered is read on the loop's next turn.
    private func afterRead(_ writeWaited: Bool) {
        guard !isClosed, !readingPaused else { return }
        if transport.readNeedsWritable { watchWritable() }
        if writeWaited && !isIdle && !isHalfClosed {
            let progress = flush()
            if progress.bytes > 0 || progress.finishedItems > 0 { onProgress?(progress) }
        }
        if transport.hasBufferedInput { readSoon() }
    }

    private func readSoon() {
        if pendingRead == nil { pendingRead = LoopTimer(loop: loop) { [unowned self] in self.readAvailable() } }
        if pendingRead?.isActive == false { pendingRead?.start(after: 0) }
    }

    // MARK: - Closing

    /// Everything is written: the end of our stream, then wait for the peer's.
    private func halfClose() {
        guard !isHalfClosed, !isClosed else { return }
        isHalfClosed = true
        writer?.stop()
        do throws(Errno) {
            try transport.shutdownWrite()
        } catch {
            closeSoon(.error(error))
        }
    }

    /// `closeGracefully`'s time is up: take what arrived (so that closing sends no reset for
    /// it), then close.
    private func lingerEnded() {
        guard !isClosed else { return }
        withUnsafeTemporaryAllocation(byteCount: 16 << 10, alignment: 16) { buffer in
            for _ in 0..<64 {
                guard let n = try? socket.read(into: buffer), n > 0 else { break }
                bytesReceived += n
            }
        }
        finish(.finished)
    }

    /// Closes now and reports from the loop's next iteration (we may be inside `write`).
    private func closeSoon(_ reason: CloseReason) {
        guard !isClosed else { return }
        shutDown()
        let timer = LoopTimer(loop: loop) { [unowned self] in
            self.closer = nil
            self.onClose?(reason)
        }
        closer = timer
        timer.start(after: 0)
    }

    /// Closes now and reports at once (we are in a watcher callback).
    private func finish(_ reason: CloseReason) {
        guard !isClosed else { return }
        shutDown()
        onClose?(reason)
    }

    private func shutDown() {
        guard !isClosed else { return }
        isClosed = true
        reader?.stop()
        writer?.stop()
        reader = nil
        writer = nil
        lingerDeadline?.stop()
        lingerDeadline = nil
        pendingRead?.stop()
        socket.close()
        chunks.removeAll()
        itemEnds.removeAll()
        chunkHead = 0
        chunkOffset = 0
        itemHead = 0
        pendingBytes = 0
    }
}
