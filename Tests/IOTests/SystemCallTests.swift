import IO
import Glibc
import XCTest

/// The low-level helpers every part of nalcast uses: the system-call funnel, the wait for
/// readiness, gathered writes and the connect with a timeout.
final class SystemCallTests: XCTestCase {
    func pipe() -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(Glibc.pipe(&fds), 0)
        for fd in fds { _ = fcntl(fd, F_SETFL, O_NONBLOCK) }
        return (fds[0], fds[1])
    }

    func testFailuresNameTheCallAndWouldBlockIsNoError() throws {
        XCTAssertThrowsError(try systemCall("open") { open("/nonexistent/nalcast", O_RDONLY) }) { error in
            XCTAssertEqual(error as? Errno, Errno(code: ENOENT, function: "open"))
            XCTAssertEqual("\(error)", "open: No such file or directory")
        }
        let (r, w) = pipe()
        defer { close(r); close(w) }
        var byte: UInt8 = 0
        XCTAssertEqual(try nonBlockingCall("read") { read(r, &byte, 1) }, .wouldBlock)
        byte = 7
        XCTAssertEqual(try nonBlockingCall("write") { write(w, &byte, 1) }, .done(1))
        byte = 0
        XCTAssertEqual(try nonBlockingCall("read") { read(r, &byte, 1) }, .done(1))
        XCTAssertEqual(byte, 7)
        // A descriptor nalcast was given may be closed: thrown when asked, not trapped.
        XCTAssertThrowsError(try systemCall("write", badDescriptorIsBug: false) { write(-1, &byte, 1) }) { error in
            XCTAssertEqual((error as? Errno)?.code, EBADF)
        }
    }

    func testWaitUntilReady() throws {
        let (r, w) = pipe()
        defer { close(r); close(w) }
        XCTAssertFalse(try waitUntilReady(r, for: Int32(POLLIN), timeout: 0.05))
        XCTAssertTrue(try waitUntilReady(w, for: Int32(POLLOUT), timeout: 0.05))
        var byte: UInt8 = 1
        _ = write(w, &byte, 1)
        XCTAssertTrue(try waitUntilReady(r, for: Int32(POLLIN), timeout: 5))
    }

    /// More slices than one call takes, a cursor inside a slice, empty slices: the bytes come
    /// out in order, once.
    func testGatheredWritesAreByteIdentical() throws {
        let (r, w) = pipe()
        defer { close(r); close(w) }
        let backing = (0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        var slices: [ArraySlice<UInt8>] = []
        var start = 0
        for i in 0..<2500 {
            let length = i % 7 == 0 ? 0 : 2
            slices.append(backing[start..<(start + length)])
            start += length
        }
        // Slice 0 is empty, slice 1 is backing[0..<2]: its first byte counts as written.
        var cursor = SliceCursor(index: 1, offset: 1)
        let expected = Array(backing[1..<start])
        var out: [UInt8] = []
        var calls = 0
        while cursor.index < slices.count {
            guard case .done(let n) = try GatheredWrite.write(slices, from: cursor, to: .file(w)) else { return XCTFail("a pipe this empty blocked") }
            XCTAssertGreaterThan(n, 0)
            cursor.advance(by: n, in: slices)
            calls += 1
            var buffer = [UInt8](repeating: 0, count: 65536)
            let got = read(r, &buffer, buffer.count)
            out += buffer[0..<max(0, got)]
        }
        XCTAssertEqual(calls, 3)  // 2499 slices, 1024 a call
        XCTAssertEqual(cursor, SliceCursor(index: 2500, offset: 0))
        XCTAssertEqual(out, expected)
    }

    func testCursorAdvancesAcrossSlices() {
        let slices: [ArraySlice<UInt8>] = [[1, 2, 3], [], [4, 5], [6]]
        var cursor = SliceCursor()
        cursor.advance(by: 2, in: slices)
        XCTAssertEqual(cursor, SliceCursor(index: 0, offset: 2))
        cursor.advance(by: 1, in: slices)  // the end of slice 0, and the empty slice 1
        XCTAssertEqual(cursor, SliceCursor(index: 2, offset: 0))
        cursor.advance(by: 2, in: slices)
        XCTAssertEqual(cursor, SliceCursor(index: 3, offset: 0))
        cursor.advance(by: 1, in: slices)
        XCTAssertEqual(cursor, SliceCursor(index: 4, offset: 0))
    }

    /// A listener whose backlog is full drops further SYNs: a connect to it times out, in the
    /// waiting form and on the loop, and says so.
    func testConnectTimesOut() throws {
        let listening = try Socket(family: AF_INET)
        let address = try SocketAddress.resolve(.tcp(host: "127.0.0.1", port: 0))[0]
        try listening.bind(address)
        try listening.listen(backlog: 0)
        let bound = try listening.localAddress()
        // Fill the accept queue (never accepted).
        var fillers: [Socket] = []
        for _ in 0..<4 {
            guard let s = try? Connector.connect(to: [bound], timeout: 0.3) else { break }
            fillers.append(s)
        }
        XCTAssertFalse(fillers.isEmpty)
        XCTAssertThrowsError(try Connector.connect(to: [bound], timeout: 0.3)) { error in
            XCTAssertEqual("\(error)", "connect: Connection timed out")
        }

        let loop = EventLoop()
        let result = Shared<String>("")
        let connector = Connector(loop: loop, address: bound, timeout: 0.3) { outcome in
            if case .failure(let error) = outcome { result.update { $0 = error.description } } else { result.update { $0 = "connected" } }
            loop.stop()
        }
        connector.start()
        loop.start()
        loop.join()
        XCTAssertEqual(result.current, "connect: Connection timed out")
        withExtendedLifetime((listening, fillers, connector)) {}
    }

    func testWaitingConnectConnectsAndReportsRefusal() throws {
        let listening = try Socket(family: AF_INET)
        try listening.bind(try SocketAddress.resolve(.tcp(host: "127.0.0.1", port: 0))[0])
        try listening.listen(backlog: 8)
        let endpoint = try listening.localAddress().endpoint
        let socket = try Connector.connect(to: endpoint, timeout: 5)
        XCTAssertTrue(socket.isOpen)
        listening.close()
        XCTAssertThrowsError(try Connector.connect(to: endpoint, timeout: 5)) { error in
            XCTAssertEqual("\(error)", "connect: Connection refused")
        }
    }
}
