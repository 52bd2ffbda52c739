import IO
import Glibc
import LoopTestSupport
import XCTest

/// `Connection.closeGracefully` and `dropUnstarted`: the end a WebSocket viewer (and every
/// reader) gets. A client that sent bytes the server never looked at, before and during the
/// end, still reads everything up to the end of stream, and what it sends after that (a
/// browser's answer to a close frame) meets a socket still open: no reset.
final class GracefulCloseTests: XCTestCase {
    func testAnEndedReaderGetsTheItemBeingWrittenThenTheEndOfStreamWithoutAReset() throws {
        let loop = EventLoop()
        let keep = Keep()
        let first = [UInt8](repeating: 1, count: 1 << 20)
        let closing: [UInt8] = Array("the end".utf8)
        let dropped = Shared(-1)
        let reason = Shared<Connection.CloseReason?>(nil)
        let listener = try Listener(loop: loop, endpoint: .tcp(host: "127.0.0.1", port: 0)) { socket in
            try? socket.configureForStreaming()
            let connection = Connection(loop: loop, socket: socket)
            keep.objects.append(connection)
            connection.onClose = { r in
                reason.update { $0 = r }
                loop.stop()
            }
            connection.start()
            // The client reads nothing yet: the first item is cut short, the second not begun.
            connection.write(chunks: [first[...]])
            connection.write(chunks: [[UInt8](repeating: 2, count: 1 << 20)[...]])
            let count = connection.dropUnstarted()
            connection.write(chunks: [closing[...]])
            connection.closeGracefully(within: 30)
            dropped.update { $0 = count }
        }
        keep.objects.append(listener)
        listener.start()
        loop.start()

        let address = try SocketAddress.resolve(listener.boundEndpoint)[0]
        let client = try Socket(family: address.family)
        try client.setOption(level: SOL_SOCKET, name: SO_RCVBUF, value: 4096)
        try client.setBlocking(true)
        // A server that never ends fails the test (EAGAIN) instead of hanging it.
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(client.fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = try client.connect(to: address)
        try writeAll(client, [UInt8](repeating: 7, count: 4096))
        while dropped.current < 0 { usleep(10_000) }
        // More the server will not read, while it waits for this side's end.
        try writeAll(client, [UInt8](repeating: 8, count: 4096))
        let (received, error) = readUntilEnd(client)
        // The answer to the end, then this side's end, which ends the server's wait.
        try writeAll(client, [UInt8](repeating: 9, count: 64))
        try? client.shutdownWrite()
        loop.join()
        // A reset (the answer reaching a closed socket) sets the client's error; on loopback
        // it comes back at once, but give it a moment.
        var late: Int32 = 0
        for _ in 0..<20 where late == 0 {
            late = (try? client.option(level: SOL_SOCKET, name: SO_ERROR)) ?? -1
            if late == 0 { usleep(20_000) }
        }
        client.close()
        XCTAssertEqual(dropped.current, 1)
        XCTAssertEqual(error, 0, "a reset: \(String(cString: strerror(error)))")
        XCTAssertEqual(late, 0, "a reset after the end: \(String(cString: strerror(late)))")
        XCTAssertTrue(received == first + closing, "got \(received.count) bytes, expected \(first.count + closing.count)")
        XCTAssertEqual(reason.current, .finished)
    }

    /// Reads to the end of stream: the bytes, and the error that ended it (0 for an end of
    /// stream).
    private func readUntilEnd(_ socket: Socket) -> ([UInt8], Int32) {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(socket.fd, $0.baseAddress, $0.count) }
            if n < 0 { return (out, errno) }
            if n == 0 { return (out, 0) }
            out += buffer[0..<n]
        }
    }
}
