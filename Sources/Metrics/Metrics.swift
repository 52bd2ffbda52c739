import Synchronization

/// Metrics in the Prometheus text exposition format (version 0.0.4), for `--metrics`.
///
/// Thread-safe: the capture thread bumps counters while the loop thread renders.
public final class MetricsRegistry: Sendable {
    private struct Family {
        let name: String
        let help: String
        let type: String
        var series: [(labels: String, metric: any RenderableMetric)]
    }

    private let families = Mutex<[Family]>([])

    public init() {}

    /// A counter, created on first use. Names should start with `nalcast_` and end with `_total`.
    public func counter(_ name: String, help: String, labels: [(String, String)] = []) -> Counter {
        register(name, help: help, type: "counter", labels: labels) { Counter() }
    }

    public func gauge(_ name: String, help: String, labels: [(String, String)] = []) -> Gauge {
        register(name, help: help, type: "gauge", labels: labels) { Gauge() }
    }

    /// A histogram with fixed bucket upper bounds (sorted, `+Inf` added).
    public func histogram(_ name: String, help: String, buckets: [Double], labels: [(String, String)] = []) -> Histogram {
        register(name, help: help, type: "histogram", labels: labels) { Histogram(buckets: buckets) }
    }

    /// A counter whose value is read when the registry is rendered: for figures another part
    /// keeps anyway (a statistics snapshot), so that nothing is counted twice.
    public func sampledCounter(_ name: String, help: String, labels: [(String, String)] = [], value: @escaping @Sendable () -> UInt64) {
        _ = register(name, help: help, type: "counter", labels: labels) { Sampled { Double(value()) } }
    }

    /// A gauge whose value is read when the registry is rendered.
    public func sampledGauge(_ name: String, help: String, labels: [(String, String)] = [], value: @escaping @Sendable () -> Double) {
        _ = register(name, help: help, type: "gauge", labels: labels) { Sampled(value) }
    }

    /// The whole registry as Prometheus text.
    public func render() -> String {
        families.withLock { families in
            var out = ""
            for family in families {
                out += "# HELP \(family.name) \(escapeHelp(family.help))\n"
                out += "# TYPE \(family.name) \(family.type)\n"
                for series in family.series {
                    series.metric.render(name: family.name, labels: series.labels, into: &out)
                }
            }
            return out
        }
    }

    private func register<M: RenderableMetric>(
        _ name: String, help: String, type: String, labels: [(String, String)], make: () -> M
    ) -> M {
        precondition(Self.isValidName(name), "bad metric name \(name)")
        let rendered = renderLabels(labels)
        return families.withLock { families in
            if let f = families.firstIndex(where: { $0.name == name }) {
                precondition(families[f].type == type, "\(name) is already a \(families[f].type)")
                if let existing = families[f].series.first(where: { $0.labels == rendered }) {
                    return existing.metric as! M
                }
                let metric = make()
                families[f].series.append((rendered, metric))
                return metric
            }
            let metric = make()
            families.append(Family(name: name, help: help, type: type, series: [(rendered, metric)]))
            return metric
        }
    }

    static func isValidName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first.properties.isAlphabetic || first == "_" || first == ":" else { return false }
        return name.unicodeScalars.allSatisfy { ($0.isASCII && $0.properties.isAlphabetic) || ("0"..."9").contains($0) || $0 == "_" || $0 == ":" }
    }
}

/// A value that only goes up. Lock-free: safe to bump from the capture thread.
public final class Counter: Sendable, RenderableMetric {
    private let atomic = Atomic<UInt64>(0)

    public init() {}

    public func increment(by amount: UInt64 = 1) { atomic.wrappingAdd(amount, ordering: .relaxed) }
    public var value: UInt64 { atomic.load(ordering: .relaxed) }

    func render(name: String, labels: String, into out: inout String) {
        out += "\(name)\(labels) \(value)\n"
    }
}

/// A value that goes up and down.
public final class Gauge: Sendable, RenderableMetric {
    private let state = Mutex<Double>(0)

    public init() {}

    public func set(_ value: Double) { state.withLock { $0 = value } }
    public func add(_ amount: Double) { state.withLock { $0 += amount } }
    public var value: Double { state.withLock { $0 } }

    func render(name: String, labels: String, into out: inout String) {
        out += "\(name)\(labels) \(formatSample(value))\n"
    }
}

/// Observations counted in fixed buckets (cumulative, as Prometheus wants them).
public final class Histogram: Sendable, RenderableMetric {
    /// Upper bounds, ascending, without `+Inf`.
    public let buckets: [Double]
    private struct State {
        var counts: [UInt64]
        var sum: Double = 0
        var count: UInt64 = 0
    }
    private let state: Mutex<State>

    public init(buckets: [Double]) {
        let sorted = Array(Set(buckets.filter { $0.isFinite })).sorted()
        self.buckets = sorted
        self.state = Mutex(State(counts: Array(repeating: 0, count: sorted.count)))
    }

    public func observe(_ value: Double) {
        state.withLock { s in
            if let i = buckets.firstIndex(where: { value <= $0 }) { s.counts[i] += 1 }
            s.sum += value
            s.count += 1
        }
    }

    public var count: UInt64 { state.withLock { $0.count } }
    public var sum: Double { state.withLock { $0.sum } }

    func render(name: String, labels: String, into out: inout String) {
        let s = state.withLock { $0 }
        var cumulative: UInt64 = 0
        for (bound, n) in zip(buckets, s.counts) {
            cumulative += n
            out += "\(name)_bucket\(addLabel(labels, "le", formatSample(bound))) \(cumulative)\n"
        }
        out += "\(name)_bucket\(addLabel(labels, "le", "+Inf")) \(s.count)\n"
        out += "\(name)_sum\(labels) \(formatSample(s.sum))\n"
        out += "\(name)_count\(labels) \(s.count)\n"
    }
}

/// A value read when the registry is rendered (`sampledCounter`, `sampledGauge`).
final class Sampled: Sendable, RenderableMetric {
    private let read: @Sendable () -> Double

    init(_ read: @escaping @Sendable () -> Double) { self.read = read }

    func render(name: String, labels: String, into out: inout String) {
        out += "\(name)\(labels) \(formatSample(read()))\n"
    }
}

/// A metric the registry can write out.
protocol RenderableMetric: Sendable {
    func render(name: String, labels: String, into out: inout String)
}

/// Prometheus sample values: integers without a fraction, `+Inf`, `-Inf`, `NaN`.
func formatSample(_ value: Double) -> String {
    if value.isNaN { return "NaN" }
    if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
    if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
    return "\(value)"
}

/// `{a="1",b="2"}`, or nothing without labels. Values are escaped as the format requires.
func renderLabels(_ labels: [(String, String)]) -> String {
    guard !labels.isEmpty else { return "" }
    return "{" + labels.map { "\($0.0)=\"\(escapeLabelValue($0.1))\"" }.joined(separator: ",") + "}"
}

private func addLabel(_ labels: String, _ key: String, _ value: String) -> String {
    let pair = "\(key)=\"\(value)\""
    return labels.isEmpty ? "{\(pair)}" : String(labels.dropLast()) + ",\(pair)}"
}

private func escapeLabelValue(_ s: String) -> String {
    s.replacingAll("\\", with: "\\\\").replacingAll("\"", with: "\\\"").replacingAll("\n", with: "\\n")
}

private func escapeHelp(_ s: String) -> String {
    s.replacingAll("\\", with: "\\\\").replacingAll("\n", with: "\\n")
}

extension String {
    /// Plain substring replacement without Foundation.
    fileprivate func replacingAll(_ target: Character, with replacement: String) -> String {
        var out = ""
        out.reserveCapacity(count)
        for c in self { if c == target { out += replacement } else { out.append(c) } }
        return out
    }
}
