import Clocks
import Media
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

    /// The audio track of what follows (`SinkItem.audioFormat`): before its first packet.
    /// `produce --audio` calls it once its encoder is open, before handing any packet, and
    /// again only if the track changes. Container sinks declare the track in the header they
    /// write at the next video entry point (a sink whose header is already written when the
    /// format comes counts the packets it cannot carry); Annex-B sinks say once that they
    /// carry video only.
    public func deliver(audioFormat: AudioFormat) {
        push(.audioFormat(audioFormat))
    }

    /// One encoded audio packet, on the video's media time line (`AudioPacket.mediaTime`,
    /// the timestamp SEI's `pts_90k` clock), from the thread that also pushes the video (or
    /// any one thread: the runners' queues keep each caller's order). Packets should come in
    /// time order and within a second or so of the video of the same instant; container
    /// sinks interleave the two by time.
    public func deliver(audio: AudioPacket) {
        push(.audio(audio))
    }

    /// Finishes every sink: each gets the time left of `timeout` seconds. Returns the names
    /// of the sinks that did not finish in time.
    public func finish(timeout: Double) -> [String] {
        let deadline = MonotonicClock.nanoseconds + UInt64(max(0, timeout) * 1e9)
        var late: [String] = []
        for runner in runners { runner.requestFinish() }
        for runner in runners {
            let now = MonotonicClock.nanoseconds
            let left = now >= deadline ? 0 : Double(deadline - now) / 1e9
            if !runner.finish(timeout: left) { late.append(runner.name) }
        }
        return late
    }
}
