/// What travels through a sink's queue.
public enum SinkItem: Sendable {
    case unit(TimedUnit)
    /// The input was cut and resumed (a reconnect): what follows is a new stream, starting
    /// at an entry point.
    case discontinuity
    /// The sink's queue was full and this many access units were skipped; the next unit
    /// resumes at an entry point.
    case gap(skipped: Int)
}
