import IO
import Foundation
import Glibc
import H264
import LoopTestSupport
import Delivery
import Metrics
import Serving
import Synchronization
import TestSupport
import Testing

/// A reader that goes away (its peer reset the connection) while the server writes to it:
/// the failed write closes the connection at once but says so only on the loop's next turn,
/// and the access units still in the same batch of the mailbox must not be written to it
/// (the broadcaster still has its head in flight). Both framings of a listener.
@Suite struct ReaderGoneMidBatchTests {
    @Test(arguments: [WireFormat.annexB, .mpegTS])
    func aResetReaderIsClosedWithoutHarm(format: WireFormat) throws {
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("v.h264").path
        let r = try Tool.run(["ffmpeg", "-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25:duration=1",
                              "-c:v", "libx264", "-preset", "ultrafast", "-bf", "0", "-g", "25", "-pix_fmt", "yuv420p", "-y", path])
        try #require(r.status == 0, "\(r.stderr)")
        var parser = AnnexBParser()
        let units = parser.push(Array(try Data(contentsOf: URL(fileURLWithPath: path)))) + parser.finish()

        let loop = EventLoop()
        var broadcaster = BroadcasterConfig()
        broadcaster.joinPolicy = .next
        let server = try StreamServer(loop: loop, config: StreamServer.Config(listeners: [Listening(.tcp(host: "127.0.0.1", port: 0), format: format)],
                                                                               broadcaster: broadcaster),
                                      metrics: StreamServer.Metrics(registry: MetricsRegistry(), transportStream: format == .mpegTS))
        let joined = Atomic<Bool>(false), closed = Atomic<Bool>(false)
        server.onEvent = { event in
            if case .readerJoined = event { joined.store(true, ordering: .releasing) }
            if case .readerClosed = event { closed.store(true, ordering: .releasing) }
        }
        server.onFinished = { loop.stop() }
        server.start()
        // A way to hold the loop thread while the mailbox fills, so that the access units
        // arrive in one batch.
        let holdAsked = Atomic<Bool>(false), holding = Atomic<Bool>(false), released = Atomic<Bool>(false)
        let hold = LoopTimer(loop: loop) {
            guard holdAsked.load(ordering: .acquiring), !holding.load(ordering: .acquiring) else { return }
            holding.store(true, ordering: .releasing)
            var waited = 0
            while !released.load(ordering: .acquiring) && waited < 500 { usleep(10_000); waited += 1 }
        }
        hold.start(after: 0.005, repeating: 0.005)
        loop.start()
        let socket = try blockingClient(to: server.boundEndpoint)
        var waited = 0
        while !joined.load(ordering: .acquiring) && waited < 500 { usleep(10_000); waited += 1 }
        let mailbox = server.mailbox!
        holdAsked.store(true, ordering: .releasing)
        waited = 0
        while !holding.load(ordering: .acquiring) && waited < 500 { usleep(10_000); waited += 1 }
        // Gone with a reset (linger 0) while the loop is held: when it goes on, the server's
        // next write fails before its read side has seen the reset.
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(socket.fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        socket.close()
        usleep(100_000)
        for (i, unit) in units.prefix(10).enumerated() { _ = mailbox.send(.timedUnit(unit, pts90k: UInt64(i * 3600)), pastCapacity: true) }
        released.store(true, ordering: .releasing)
        waited = 0
        while !closed.load(ordering: .acquiring) && waited < 500 { usleep(10_000); waited += 1 }
        let wasClosed = closed.load(ordering: .acquiring)
        #expect(wasClosed, "the reset reader was never closed")
        _ = mailbox.send(.captureEnded, pastCapacity: true)
        loop.join()
        withExtendedLifetime((server, hold)) {}
        #expect(server.readerCount == 0)
    }
}
