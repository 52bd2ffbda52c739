/// Hands every item to every sink's runner. Used by the one reader thread (the loop
/// thread or the file reader); the runners do the rest.
public final class SinkFanout: Sendable {
    public let runners: [SinkRunner]

    public init(runners: [SinkRunner]) {
        self.runners = runners
    }

    public func push(_ item: SinkItem) {
        for runner in runners { runner.push(item) }
    }

    /// Several items at once: one lock per sink.
    public func push(_ items: [SinkItem]) {
        guard !items.isEmpty else { return }
        for runner in runners { runner.push(items) }
    }

    /// Finishes every sink: each gets the time left of `timeout` seconds. Returns the names
    /// of the sinks that did not finish in time.
    public func finish(timeout: Double) -> [String] {
        let deadline = monotonicNanoseconds() + UInt64(max(0, timeout) * 1e9)
        var late: [String] = []
        for runner in runners { runner.requestFinish() }
        for runner in runners {
            let now = monotonicNanoseconds()
            let left = now >= deadline ? 0 : Double(deadline - now) / 1e9
            if !runner.finish(timeout: left) { late.append(runner.name) }
        }
        return late
    }
}
