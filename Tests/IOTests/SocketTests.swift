import IO
import Glibc
import H264
import Media
import LoopTestSupport
import XCTest

final class SocketTests: XCTestCase {
    /// Access units of random-sized NAL units (some bigger than the small send buffer), so the
    /// connection goes through partial writes and writability waits.
    func makeAccessUnits(count: Int) -> [AccessUnit] {
        var generator = SystemRandomNumberGenerator()
        var fill: UInt8 = 0
        return (0..<count).map { i in
            let nals = [NALUnit(escapedBody: [0x09, 0xf0])] + (0..<Int.random(in: 1...6, using: &generator)).map { _ in
                // Each NAL unit has its own fill byte, so a reordering or a lost piece shows.
                fill = fill % 250 + 1
                let size = Int.random(in: 1...(96 << 10), using: &generator)
                return NALUnit(escapedBody: [0x41] + [UInt8](repeating: fill, count: size))
            }
            return AccessUnit(codec: H264Codec(), nalUnits: nals, isIDR: i == 0, resolution: nil, timestamp: nil)
        }
    }

    func testConnectionWritesAccessUnitsByteIdentical() throws {
        let loop = EventLoop()
        let keep = Keep()
        let units = makeAccessUnits(count: 40)
        let expected = units.flatMap { $0.nalUnits.flatMap { Array($0.wire) } }
        let finished = Shared(0)
        let closeReason = Shared<Connection.CloseReason?>(nil)
        let listener = try Listener(loop: loop, endpoint: .tcp(host: "127.0.0.1", port: 0)) { socket in
            try? socket.configureForStreaming()
            let connection = Connection(loop: loop, socket: socket)
            keep.objects.append(connection)
            connection.onProgress = { progress in finished.update { $0 += progress.finishedItems } }
            connection.onClose = { reason in
                closeReason.update { $0 = reason }
                loop.stop()
            }
            connection.start()
            for unit in units {
                let progress = connection.write(chunks: unit.nalUnits.map(\.wire))
                finished.update { $0 += progress.finishedItems }
            }
            connection.closeAfterFlush()
        }
        keep.objects.append(listener)
        listener.start()
        guard case .tcp(_, let port) = listener.boundEndpoint, port != 0 else { return XCTFail("no port bound") }
        loop.start()

        let client = try blockingClient(to: listener.boundEndpoint)
        let received = readToEnd(client)
        loop.join()
        XCTAssertEqual(received.count, expected.count)
        XCTAssertTrue(received == expected, "bytes differ")
        XCTAssertEqual(finished.current, units.count)
        XCTAssertEqual(closeReason.current, .finished)
    }

    func testStreamReaderThatSendsTooMuchIsClosed() throws {
        let loop = EventLoop()
        let keep = Keep()
        let reason = Shared<Connection.CloseReason?>(nil)
        let listener = try Listener(loop: loop, endpoint: .tcp(host: "127.0.0.1", port: 0)) { socket in
            let connection = Connection(loop: loop, socket: socket, discardLimit: 1000)
            keep.objects.append(connection)
            connection.onClose = { r in
                reason.update { $0 = r }
                loop.stop()
            }
            connection.start()
        }
        keep.objects.append(listener)
        listener.start()
        loop.start()
        let client = try blockingClient(to: listener.boundEndpoint)
        try writeAll(client, [UInt8](repeating: 7, count: 4000))
        _ = readToEnd(client)
        loop.join()
        guard case .sentTooMuch(let bytes)? = reason.current else { return XCTFail("\(String(describing: reason.current))") }
        XCTAssertGreaterThan(bytes, 1000)
    }

    func testPeerCloseIsReported() throws {
        let loop = EventLoop()
        let keep = Keep()
        let reason = Shared<Connection.CloseReason?>(nil)
        let listener = try Listener(loop: loop, endpoint: .tcp(host: "127.0.0.1", port: 0)) { socket in
            let connection = Connection(loop: loop, socket: socket)
            keep.objects.append(connection)
            connection.onClose = { r in
                reason.update { $0 = r }
                loop.stop()
            }
            connection.start()
        }
        keep.objects.append(listener)
        listener.start()
        loop.start()
        try blockingClient(to: listener.boundEndpoint).close()
        loop.join()
        XCTAssertEqual(reason.current, .peerClosed)
    }

    func testBusyTCPPortNamesBind() throws {
        let loop = EventLoop()
        let first = try Listener(loop: loop, endpoint: .tcp(host: "127.0.0.1", port: 0)) { _ in }
        XCTAssertThrowsError(try Listener(loop: loop, endpoint: first.boundEndpoint) { _ in }) { error in
            XCTAssertEqual(error as? SocketError, .system(Errno(code: EADDRINUSE, function: "bind")))
            XCTAssertEqual("\(error)", "bind: Address already in use")
        }
    }

    func testUnixSocketIsPrivateAndLiveOneIsRefused() throws {
        let loop = EventLoop()
        let dir = temporaryDirectory()
        let path = dir + "/serve.sock"
        let listener = try Listener(loop: loop, endpoint: .unix(path: path)) { _ in }
        var info = stat()
        XCTAssertEqual(lstat(path, &info), 0)
        XCTAssertEqual(info.st_mode & S_IFMT, S_IFSOCK)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        XCTAssertThrowsError(try Listener(loop: loop, endpoint: .unix(path: path)) { _ in }) { error in
            XCTAssertEqual("\(error)", "unix:\(path) is in use")
        }
        listener.close()
        XCTAssertNotEqual(lstat(path, &info), 0, "close removes the socket file")
        rmdir(dir)
    }

    func testStaleUnixSocketIsReplaced() throws {
        let loop = EventLoop()
        let dir = temporaryDirectory()
        let path = dir + "/stale.sock"
        // A socket file nobody listens on, as a crashed process leaves it.
        let dead = try Socket(family: AF_UNIX)
        try dead.bind(try SocketAddress.resolve(.unix(path: path))[0])
        dead.close()
        var info = stat()
        XCTAssertEqual(lstat(path, &info), 0)

        let keep = Keep()
        let accepted = Shared(false)
        let listener = try Listener(loop: loop, endpoint: .unix(path: path)) { socket in
            accepted.update { $0 = true }
            keep.objects.append(socket)
            loop.stop()
        }
        keep.objects.append(listener)
        listener.start()
        loop.start()
        let client = try blockingClient(to: .unix(path: path))
        loop.join()
        XCTAssertTrue(accepted.current)
        client.close()
        listener.close()
        rmdir(dir)
    }

    func testUnixPathThatIsNotASocketIsLeftAlone() throws {
        let loop = EventLoop()
        let dir = temporaryDirectory()
        let path = dir + "/file"
        let fd = open(path, O_CREAT | O_WRONLY, 0o600)
        Glibc.close(fd)
        XCTAssertThrowsError(try Listener(loop: loop, endpoint: .unix(path: path)) { _ in }) { error in
            XCTAssertEqual(error as? SocketError, .notASocket(path))
        }
        var info = stat()
        XCTAssertEqual(lstat(path, &info), 0)
        unlink(path)
        rmdir(dir)
    }

    func testConnectorConnectsAndReportsRefusal() throws {
        let loop = EventLoop()
        let keep = Keep()
        let results = Shared<[String]>([])
        let listener = try Listener(loop: loop, endpoint: .tcp(host: "127.0.0.1", port: 0)) { socket in keep.objects.append(socket) }
        listener.start()
        // A port that was just free: bind, read the port, close.
        let closedPort: UInt16 = try {
            let probe = try Listener(loop: loop, endpoint: .tcp(host: "127.0.0.1", port: 0)) { _ in }
            defer { probe.close() }
            return probe.boundEndpoint.port!
        }()
        for endpoint in [listener.boundEndpoint, .tcp(host: "127.0.0.1", port: closedPort)] {
            let connector = Connector(loop: loop, address: try SocketAddress.resolve(endpoint)[0]) { result in
                let count = results.update { r in
                    switch result {
                    case .success: r.append("connected")
                    case .failure(let e): r.append(e.description)
                    }
                    return r.count
                }
                if count == 2 { loop.stop() }
            }
            keep.objects.append(connector)
            connector.start()
        }
        keep.objects.append(listener)
        loop.start()
        loop.join()
        XCTAssertEqual(Set(results.current), ["connected", "connect: Connection refused"])
    }
}
