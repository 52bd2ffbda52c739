import Media

/// What travels through a sink's queue.
public enum SinkItem: Sendable {
    case unit(TimedUnit)
    /// The input was cut and resumed (a reconnect): what follows is a new stream, starting
    /// at an entry point.
    case discontinuity
    /// The sink's queue was full and this many access units were skipped; the next unit
    /// resumes at an entry point.
    case gap(skipped: Int)
    /// The stream has an audio track from here on, described: comes before its first
    /// `.audio` packet (a container sink declares the track in the header it writes at the
    /// next video entry point). Said again only when the track changes.
    case audioFormat(AudioFormat)
    /// One encoded audio packet, on the video's media time line. Packets come in time order
    /// and near the video of the same instant (within a second or so), not necessarily
    /// before or after it: a container sink interleaves them by time.
    case audio(AudioPacket)
}
