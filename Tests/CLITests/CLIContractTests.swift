import Foundation
import Testing

/// What users see, byte for byte against `Tests/Fixtures/cli/`: help, `--dry-run`, error
/// lines and exit codes, `inspect`'s report, and the names of metrics and the fields of
/// events of short runs. A change of any of them is a failing diff until the fixtures are
/// written again on purpose (`NALCAST_UPDATE_FIXTURES=1`, docs/testing.md): the guard of a
/// reshaping of the code that must change nothing for users.
@Suite struct CLIContractTests {
    /// Runs `cases` in a fresh directory holding the inputs they name; their transcript.
    static func transcript(_ cases: [ContractCase], containers: Bool = false) throws -> String {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try ContractInputs.make(in: dir, containers: containers)
        return try Contract.transcript(cases, in: dir)
    }

    @Test func help() throws {
        try Contract.check(try Self.transcript(ContractCases.help), against: "help.txt")
    }

    @Test func produceDryRun() throws {
        try Contract.check(try Self.transcript(ContractCases.produceDryRuns), against: "dry-run-produce.txt")
    }

    @Test func consumeAndProbeDryRun() throws {
        try Contract.check(try Self.transcript(ContractCases.consumeDryRuns, containers: true), against: "dry-run-consume.txt")
    }

    @Test func inspectReport() throws {
        try Contract.check(try Self.transcript(ContractCases.inspect), against: "inspect.txt")
    }

    @Test func errorsAndExitCodes() throws {
        let busy = try HeldPort(listening: true), refused = try HeldPort(listening: false)
        defer { busy.close(); refused.close() }
        let cases = ContractCases.errors(busy: busy.port, refused: refused.port)
        let text = try Self.transcript(cases, containers: true)
        #expect(!text.contains("\nexit 0\n"), "a bad invocation ran: it may hold a port other tests use")
        try Contract.check(text, against: "errors.txt")
    }

    /// A producer with every kind of listener, the page, `--metrics`, `-o` and a forward,
    /// and a relay of it with segments: their /metrics, and their events through readers
    /// joining and refused, an IDR and a bitrate asked for, and a stop.
    @Test func metricsAndEventsOfAProducerAndItsRelay() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let forward = try ForwardCatcher()
        var masks = [(dir.path, "$TMP"), ("127.0.0.1:\(forward.port)", "127.0.0.1:FORWARD")]
        let producer = try ContractProcess(
            ["produce", "--size", "160x120", "--listen", "tcp://127.0.0.1:0", "--listen", "ts:tcp://127.0.0.1:0", "--web", "tcp://127.0.0.1:0",
             "--metrics", "tcp://127.0.0.1:0", "--max-readers", "2", "-o", dir.appendingPathComponent("p.ts").path,
             "--forward", "tcp://127.0.0.1:\(forward.port)"], events: dir.appendingPathComponent("producer.jsonl"), dir: dir)
        let stream = try #require(producer.port(/serving tcp:\/\/127\.0\.0\.1:(\d+)/), "\(producer.process.stderr)")
        let ts = try #require(producer.port(/serving ts:tcp:\/\/127\.0\.0\.1:(\d+)/))
        let web = try #require(producer.port(/the page on http:\/\/127\.0\.0\.1:(\d+)\//))
        let producerMetrics = try #require(producer.metricsPort())
        masks.append(("127.0.0.1:\(stream)", "127.0.0.1:STREAM"))
        let segments = dir.appendingPathComponent("seg")
        let relay = try ContractProcess(
            ["consume", "--from", "tcp://127.0.0.1:\(stream)", "--listen", "tcp://127.0.0.1:0", "--listen", "ts:tcp://127.0.0.1:0", "--web", "tcp://127.0.0.1:0",
             "--metrics", "tcp://127.0.0.1:0", "--segments", segments.path, "--segment-name", "seg-%n.mp4", "-o", dir.appendingPathComponent("r.mkv").path],
            events: dir.appendingPathComponent("relay.jsonl"), dir: dir)
        let relayWeb = try #require(relay.port(/the page on http:\/\/127\.0\.0\.1:(\d+)\//), "\(relay.process.stderr)")
        let relayMetrics = try #require(relay.metricsPort())
        // The relay and a reader of the MPEG-TS listener are the two readers --max-readers lets in.
        let tsReader = try StreamReaderClient("tcp://127.0.0.1:\(ts)")
        #expect(producer.waitForEvent("reader-started", count: 2), "\(producer.process.stderr)")
        let third = try StreamReaderClient("tcp://127.0.0.1:\(stream)")
        #expect(producer.waitForEvent("reader-refused"))
        let bitrate = try Run.program("curl", ["-s", "--max-time", "10", "-X", "POST", "-d", "500k", "http://127.0.0.1:\(producerMetrics)/bitrate"])
        #expect(bitrate.status == 0, "\(bitrate.stderr)")
        producer.process.signal(SIGUSR1)
        for name in ["bitrate-requested", "idr-forced", "forward-connected"] { #expect(producer.waitForEvent(name), "\(name)") }
        #expect(relay.waitForEvent("segment-opened"), "\(relay.process.stderr)")

        let served = ContractShape.metricNames(try ContractProcess.metrics(producerMetrics))
        #expect(ContractShape.metricNames(try ContractProcess.metrics(web)) == served, "--web's /metrics is --metrics' /metrics")
        let relayed = ContractShape.metricNames(try ContractProcess.metrics(relayMetrics))
        #expect(ContractShape.metricNames(try ContractProcess.metrics(relayWeb)) == relayed)
        let relayEnd = relay.stop()
        let producerEnd = producer.stop()
        _ = tsReader.finish()
        _ = third.finish()
        forward.finish()
        let text = [producer.section(producerEnd, metrics: served, from: "--metrics, and the same on --web", masks: masks),
                    relay.section(relayEnd, metrics: relayed, from: "--metrics, and the same on --web", masks: masks)]
        try Contract.check(text.joined(separator: "\n"), against: "runs-produce-relay.txt")
    }

    /// A producer with sound (a tone and a WAV file that ends, mixed), its MPEG-TS listener
    /// read by `consume` through libavformat into a file and segments: their /metrics and events.
    @Test func metricsAndEventsWithSound() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        try ContractInputs.wav(seconds: 0.1).write(to: dir.appendingPathComponent("in.wav"))
        var masks = [(dir.path, "$TMP")]
        let producer = try ContractProcess(
            ["produce", "--size", "160x120", "--audio", "tone", "--audio", "wav:" + dir.appendingPathComponent("in.wav").path,
             "--listen", "ts:tcp://127.0.0.1:0", "--web", "tcp://127.0.0.1:0", "-o", dir.appendingPathComponent("p.mp4").path],
            events: dir.appendingPathComponent("producer.jsonl"), dir: dir)
        let ts = try #require(producer.port(/serving ts:tcp:\/\/127\.0\.0\.1:(\d+)/), "\(producer.process.stderr)")
        let web = try #require(producer.port(/the page on http:\/\/127\.0\.0\.1:(\d+)\//))
        masks.append(("127.0.0.1:\(ts)", "127.0.0.1:STREAM"))
        let consumer = try ContractProcess(
            ["consume", "--from", "ts:tcp://127.0.0.1:\(ts)", "-o", dir.appendingPathComponent("c.ts").path, "--metrics", "tcp://127.0.0.1:0",
             "--segments", dir.appendingPathComponent("seg").path, "--segment-name", "c-%n.ts"],
            events: dir.appendingPathComponent("consumer.jsonl"), dir: dir)
        let consumerMetrics = try #require(consumer.metricsPort(), "\(consumer.process.stderr)")
        producer.process.signal(SIGUSR1)
        for name in ["audio-connected", "audio-ended", "reader-started", "idr-forced"] {
            #expect(producer.waitForEvent(name), "\(name): \(producer.process.stderr)")
        }
        for name in ["connected", "segment-opened"] { #expect(consumer.waitForEvent(name), "\(name): \(consumer.process.stderr)") }

        let served = ContractShape.metricNames(try ContractProcess.metrics(web))
        let consumed = ContractShape.metricNames(try ContractProcess.metrics(consumerMetrics))
        let consumerEnd = consumer.stop()
        let producerEnd = producer.stop()
        let text = [producer.section(producerEnd, metrics: served, from: "--web", masks: masks),
                    consumer.section(consumerEnd, metrics: consumed, from: "--metrics", masks: masks)]
        try Contract.check(text.joined(separator: "\n"), against: "runs-sound.txt")
    }
}
