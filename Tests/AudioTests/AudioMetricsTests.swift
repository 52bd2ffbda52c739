import Audio
import H264
import Media
import Output
import Metrics
import Synchronization
import Testing

/// produce's audio figures in the metrics registry, and where its packets go.
@Suite struct AudioMetricsTests {
    /// Packets delivered before any sink carries audio are counted, not lost without a word;
    /// once a sink takes them, each gets every packet and the count stops.
    @Test func packetsNoSinkTookAreCountedInTheRegistry() throws {
        let capture = try AudioCapture(sources: [.tone], onPacket: { _ in })
        let delivery = AudioDelivery()
        let registry = MetricsRegistry()
        capture.registerMetrics(in: registry, delivery: delivery)
        let packet = AudioPacket(data: [0x21, 0x10], mediaTime: .zero)
        delivery.deliver(packet)
        delivery.deliver(packet)
        let received = Mutex<[Int]>([0, 0])
        delivery.add { _ in received.withLock { $0[0] += 1 } }
        delivery.add { _ in received.withLock { $0[1] += 1 } }
        delivery.deliver(packet)
        #expect(received.withLock { $0 } == [1, 1])
        #expect(delivery.unsentCount == 2)
        let lines = registry.render().split(separator: "\n").map(String.init)
        #expect(lines.contains("nalcast_audio_unsent_packets_total{reason=\"no-output\"} 2"))
        #expect(lines.contains("nalcast_audio_unsent_packets_total{reason=\"before-video\"} 0"))
        #expect(lines.contains("nalcast_audio_source_up{source=\"tone\"} 1"))
        #expect(lines.contains("nalcast_audio_source_losses_total{source=\"tone\"} 0"))
        #expect(lines.contains("# TYPE nalcast_audio_dropped_samples_total counter"))
        #expect(lines.filter { $0.hasPrefix("# HELP nalcast_audio_") }.count == 6)
    }
}
