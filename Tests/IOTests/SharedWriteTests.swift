import IO
import Glibc
import LoopTestSupport
import XCTest

/// `SharedWrite` and `Connection.write(shared:)`: the same bytes to many sockets through one
/// `iovec` list. Each reader gets every byte in order whether its socket took the write
/// whole, in part (the rest queued behind it) or not at all, and a list that cannot be shared
/// (an empty slice) is written the usual way.
final class SharedWriteTests: XCTestCase {
    func testTheListIsMadeOnlyForSlicesThatAllHaveBytes() {
        let bytes: [UInt8] = Array(0..<100)
        XCTAssertTrue(SharedWrite([bytes[0..<10], bytes[10..<100]]).isShared)
        XCTAssertEqual(SharedWrite([bytes[0..<10], bytes[10..<100]]).byteCount, 100)
        XCTAssertFalse(SharedWrite([bytes[0..<10], bytes[10..<10]]).isShared, "an empty slice")
        XCTAssertFalse(SharedWrite([]).isShared)
        XCTAssertFalse(SharedWrite(Array(repeating: bytes[0..<1], count: GatheredWrite.maxSlices + 1)).isShared)
    }

    func testEveryReaderGetsTheSharedBytesInOrderWhateverItsSocketTook() throws {
        let loop = EventLoop()
        let keep = Keep()
        let readers = 3
        // Larger than a reader's socket takes at once: the first write goes out in part.
        let big = [UInt8]((0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let small: [UInt8] = Array("after".utf8)
        let empty: [UInt8] = []
        let writes = [
            SharedWrite([big[0..<1000], big[1000..<(2 << 20)], big[(2 << 20)...]]),
            SharedWrite([small[...]]),
            SharedWrite([small[0..<2], empty[...], small[2...]]),
        ]
        let expected = big + small + small
        let firstProgress = Shared<[Int]>([])
        let closed = Shared(0)
        var accepted: [Connection] = []
        let listener = try Listener(loop: loop, endpoint: .tcp(host: "127.0.0.1", port: 0)) { socket in
            try? socket.configureForStreaming()
            let connection = Connection(loop: loop, socket: socket)
            connection.onClose = { _ in
                if closed.update({ $0 += 1; return $0 }) == readers { loop.stop() }
            }
            connection.start()
            accepted.append(connection)
            guard accepted.count == readers else { return }
            for (n, write) in writes.enumerated() {
                for connection in accepted {
                    let progress = connection.write(shared: write)
                    if n == 0 { firstProgress.update { $0.append(progress.bytes) } }
                }
            }
            for connection in accepted { connection.closeGracefully(within: 30) }
            keep.objects += accepted
        }
        keep.objects.append(listener)
        listener.start()
        loop.start()

        let clients = try (0..<readers).map { _ in try blockingClient(to: listener.boundEndpoint, receiveBuffer: 4096) }
        // One after the other: the others' rest waits in their queues meanwhile.
        var received: [[UInt8]] = []
        for client in clients {
            received.append(readToEnd(client))
            try? client.shutdownWrite()
        }
        loop.join()
        for client in clients { client.close() }
        XCTAssertEqual(firstProgress.current.count, readers)
        for bytes in firstProgress.current {
            XCTAssertTrue(bytes > 0 && bytes < big.count, "the big write went out in part: \(bytes) bytes")
        }
        for (n, bytes) in received.enumerated() {
            XCTAssertTrue(bytes == expected, "reader \(n): \(bytes.count) bytes, expected \(expected.count) in order")
        }
    }
}
