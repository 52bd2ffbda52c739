import IO
import Foundation
import H264
import LoopTestSupport
import Media
import Output
import Delivery
import Metrics
import Serving
import Synchronization
import TestSupport
import Testing

/// The stream server's MPEG-TS listener on a real loop, carrying video and AAC audio (both
/// made by FFmpeg) to a socket reader: ffprobe finds H.264 and AAC 48 kHz stereo, FFmpeg
/// decodes both without a complaint, and the sound lasts as long as the pictures.
@Suite struct TransportStreamListenerTests {
    @Test func videoAndAudioReachATSReader() throws {
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let aac = try AACFrames.tone(seconds: 3, in: dir)
        _ = try serve(in: dir, aac: aac, serverAudio: AudioFormat(extradata: aac.config))
    }

    /// A relay's server is made before its input opens: the track comes as `.audioFormat`
    /// before the first access unit and is carried as if given at the start; a different
    /// track declared later (a source back with another rate) is not, its packets counted.
    @Test func aTrackDeclaredBeforeTheFirstPictureIsCarriedAndAnotherLaterIsCounted() throws {
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let aac = try AACFrames.tone(seconds: 3, in: dir)
        let track = AudioFormat(extradata: aac.config)
        let dropped = try serve(in: dir, aac: aac, serverAudio: nil, declared: track)
        #expect(dropped == 0)
        var other = track
        other.sampleRate = 44_100
        other.bitrate = 64_000
        // From the 50th picture on the track is another: the packets after it (from 2 s on) are left out.
        let left = try serve(in: dir, aac: aac, serverAudio: nil, declared: track, laterDeclared: (50, other), soundEnds: false)
        #expect(left > 40, "\(left) packets left out")
        // The same track again with another bit-rate estimate (a reopened container) is carried.
        var estimate = track
        estimate.bitrate = 0
        #expect(try serve(in: dir, aac: aac, serverAudio: nil, declared: track, laterDeclared: (50, estimate)) == 0)
    }

    /// Serves 3 s of FFmpeg's pictures and `aac` through a TS listener to a socket reader and
    /// checks what it got; returns the audio packets the server counted as left out.
    private func serve(in dir: URL, aac: AACFrames, serverAudio: AudioFormat?, declared: AudioFormat? = nil,
                       laterDeclared: (at: Int, format: AudioFormat)? = nil, soundEnds: Bool = true) throws -> UInt64 {
        let videoPath = dir.appendingPathComponent("v.h264").path
        let r = try Tool.run(["ffmpeg", "-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25:duration=3",
                              "-c:v", "libx264", "-preset", "ultrafast", "-bf", "0", "-g", "25", "-pix_fmt", "yuv420p", "-y", videoPath])
        try #require(r.status == 0, "\(r.stderr)")
        var parser = AnnexBParser()
        let units = parser.push(Array(try Data(contentsOf: URL(fileURLWithPath: videoPath)))) + parser.finish()
        try #require(units.count == 75 && aac.frames.count >= 140)

        let loop = EventLoop()
        var broadcaster = BroadcasterConfig()
        broadcaster.joinPolicy = .next
        // The 3 s are handed over at once, before the reader reads: room for all of them, so
        // that it skips nothing.
        broadcaster.readerLimits = QueueLimits(maxLagNs: 60_000_000_000, maxBytes: 64 << 20)
        let config = StreamServer.Config(listeners: [Listening(.tcp(host: "127.0.0.1", port: 0), format: .mpegTS)], broadcaster: broadcaster,
                                         audio: serverAudio)
        let metrics = StreamServer.Metrics(registry: MetricsRegistry(), transportStream: true)
        let server = try StreamServer(loop: loop, config: config, metrics: metrics)
        let joined = Atomic<Bool>(false)
        server.onEvent = { if case .readerJoined = $0 { joined.store(true, ordering: .releasing) } }
        server.onFinished = { loop.stop() }
        server.start()
        loop.start()
        let socket = try blockingClient(to: server.boundEndpoint)
        var waited = 0
        while !joined.load(ordering: .acquiring) && waited < 500 {
            usleep(10_000)
            waited += 1
        }
        // Each picture after the sound captured up to its time, as the capture threads would.
        let mailbox = server.mailbox!
        if let declared { _ = mailbox.send(.audioFormat(declared), pastCapacity: true) }
        var next = 0
        for (i, unit) in units.enumerated() {
            if let later = laterDeclared, later.at == i { _ = mailbox.send(.audioFormat(later.format), pastCapacity: true) }
            let pts = UInt64(i * 3600)
            while next < aac.frames.count, Int64(next) * 1024 * 90_000 / 48_000 <= Int64(pts) {
                _ = mailbox.send(.audio(AudioPacket(data: aac.frames[next], mediaTime: MediaTime(ticks: Int64(next) * 1024 * 90_000 / 48_000))), pastCapacity: true)
                next += 1
            }
            _ = mailbox.send(.timedUnit(unit, pts90k: pts), pastCapacity: true)
        }
        _ = mailbox.send(.captureEnded, pastCapacity: true)
        let bytes = readToEnd(socket)
        loop.join()
        withExtendedLifetime(server) {}

        #expect(bytes.count % 188 == 0 && bytes.first == 0x47)
        let file = dir.appendingPathComponent("r.ts")
        try Data(bytes).write(to: file)
        let probe = try Tool.run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_name,sample_rate,channels", "-of", "csv=p=0", file.path])
        #expect(Set(probe.stdout.split(separator: "\n").map(String.init)) == ["h264", "aac,48000,2"], "\(probe.stdout) \(probe.stderr)")
        #expect(try MediaProbe.decodeErrors(file.path) == "")
        // The sound lasts as long as the pictures: last packet ends within a frame of each other.
        func lastEnd(_ stream: String) throws -> Double {
            let r = try Tool.run(["ffprobe", "-v", "error", "-select_streams", stream, "-show_entries", "packet=pts_time,duration_time", "-of", "csv=p=0", file.path])
            let last = r.stdout.split(separator: "\n").last.map { $0.split(separator: ",").compactMap { Double($0) } } ?? []
            return last.reduce(0, +)
        }
        let video = try lastEnd("v:0"), audio = try lastEnd("a:0")
        if soundEnds {
            #expect(video > 2.9 && abs(video - audio) < 0.05, "video ends at \(video) s, audio at \(audio) s")
        } else {
            #expect(video > 2.9 && audio < video - 0.5, "video ends at \(video) s, audio at \(audio) s")
        }
        return metrics.tsAudioDropped?.value ?? 0
    }
}
