import Metrics
import XCTest

final class MetricsTests: XCTestCase {
    func testRendersPrometheusText() {
        let registry = MetricsRegistry()
        let frames = registry.counter("nalcast_frames_total", help: "Frames encoded.")
        let readers = registry.gauge("nalcast_readers", help: "Readers connected.")
        let join = registry.histogram("nalcast_join_seconds", help: "Join to first picture.", buckets: [0.1, 0.5])
        frames.increment(by: 3)
        readers.set(2)
        join.observe(0.05)
        join.observe(0.3)
        join.observe(2)
        XCTAssertEqual(registry.render(), """
            # HELP nalcast_frames_total Frames encoded.
            # TYPE nalcast_frames_total counter
            nalcast_frames_total 3
            # HELP nalcast_readers Readers connected.
            # TYPE nalcast_readers gauge
            nalcast_readers 2
            # HELP nalcast_join_seconds Join to first picture.
            # TYPE nalcast_join_seconds histogram
            nalcast_join_seconds_bucket{le="0.1"} 1
            nalcast_join_seconds_bucket{le="0.5"} 2
            nalcast_join_seconds_bucket{le="+Inf"} 3
            nalcast_join_seconds_sum 2.35
            nalcast_join_seconds_count 3

            """)
    }

    func testLabelsShareOneFamilyAndSameSeriesIsReused() {
        let registry = MetricsRegistry()
        let a = registry.counter("nalcast_skips_total", help: "Skips.", labels: [("reader", "1")])
        let b = registry.counter("nalcast_skips_total", help: "Skips.", labels: [("reader", "say \"hi\"")])
        XCTAssertTrue(a === registry.counter("nalcast_skips_total", help: "Skips.", labels: [("reader", "1")]))
        a.increment()
        b.increment(by: 2)
        let text = registry.render()
        XCTAssertEqual(text.components(separatedBy: "# TYPE nalcast_skips_total counter").count, 2)
        XCTAssertTrue(text.contains("nalcast_skips_total{reader=\"1\"} 1\n"))
        XCTAssertTrue(text.contains("nalcast_skips_total{reader=\"say \\\"hi\\\"\"} 2\n"))
    }

    func testCountsFromManyThreads() {
        let registry = MetricsRegistry()
        let counter = registry.counter("nalcast_events_total", help: "Events.")
        DispatchQueue.concurrentPerform(iterations: 4) { _ in
            for _ in 0..<10_000 { counter.increment() }
        }
        XCTAssertEqual(counter.value, 40_000)
    }

    func testSampledMetricsAreReadAtEachRendering() {
        let registry = MetricsRegistry()
        let value = Counter()
        registry.sampledCounter("nalcast_sampled_total", help: "Read when rendered.", labels: [("reason", "a")]) { value.value }
        registry.sampledGauge("nalcast_sampled_ms", help: "A gauge read when rendered.") { Double(value.value) / 2 }
        value.increment(by: 3)
        XCTAssertEqual(registry.render(), """
            # HELP nalcast_sampled_total Read when rendered.
            # TYPE nalcast_sampled_total counter
            nalcast_sampled_total{reason="a"} 3
            # HELP nalcast_sampled_ms A gauge read when rendered.
            # TYPE nalcast_sampled_ms gauge
            nalcast_sampled_ms 1.5

            """)
        value.increment()
        XCTAssertTrue(registry.render().contains("nalcast_sampled_total{reason=\"a\"} 4\n"))
    }
}
