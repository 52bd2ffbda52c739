import Foundation
import Testing
import TestSupport

/// `consume --listen` / `--web`: a relay serving what it reads to real readers (FFmpeg,
/// headless Chromium), from nalcast produce, from FFmpeg's own Annex-B output, from a file
/// read at its pace, and through a producer's restart. Every process is stopped by its PID.
@Suite(.serialized) struct RelayServeTests {
    /// A relay of `from` serving on a port of the kernel's; returns it and its endpoint.
    static func relay(from: String, _ extra: [String] = []) throws -> (Background, String) {
        let r = try Background(Run.nalcast, ["consume", "--from", from, "--listen", "tcp://127.0.0.1:0"] + extra)
        guard let endpoint = r.servingEndpoint() else {
            r.signal(SIGKILL)
            r.wait()
            throw WebViewerTests.Failure("relay did not start: \(r.stderr)")
        }
        return (r, endpoint)
    }

    /// `ffmpeg -f h264 -i tcp://… -frames:v N`, decoding to per-frame checksums (one line a
    /// frame) in a file: started in the background so that many read at once.
    final class FFmpegReader {
        let output: URL
        let process: Background
        init(_ endpoint: String, frames: Int, in dir: URL) throws {
            output = dir.appendingPathComponent("reader-\(UUID().uuidString).framecrc")
            let port = endpoint.split(separator: ":").last!
            process = try Background("ffmpeg", ["-nostdin", "-hide_banner", "-v", "error", "-f", "h264", "-i", "tcp://127.0.0.1:\(port)",
                                                "-frames:v", String(frames), "-f", "framecrc", "-"], stdoutTo: output)
        }
        /// Waits for ffmpeg; its exit status, the frames it decoded and what it complained of.
        func finish(timeout: Double = 60) -> (status: Int32, frames: Int, errors: String) {
            let status = process.wait(timeout: timeout)
            let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            let frames = text.split(separator: "\n").filter { !$0.hasPrefix("#") }.count
            return (status, frames, process.stderr)
        }
    }

    /// The access units of a received stream: IDR or not, and the timestamp SEI's sequence.
    static func units(_ stream: Data) throws -> [(idr: Bool, sequence: Int?)] {
        let units = try inspect(stream)["units"] as? [[String: Any]] ?? []
        return units.map { ($0["idr"] as? Bool ?? false, ($0["timestamp"] as? [String: Any])?["sequence"] as? Int) }
    }

    static func stop(_ p: Background) -> Int32 {
        p.signal(SIGINT)
        return p.wait()
    }

    @Test func sixteenFFmpegReadersOfARelayOfProduceAllDecode() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let events = dir.appendingPathComponent("events.jsonl")
        let (producer, source) = try ServeTests.producer()
        let (relay, endpoint) = try Self.relay(from: source, ["--events", events.path])
        #expect(relay.waitFor("connected to"))
        let readers = try (0..<16).map { _ in try FFmpegReader(endpoint, frames: 60, in: dir) }
        for (i, reader) in readers.enumerated() {
            let r = reader.finish()
            #expect(r.status == 0, "reader \(i): \(r.errors)")
            #expect(r.frames == 60, "reader \(i) decoded \(r.frames) frames")
            #expect(r.errors.isEmpty, "reader \(i): \(r.errors)")
        }
        #expect(Self.stop(relay) == 0, "\(relay.stderr)")
        #expect(Self.stop(producer) == 0)
        let log = eventLines(events)
        #expect(log.filter { $0["event"] as? String == "reader-joined" }.count == 16)
        #expect(log.filter { $0["event"] as? String == "reader-started" }.count == 16)
        #expect(!log.contains { $0["event"] as? String == "handoff-gap" }, "\(log)")
    }

    /// FFmpeg as the source: libx264 (with B-frames, no timestamp SEI) written as Annex-B to a
    /// TCP listener of FFmpeg's own, which the relay connects to.
    @Test func ffmpegsAnnexBOutputIsRelayedToReaders() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let port = try FreePort.tcp()
        let source = try Background("ffmpeg", ["-nostdin", "-hide_banner", "-v", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
                                               "-t", "30", "-c:v", "libx264", "-preset", "veryfast", "-g", "30", "-bf", "2", "-pix_fmt", "yuv420p",
                                               "-f", "h264", "tcp://127.0.0.1:\(port)?listen=1"])
        defer { source.signal(SIGKILL); source.wait() }
        let (relay, endpoint) = try Self.relay(from: "tcp://127.0.0.1:\(port)")
        #expect(relay.waitFor("connected to"), "\(relay.stderr)")
        let readers = try (0..<3).map { _ in try FFmpegReader(endpoint, frames: 45, in: dir) }
        for (i, reader) in readers.enumerated() {
            let r = reader.finish()
            #expect(r.status == 0 && r.frames == 45, "reader \(i): \(r.frames) frames, \(r.errors)")
            #expect(r.errors.isEmpty, "reader \(i): \(r.errors)")
        }
        #expect(Self.stop(relay) == 0, "\(relay.stderr)")
    }

    /// Two relays of one producer (an IDR every 4 s, and one for each relay as it joins), one
    /// `--join gop`, one `--join next`; a reader joins each at the same moment, well into a
    /// GOP. The gop reader starts at once with the cached GOP (its burst reported), the next
    /// reader at the IDR after it; both decode from their first picture.
    @Test func aLateReaderGetsTheCachedGOPWithGopAndTheNextIDRWithNext() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let gopEvents = dir.appendingPathComponent("gop.jsonl")
        let nextEvents = dir.appendingPathComponent("next.jsonl")
        let producerEvents = dir.appendingPathComponent("producer.jsonl")
        let (producer, source) = try ServeTests.producer(["--keyint", "4s", "--events", producerEvents.path])
        let (gopRelay, gopEndpoint) = try Self.relay(from: source, ["--events", gopEvents.path])
        let (nextRelay, nextEndpoint) = try Self.relay(from: source, ["--join", "next", "--events", nextEvents.path])
        #expect(gopRelay.waitFor("connected to") && nextRelay.waitFor("connected to"))
        // Both relays start at the IDR the producer made for them (--join idr); 1.5 s later
        // both are some 45 pictures into that GOP, and the next IDR is 2.5 s away.
        usleep(1_500_000)
        let gopReader = try StreamReaderClient(gopEndpoint)
        let nextReader = try StreamReaderClient(nextEndpoint)
        // The next reader waits for the GOP after this one (some 2.5 s), then a few pictures of it.
        #expect(Wait.until { idrPictures(in: nextReader.received) >= 1 && accessUnitDelimiters(in: nextReader.received) > 10 },
                "the next reader got no IDR and pictures after it")
        let gopStream = gopReader.finish()
        let nextStream = nextReader.finish()
        #expect(Self.stop(gopRelay) == 0)
        #expect(Self.stop(nextRelay) == 0)
        #expect(Self.stop(producer) == 0)

        let gopUnits = try Self.units(gopStream)
        let nextUnits = try Self.units(nextStream)
        #expect(gopUnits.first?.idr == true && nextUnits.first?.idr == true)
        let gopFirst = try #require(gopUnits.first?.sequence)
        let nextFirst = try #require(nextUnits.first?.sequence)
        #expect(nextFirst > gopFirst, "the next reader started at \(nextFirst), the gop reader at \(gopFirst)")
        // The gop reader's first pictures are the frames the producer encoded from the GOP's
        // IDR, in order: a gap is a frame the producer dropped (a late slot on a loaded
        // machine), which it counts.
        let sequences = gopUnits.prefix(10).compactMap(\.sequence)
        let finished = eventLines(producerEvents).first { $0["event"] as? String == "finished" } ?? [:]
        let producerDropped = try #require(finished["framesDropped"] as? Int, "\(finished)")
        #expect(sequences.first == gopFirst && zip(sequences, sequences.dropFirst()).allSatisfy { $0 < $1 }, "\(sequences)")
        #expect(ServeTests.gaps(sequences) <= producerDropped, "\(sequences): gaps the producer counted no drop for (\(producerDropped) dropped)")
        for (name, stream) in [("gop", gopStream), ("next", nextStream)] {
            let decoded = try ffmpegDecode(stream)
            #expect(decoded.errors.isEmpty, "\(name): \(decoded.errors)")
            #expect(decoded.frames > 0, "\(name)")
        }
        let started = { (url: URL) in eventLines(url).first { $0["event"] as? String == "reader-started" } ?? [:] }
        let gopBurst = started(gopEvents)["burst"] as? Int ?? 0
        #expect(gopBurst >= 2, "the gop reader's burst: \(started(gopEvents))")
        // The burst is what the reader got before the live pictures: the cached GOP.
        #expect(gopUnits.count >= gopBurst)
        #expect(started(nextEvents)["burst"] as? Int == 1, "\(started(nextEvents))")
    }

    /// The relay's page in headless Chromium plays the relayed test pattern.
    @Test(.enabled(if: PlaybackTests.chromiumMissing == nil, "\(PlaybackTests.chromiumMissing ?? "")"))
    func chromiumPlaysTheRelaysPage() throws {
        let (producer, source) = try ServeTests.producer([], size: "640x360")
        defer { _ = Self.stop(producer) }
        let relay = try Background(Run.nalcast, ["consume", "--from", source, "--web", "tcp://127.0.0.1:0"])
        guard relay.waitFor("the page on "), let found = relay.stderr.split(separator: " ").first(where: { $0.hasPrefix("http://") }) else {
            relay.signal(SIGKILL)
            relay.wait()
            throw WebViewerTests.Failure("no page announced: \(relay.stderr)")
        }
        let url = String(found.split(separator: "\n")[0])
        let r = try Run.program(PlaybackTests.venvPython, [PlaybackTests.browserTools.appendingPathComponent("web_check.py").path, url, WebViewerTests.points], timeout: 120)
        #expect(r.status == 0, "\(r.text) \(r.stderr)")
        let seen = try #require(try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any], "\(r.text) \(r.stderr)")
        #expect((seen["painted"] as? Int ?? 0) >= 30, "\(seen)")
        #expect(seen["width"] as? Int == 640 && seen["height"] as? Int == 360, "\(seen)")
        #expect(seen["errors"] as? Int == 0 && seen["problem"] is NSNull, "\(seen)")
        WebViewerTests.checkBars(seen["pixels"] as? [[Int]] ?? [], "the relay's canvas")
        #expect(Self.stop(relay) == 0, "\(relay.stderr)")
    }

    /// The producer stops cleanly and starts again on the same port: the relay's reader
    /// stays connected, gets the new stream from its first IDR, and decodes all of it.
    @Test func aReaderStaysConnectedThroughAProducerRestart() throws {
        let port = try FreePort.tcp()
        let address = "tcp://127.0.0.1:\(port)"
        let first = try Background(Run.nalcast, ["produce", "--size", "320x240", "--listen", address])
        #expect(first.waitFor("serving "))
        let (relay, endpoint) = try Self.relay(from: address)
        #expect(relay.waitFor("connected to"))
        let reader = try StreamReaderClient(endpoint)
        #expect(Wait.until { accessUnitDelimiters(in: reader.received) > 30 }, "the reader got no second of the first producer's pictures")
        let idrsOfTheFirst = idrPictures(in: reader.received)
        #expect(Self.stop(first) == 0)
        #expect(relay.waitFor("disconnected from"), "\(relay.stderr)")
        // A reader that joins while the source is away is sent no old pictures (the cached
        // GOP went with the source): it waits, and starts at the new source's first IDR.
        let late = try StreamReaderClient(endpoint)
        usleep(1_000_000)
        #expect(late.received.isEmpty, "\(late.received.count) bytes of a source that is gone")
        let second = try Background(Run.nalcast, ["produce", "--size", "320x240", "--listen", address])
        #expect(second.waitFor("serving "))
        #expect(Wait.until { relay.stderr.components(separatedBy: "connected to ").count > 2 }, "not connected again: \(relay.stderr)")
        // Both readers get the second producer's first IDR and a second of pictures after it.
        #expect(Wait.until { idrPictures(in: reader.received) > idrsOfTheFirst && idrPictures(in: late.received) >= 1
                             && accessUnitDelimiters(in: late.received) > 30 }, "the second producer's pictures did not come")
        #expect(!reader.isClosedByPeer, "the relay closed its reader: \(relay.stderr)")
        let lateUnits = try Self.units(late.finish())
        #expect(lateUnits.first?.idr == true && (lateUnits.first?.sequence ?? 999) < 60, "the late reader's first unit: \(String(describing: lateUnits.first))")
        let stream = reader.finish()
        #expect(Self.stop(second) == 0)
        #expect(Self.stop(relay) == 0)

        let units = try Self.units(stream)
        let sequences = units.map { $0.sequence ?? -1 }
        // Both producers' pictures: the sequence starts again (at the second one's first IDR).
        let restart = try #require(sequences.indices.dropFirst().first { sequences[$0] < sequences[$0 - 1] }, "one producer's frames only: \(sequences.suffix(5))")
        #expect(units[restart].idr, "after the restart the reader starts at an IDR")
        let decoded = try ffmpegDecode(stream)
        #expect(decoded.errors.isEmpty, "\(decoded.errors)")
        #expect(decoded.frames == units.count, "\(decoded.frames) of \(units.count) decoded")
    }

    /// A file served paced: readers get it at about its frame rate (counts over a window,
    /// loosely), then the end of stream, and the run exits 0.
    @Test func aFileIsServedAtThePaceOfItsMediaTimeThenEnds() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try inputFile(try Streams.ffmpeg(frames: 150, keyint: 30), in: dir)
        let events = dir.appendingPathComponent("events.jsonl")
        let (relay, endpoint) = try Self.relay(from: input.path, ["--events", events.path])
        let reader = try StreamReaderClient(endpoint)
        usleep(2_000_000)
        // 5 s of pictures: after 2 s, far from all of them (as fast as the disk, all at once).
        let early = try Self.units(reader.received).count
        #expect(early < 130, "\(early) of 150 access units in the first 2 s: not paced")
        #expect(relay.wait(timeout: 30) == 0, "\(relay.stderr)")
        // The reader's thread sees the end when it reads it: wait for that, not a moment.
        #expect(Wait.until { reader.isClosedByPeer })
        let stream = reader.finish()
        #expect(endsWithEndOfStream([UInt8](stream)), "no end-of-stream NAL unit at the end")
        let units = try Self.units(stream)
        #expect(units.first?.idr == true)
        #expect(units.count > early && units.count >= 90, "\(units.count) access units")
        let decoded = try ffmpegDecode(stream)
        #expect(decoded.errors.isEmpty, "\(decoded.errors)")
        #expect(eventLines(events).contains { $0["event"] as? String == "reader-started" })
    }

    /// `--realtime` without a relay: a file pushed on at the pace it was recorded, one access
    /// unit at a time (a recording sent to a live platform as if it were live); without it,
    /// the same file is written as fast as it is read.
    @Test func realtimePacesAFileForTheOutputsAlone() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try inputFile(try Streams.ffmpeg(frames: 150, keyint: 30), in: dir)
        let out = dir.appendingPathComponent("paced.h264")
        let paced = try Background(Run.nalcast, ["consume", "--from", input.path, "--realtime", "-o", out.path])
        usleep(2_000_000)
        // 5 s of pictures: after 2 s, some of them and far from all.
        let early = try Self.units((try? Data(contentsOf: out)) ?? Data()).count
        #expect(early > 0 && early < 130, "\(early) of 150 access units written in the first 2 s: not paced")
        #expect(paced.wait(timeout: 30) == 0, "\(paced.stderr)")
        let units = try Self.units(try Data(contentsOf: out))
        #expect(units.count == 150, "\(units.count) access units")
        let decoded = try ffmpegDecode(try Data(contentsOf: out))
        #expect(decoded.errors.isEmpty, "\(decoded.errors)")
        let dryRun = try Run.nalcast(["consume", "--from", input.path, "--realtime", "-o", out.path, "--dry-run"])
        #expect(dryRun.text.contains("realtime: on"), "\(dryRun.text)")
        let fast = try Run.nalcast(["consume", "--from", input.path, "-o", out.path, "--dry-run"])
        #expect(fast.text.contains("realtime: off"), "\(fast.text)")
    }

    /// A WebSocket viewer of `/ws` on 127.0.0.1:`port`, by hand: the flags and pts_90k of the
    /// first `count` access-unit messages (docs/architecture.md has their header).
    static func viewerMessages(port: Int, count: Int) throws -> [(flags: UInt8, pts: UInt64)] {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = UInt16(port).bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard r == 0 else { throw POSIXError(.ECONNREFUSED) }
        let request = "GET /ws HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
            + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
        _ = request.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        var buffer: [UInt8] = []
        func need(_ n: Int) throws {
            var chunk = [UInt8](repeating: 0, count: 65536)
            while buffer.count < n {
                let got = read(fd, &chunk, chunk.count)
                guard got > 0 else { throw POSIXError(.ECONNRESET) }
                buffer += chunk[0..<got]
            }
        }
        // The 101 answer, up to its blank line.
        while true {
            try need(buffer.count + 1)
            if let end = (0..<max(0, buffer.count - 3)).first(where: { buffer[$0..<$0 + 4] == [13, 10, 13, 10] }) {
                #expect(String(decoding: buffer[0..<end], as: UTF8.self).hasPrefix("HTTP/1.1 101"))
                buffer.removeFirst(end + 4)
                break
            }
        }
        var messages: [(UInt8, UInt64)] = []
        while messages.count < count {
            try need(2)
            var length = Int(buffer[1] & 0x7f)
            var head = 2
            if length == 126 { try need(4); length = Int(buffer[2]) << 8 | Int(buffer[3]); head = 4 }
            if length == 127 { try need(10); length = buffer[2..<10].reduce(0) { $0 << 8 | Int($1) }; head = 10 }
            try need(head + length)
            let payload = Array(buffer[head..<(head + length)])
            buffer.removeFirst(head + length)
            guard payload.count >= 18 else { continue }
            let pts = payload[10..<18].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            messages.append((payload[1], pts))
        }
        return messages
    }

    /// A stream without a timestamp SEI (FFmpeg's), served to a browser viewer: every
    /// message carries the relay's media time, rising a frame interval at a time.
    @Test func aViewerOfAStreamWithoutTimestampsGetsRisingMediaTimes() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = try inputFile(try Streams.ffmpeg(frames: 150, keyint: 30), in: dir)
        let relay = try Background(Run.nalcast, ["consume", "--from", input.path, "--web", "tcp://127.0.0.1:0"])
        defer { _ = Self.stop(relay) }
        #expect(relay.waitFor("the page on "), "\(relay.stderr)")
        let port = try #require(relay.stderr.firstMatch(of: /http:\/\/127\.0\.0\.1:(\d+)\//).map { Int($0.1)! })
        let messages = try Self.viewerMessages(port: port, count: 40)
        #expect(messages.first.map { $0.flags & 1 } == 1, "the first message is a keyframe")
        #expect(messages.allSatisfy { $0.flags & 2 == 0 }, "no capture time without a timestamp SEI")
        let steps = zip(messages, messages.dropFirst()).map { Int64($0.1.pts) - Int64($0.0.pts) }
        #expect(steps.allSatisfy { $0 == 3000 }, "pts steps at 30 fps: \(steps)")
    }

    /// A relay's /metrics (on --metrics and on --web) names what operations.md's consume
    /// tables say, and its status line counts its readers.
    @Test func aRelaysMetricsAreTheDocumentedOnes() throws {
        let (producer, source) = try ServeTests.producer()
        defer { _ = Self.stop(producer) }
        let metricsPort = try freePort(), webPort = try freePort()
        let (relay, endpoint) = try Self.relay(from: source, ["--metrics", "tcp://127.0.0.1:\(metricsPort)", "--web", "tcp://127.0.0.1:\(webPort)", "--stats"])
        let reader = try StreamReaderClient(endpoint)
        var served: Set<String> = [], onWeb: Set<String> = []
        Wait.until(every: 0.1) {
            if served.isEmpty { served = DocsTests.servedMetrics(metricsPort) }
            if onWeb.isEmpty { onWeb = DocsTests.servedMetrics(webPort) }
            return !served.isEmpty && !onWeb.isEmpty
        }
        #expect(Wait.until { relay.stderr.contains("readers=1") }, "\(relay.stderr)")
        _ = reader.finish()
        #expect(Self.stop(relay) == 0)
        let documented = try DocsTests.documentedMetrics("consume").union(try DocsTests.documentedMetrics("consume --listen"))
        // Sinks' metrics appear with a sink only; this relay has none.
        let expected = documented.filter { !$0.hasPrefix("nalcast_sink_") }
        #expect(served == expected, "served by the relay: \(served.sorted())")
        #expect(onWeb == served)
    }

    @Test func joinIDRIsRefusedAndDryRunShowsTheServing() throws {
        let r = try Run.nalcast(["consume", "--from", "tcp://127.0.0.1:7264", "--listen", "tcp://127.0.0.1:7265", "--join", "idr"])
        #expect(r.status == 64)
        #expect(r.stderr.contains("--join idr") && r.stderr.contains("gop") && r.stderr.contains("next"), "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")

        let dry = try Run.nalcast(["consume", "--from", "x.h264", "--listen", "tcp://127.0.0.1:7265", "--web", "tcp://127.0.0.1:8080",
                                   "--max-readers", "4", "--dry-run"])
        #expect(dry.status == 0, "\(dry.stderr)")
        for line in ["listen: tcp://127.0.0.1:7265", "web: tcp://127.0.0.1:8080", "join: gop", "max-readers=4", "realtime: on"] {
            #expect(dry.text.contains(line), "\(line) missing from \(dry.text)")
        }
        let remote = try Run.nalcast(["consume", "--listen", "tcp://0.0.0.0:7265", "--dry-run"])
        #expect(remote.status == 64 && remote.stderr.contains("--allow-remote"), "\(remote.stderr)")
    }
}
