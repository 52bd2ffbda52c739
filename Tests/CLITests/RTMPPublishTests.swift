import Foundation
import Testing
import TestSupport

/// nalcast's own RTMP publisher (`--forward rtmp://`) against nginx-rtmp, read back by an
/// FFmpeg player through nginx and probed: the sound beside the pictures, a size change and
/// B-frames (composition times) mid-stream, and a publish nginx refuses. PushTests has the
/// plain push, the dead and silent servers and the restart with sound. A few seconds each.
///
/// nginx tells the player when the publish ended (`publishNotify`), and the player ends there,
/// having read everything before it: the tests wait on that, not on the player's idle
/// timeout, which is long (`idleTimeout` 20 s: a player that hears nothing for that long,
/// before the publish too, gives up with an error; at 2 s a loaded machine starting the
/// publisher lost the race).
@Suite(.serialized) struct RTMPPublishTests {
    struct Packet {
        var stream: Int
        var pts: Double
        var dts: Double
        var key: Bool
    }

    static let idleTimeout = 20

    static func packets(_ path: String) throws -> [Packet] {
        let r = try Tool.run(["ffprobe", "-v", "error", "-show_entries", "packet=stream_index,pts_time,dts_time,flags", "-of", "csv=p=0", path])
        return r.stdout.split(separator: "\n").compactMap { line in
            let f = line.split(separator: ",", omittingEmptySubsequences: false)
            guard f.count >= 4, let s = Int(f[0]), let pts = Double(f[1]), let dts = Double(f[2]) else { return nil }
            return Packet(stream: s, pts: pts, dts: dts, key: f[3].hasPrefix("K"))
        }
    }

    /// `produce --audio tone` pushed: nginx serves every picture and the sound, each track's
    /// times rising, the pictures a frame interval apart, the sound starting with the pictures
    /// (within a frame of 48 kHz AAC and a picture), decoding without a complaint.
    @Test func soundAndPicturesComeBackAsSent() throws {
        let server = try RTMPServer(publishNotify: true)
        let scratch = try MediaServerDirectory.make("rtmp-sound")
        defer { MediaServerDirectory.discard(scratch) }
        let read = scratch.appendingPathComponent("read.flv")
        let player = try server.startPlayer("tone", into: read, log: scratch.appendingPathComponent("player.log"), idleTimeout: Self.idleTimeout, map: ["0"])
        defer { player.stop() }
        let r = try Run.nalcast(["produce", "--source", "testsrc", "--size", "320x240", "--fps", "30", "--frames", "90", "--keyint", "1s",
                                 "--audio", "tone", "--forward", server.url("tone")], timeout: 120)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(player.waitForExit(timeout: 60) == 0, "\(player.logTail())")
        let p = try Self.packets(read.path)
        let video = p.filter { $0.stream == 0 }, audio = p.filter { $0.stream == 1 }
        #expect(video.count == 90, "\(video.count) pictures\n\(r.stderr)\n\(server.log)")
        #expect(video.first?.key == true)
        let steps = zip(video, video.dropFirst()).map { Int((($1.dts - $0.dts) * 1000).rounded()) }
        #expect(steps.allSatisfy { $0 > 0 }, "\(steps)")
        #expect([33, 34].contains(steps.sorted()[steps.count / 2]), "\(steps)")
        // 3 s of sound at 48 kHz, 1024 samples a packet: about 140; those before the first
        // picture are left out.
        #expect(audio.count >= 100, "\(audio.count) audio packets\n\(r.stderr)")
        #expect(zip(audio, audio.dropFirst()).allSatisfy { $1.dts > $0.dts })
        if let a = audio.first?.pts, let v = video.first?.pts { #expect(abs(a - v) <= 0.06, "sound at \(a), pictures at \(v)") }
        let streams = try Tool.run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_name,sample_rate,channels", "-of", "csv=p=0", read.path])
        #expect(streams.stdout.contains("aac,48000,2"), "\(streams.stdout)")
        #expect(try MediaProbe.decodeErrors(read.path) == "")
    }

    /// A stream whose second half is another size, with B-frames, read in real time: nginx
    /// serves every picture at its size (a new AVC sequence header before the first of the
    /// second half), presentation times off the decode times by the composition times, and
    /// the pictures presented in order.
    @Test func aSizeChangeAndBFramesReachThePlayer() throws {
        let server = try RTMPServer(publishNotify: true)
        let scratch = try MediaServerDirectory.make("rtmp-size")
        defer { MediaServerDirectory.discard(scratch) }
        var bytes = Data()
        for size in ["320x240", "160x120"] {
            let part = scratch.appendingPathComponent("\(size).h264")
            let made = try Tool.run(["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=\(size):rate=30", "-frames:v", "30",
                                     "-c:v", "libx264", "-preset", "ultrafast", "-bf", "2", "-g", "15", "-f", "h264", part.path])
            #expect(made.status == 0, "\(made.stderr)")
            bytes += try Data(contentsOf: part)
        }
        let input = scratch.appendingPathComponent("in.h264")
        try bytes.write(to: input)
        let read = scratch.appendingPathComponent("read.flv")
        let player = try server.startPlayer("size", into: read, log: scratch.appendingPathComponent("player.log"), idleTimeout: Self.idleTimeout)
        defer { player.stop() }
        let r = try Run.nalcast(["consume", "--from", input.path, "--realtime", "--forward", server.url("size")], timeout: 120)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(player.waitForExit(timeout: 60) == 0, "\(player.logTail())")
        let frames = try Tool.run(["ffprobe", "-v", "error", "-select_streams", "v", "-show_entries", "frame=width", "-of", "csv=p=0", read.path])
        let widths = frames.stdout.split(separator: "\n").compactMap { Int($0.prefix { $0 != "," }) }
        #expect(widths == Array(repeating: 320, count: 30) + Array(repeating: 160, count: 30), "\(widths)\n\(r.stderr)")
        #expect(frames.stderr.isEmpty, "\(frames.stderr)")
        let video = try Self.packets(read.path)
        #expect(zip(video, video.dropFirst()).allSatisfy { $1.dts > $0.dts }, "decode times not rising")
        #expect(video.contains { $0.pts > $0.dts }, "no composition time")
        #expect(video.allSatisfy { $0.pts >= $0.dts })
        let presented = video.map(\.pts)
        #expect(Set(presented).count == presented.count, "two pictures at one presentation time")
    }

    /// nginx refuses a second publisher of a key (`NetStream.Publish.BadName`, "Already
    /// publishing"): the consume says so in the forward's line, drops what it read (counted)
    /// and ends with 69, as a target that never connected does. The holder publishes until it
    /// is killed, whatever the machine's load.
    @Test func aRefusedPublishIsOneLineAndExit69() throws {
        let server = try RTMPServer()
        let scratch = try MediaServerDirectory.make("rtmp-refused")
        defer { MediaServerDirectory.discard(scratch) }
        let holder = try Background(Run.nalcast, ["produce", "--source", "testsrc", "--size", "160x120", "--fps", "30", "--forward", server.url("taken")])
        defer { holder.signal(SIGKILL) }
        #expect(server.waitForPublish("taken"), "\(server.log)\n\(holder.stderr)")
        let input = scratch.appendingPathComponent("in.h264")
        let made = try Run.nalcast(["produce", "--source", "testsrc", "--size", "160x120", "--frames", "30", "--no-realtime", "-o", input.path])
        #expect(made.status == 0, "\(made.stderr)")
        let r = try Run.nalcast(["consume", "--from", input.path, "--forward", server.url("taken")], timeout: 60)
        #expect(r.status == 69, "\(r.stderr)")
        let line = r.stderr.split(separator: "\n").first { $0.contains("forward to rtmp://127.0.0.1:\(server.port)/live/**** is down (") }
        #expect(line?.contains("the server refused the publish: NetStream.Publish.BadName (Already publishing)") == true, "\(r.stderr)")
        #expect(r.stderr.contains("30 of 30 access units dropped (never connected)"), "\(r.stderr)")
    }
}
