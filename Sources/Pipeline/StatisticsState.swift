/// The pipeline's counters plus a ring of recent latencies, behind the control's lock.
struct StatisticsState: Sendable {
    static let latencyWindow = 1024
    var counters = CaptureStatistics()
    var encodeTotalNs: Int64 = 0
    var latencies: [Int64] = []
    var latencyNext = 0

    mutating func record(latencyNs: Int64) {
        if latencies.count < StatisticsState.latencyWindow {
            latencies.append(latencyNs)
        } else {
            latencies[latencyNext] = latencyNs
        }
        latencyNext = (latencyNext + 1) % StatisticsState.latencyWindow
    }

    func snapshot() -> CaptureStatistics {
        var out = counters
        guard !latencies.isEmpty else { return out }
        let sorted = latencies.sorted()
        func at(_ q: Double) -> Double { Double(sorted[Swift.min(sorted.count - 1, Int(q * Double(sorted.count)))]) / 1e6 }
        out.latencyMedianMs = at(0.5)
        out.latencyP99Ms = at(0.99)
        out.latencySamples = sorted.count
        return out
    }
}
