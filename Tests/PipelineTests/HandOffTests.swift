import Capture
import IO
import Foundation
import H264
import LoopTestSupport
import Pipeline
import Delivery
import Metrics
import Serving
import Synchronization
import TestSupport
import Testing

/// The capture thread's hand-off to a stalled loop thread: what the mailbox cannot take is
/// counted, and the reader's stream stays decodable, resuming at an IDR.
@Suite struct HandOffTests {
    @Test func aStalledLoopThreadCostsReadersOnlyWholeGOPs() throws {
        let loop = EventLoop()
        let registry = MetricsRegistry()
        let server = try StreamServer(loop: loop, config: StreamServer.Config(listen: .tcp(host: "127.0.0.1", port: 0)),
                                      metrics: StreamServer.Metrics(registry: registry))
        let control = CaptureControl()
        server.onRequestIDR = { control.requestIDR() }
        server.onFinished = { loop.stop() }
        let serverEvents = Mutex<[String]>([])
        server.onEvent = { event in serverEvents.withLock { $0.append("\(event)") } }
        server.start()

        // The stall: once the reader has its first picture, the loop thread sleeps until the
        // hand-off has refused a few dozen access units (or 60 s pass), as a loop stuck in a
        // slow call would.
        let reading = Atomic<Bool>(false)
        let stalled = Atomic<Bool>(false)
        let stall = LoopTimer(loop: loop) {
            guard reading.load(ordering: .acquiring), !stalled.load(ordering: .acquiring) else { return }
            stalled.store(true, ordering: .releasing)
            var waited = 0
            while control.statistics().droppedHandOff < 40 && waited < 6000 {
                usleep(10_000)
                waited += 1
            }
        }
        stall.start(after: 0.005, repeating: 0.005)
        let port = server.boundEndpoint
        let mailbox = server.mailbox!
        let reports = Mutex<[String]>([])
        let handOff = ResyncingHandOff(control: control, send: { mailbox.send(.accessUnit($0)) }, hasRoom: { mailbox.backlog < mailbox.capacity }) { report in
            reports.withLock { $0.append("\(report)") }
        }
        loop.start()

        // A reader that joins first and reads until the server ends its stream.
        let reader = try ReaderThread(endpoint: port) { reading.store(true, ordering: .releasing) }

        // Capture as fast as the encoder goes: 320x240 test pattern, an IDR every 30 frames.
        var options = CaptureOptions()
        options.targetFrameRate = nil
        options.frameLimit = 3000
        options.encoder.preset = "ultrafast"
        options.encoder.keyint = 30
        let source = try TestPatternSource(width: 320, height: 240, frameRate: FrameRate(30), realtime: false)
        let pipeline = CapturePipeline(source: source, options: options, control: control) { handOff.hand($0) }
        try pipeline.run()
        let didStall = stalled.load(ordering: .acquiring)
        #expect(didStall, "the loop stalled while capture ran")
        mailbox.send(.captureEnded, pastCapacity: true)
        loop.join()
        let bytes = reader.join()
        withExtendedLifetime((server, stall)) {}

        let stats = control.statistics()
        #expect(stats.droppedHandOff >= 40, "the stall must have cost access units: \(stats)")
        #expect(stats.droppedTotal >= stats.droppedHandOff)
        #expect(reports.withLock { $0.first } == "gapOpened", "\(reports.withLock { $0 })")

        // What the reader got: every jump in the frame sequence lands on an IDR, and the
        // frames missing are exactly those counted: left out at the hand-off, or skipped by
        // the server when the backlog that piled up behind the stall reached the reader's lag
        // bound.
        var parser = AnnexBParser()
        var units = parser.push(bytes)
        units += parser.finish()
        let sequences = units.compactMap { $0.timestamp?.sequence }
        #expect(sequences.count == units.count && units.count > 100)
        var missing: UInt64 = 0
        var jumps = 0
        for i in 1..<units.count where sequences[i] != sequences[i - 1] + 1 {
            #expect(units[i].isIDR, "after the jump \(sequences[i - 1]) → \(sequences[i])")
            missing += sequences[i] - sequences[i - 1] - 1
            jumps += 1
        }
        let skipped = server.metrics.skippedAccessUnits.value
        #expect(jumps > 0)
        #expect(missing == stats.droppedHandOff + skipped, "hand-off \(stats.droppedHandOff), server skips \(skipped)")
        #expect(sequences[0] + UInt64(units.count) + missing == stats.framesEncoded)

        // And a real decoder agrees: every access unit decodes, with no error.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("nalcast-handoff-\(UUID().uuidString).h264")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(bytes).write(to: file)
        let decoded = try Tool.run(["ffprobe", "-v", "error", "-f", "h264", "-count_frames", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", file.path])
        // The access unit the AUD behind the last picture opened is completed by the closing
        // picture (`AccessUnitDelimiting.closing`): FFmpeg says nothing about it.
        #expect(decoded.stderr.isEmpty, "\(decoded.stderr)")
        #expect(Int(decoded.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) == units.count)
    }
}

/// Connects at once, then reads on a thread of its own until the end of the stream.
final class ReaderThread: Sendable {
    private let received = Mutex<[UInt8]>([])
    private let done = DispatchSemaphore(value: 0)

    /// `started` runs once, when the first bytes arrive.
    init(endpoint: Endpoint, started: @escaping @Sendable () -> Void) throws {
        // No receive timeout: the loop thread may stall for up to a minute on purpose.
        let socket = try blockingClient(to: endpoint, receiveTimeout: nil)
        // The thread owns the descriptor from here on and closes it.
        let fd = dup(socket.fd)
        socket.close()
        Thread.detachNewThread { [self] in
            var buffer = [UInt8](repeating: 0, count: 64 << 10)
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                if received.withLock({ $0.isEmpty }) { started() }
                received.withLock { $0 += buffer[0..<n] }
            }
            close(fd)
            done.signal()
        }
    }

    func join() -> [UInt8] {
        done.wait()
        return received.withLock { $0 }
    }
}
