import Foundation
import TestSupport
import Testing

/// deploy/nginx/nalcast-hls-cache.conf in front of `produce --hls --web` (nginx in the
/// foreground, its paths, port and upstream swapped for the test's): 200 readers at once
/// ask for the header, the first segment and the same blocking reload, and the producer is
/// asked for each once (nginx's access log: one MISS per URI, the rest HITs); FFmpeg plays
/// the stream through the cache to its end.
@Suite(.serialized) struct HLSCacheTests {
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx"), "nginx is not installed (scripts/setup installs nginx-light)"))
    func twoHundredReadersThroughNginxCostTheProducerOneEach() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let webPort = try freePort(), cachePort = try freePort()
        // Stopped by the test once FFmpeg reads through the cache (its --duration is a bound): a
        // stream of fixed length raced the 600 requests and FFmpeg's start on a loaded machine.
        let producer = try Background(Run.nalcast, ["produce", "--size", "320x240", "--duration", "120s", "--keyint", "1s", "--hls", dir.appendingPathComponent("hls").path,
                                                    "--hls-segment", "1s", "--web", "tcp://127.0.0.1:\(webPort)"])
        #expect(producer.waitFor("HLS on "), "\(producer.stderr)")
        let cache = dir.appendingPathComponent("cache")
        try FileManager.default.createDirectory(at: cache, withIntermediateDirectories: true)
        // Its directives, without the comments that explain them (which name the same paths).
        var site = try String(contentsOf: Run.root.appendingPathComponent("deploy/nginx/nalcast-hls-cache.conf"), encoding: .utf8)
            .split(separator: "\n").filter { !$0.hasPrefix("#") }.joined(separator: "\n")
        for (from, to) in [("/var/cache/nginx/nalcast-hls", cache.path), ("server 127.0.0.1:8080;", "server 127.0.0.1:\(webPort);"),
                           ("listen 8088;", "listen 127.0.0.1:\(cachePort);"), ("listen [::]:8088;", ""),
                           ("/var/log/nginx/nalcast-hls.log", dir.appendingPathComponent("access.log").path)] {
            try #require(site.components(separatedBy: from).count == 2, "the recipe no longer has exactly one `\(from)`")
            site = site.replacingOccurrences(of: from, with: to)
        }
        let config = try Deploy.nginxConfig(dir: dir, site: site)
        let nginx = try Background("/usr/sbin/nginx", ["-p", dir.path, "-c", config.path, "-e", dir.appendingPathComponent("error.log").path])
        // SIGKILL: one process with nothing to save, and a SIGTERM can find the signal
        // blocked in the mask the test thread handed down (see Run.program).
        defer { nginx.signal(SIGKILL); nginx.wait() }
        let base = "http://127.0.0.1:\(cachePort)/hls/"
        // The first playlist (waits for the first segment).
        var first = ""
        let deadline = Moment.now.addingTimeInterval(30)
        while !first.contains("#EXTINF") && Moment.now < deadline {
            first = try Run.program("curl", ["-s", base + "index.m3u8"]).text
            if !first.contains("#EXTINF") { usleep(50_000) }
        }
        try #require(first.contains("#EXTINF"), "no playlist through nginx: \(first)")
        let reload = "index.m3u8?_HLS_msn=2&_HLS_part=0"
        var arguments = ["--parallel", "--parallel-max", "200", "-s"]
        for _ in 0..<200 {
            for name in ["init.mp4", "segment0.m4s", reload] { arguments += ["-o", "/dev/null", base + name] }
        }
        let readers = try Run.program("curl", arguments, timeout: 60)
        #expect(readers.status == 0, "\(readers.stderr)")
        let log = try String(contentsOf: dir.appendingPathComponent("access.log"), encoding: .utf8).split(separator: "\n")
        for name in ["init.mp4", "segment0.m4s", reload] {
            let lines = log.filter { $0.contains("\"GET /hls/\(name) HTTP") }
            #expect(lines.count == 200 && lines.allSatisfy { $0.contains("\" 200 ") }, "\(name): \(lines.count) answers")
            #expect(lines.filter { $0.hasSuffix("cache=MISS") }.count == 1, "\(name): fetched from the producer more than once")
            #expect(lines.filter { $0.hasSuffix("cache=HIT") }.count == 199, "\(name)")
        }

        // FFmpeg, after them, follows the rest of the stream through the cache.
        let probeOut = dir.appendingPathComponent("probe.txt")
        let ffprobe = try Background("ffprobe", ["-v", "error", "-count_frames", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", base + "index.m3u8"],
                                     stdoutTo: probeOut)
        // FFmpeg's first two segments through the cache (the readers' 200 are there already),
        // then the end. Two whole segments (30 pictures each: 1 s at 30 fps, an IDR each second)
        // are the 60 pictures asked of it below; stopped after its first, FFmpeg got that one
        // and the stop's part of the next, 59 pictures when the stop came a picture early.
        let fetchDeadline = Moment.now.addingTimeInterval(30)
        func segmentsFetched() -> Int {
            ((try? String(contentsOf: dir.appendingPathComponent("access.log"), encoding: .utf8)) ?? "")
                .split(separator: "\n").filter { $0.contains("\"GET /hls/segment") }.count
        }
        while segmentsFetched() < 202 && ffprobe.process.isRunning && Moment.now < fetchDeadline { usleep(50_000) }
        producer.signal(SIGINT)
        #expect(producer.wait(timeout: 20) == 0, "\(producer.stderr)")
        #expect(ffprobe.wait(timeout: 20) == 0)
        let frames = Int((try? String(contentsOf: probeOut, encoding: .utf8))?.split(separator: "\n").first ?? "") ?? 0
        #expect(frames >= 60, "FFmpeg through the cache: \(frames) frames")
    }
}
