/// Where access units go, for `produce -o` and for every output of `consume`: standard
/// output or a file (`FileSink`), segment files (`SegmentSink`), a remote endpoint
/// (`ForwardSink`), a container file (`ContainerSink`, in the `Muxing` module).
///
/// A sink gets whole access units in stream order, each placed in media time
/// (`TimedUnit.mediaTime`, 90 kHz ticks), with markers for what was lost on the way
/// (`SinkItem.discontinuity`, `.gap`): all a container writer needs as well, which is how
/// `ContainerSink` is one more sink (timestamps from `mediaTime`, its header with the
/// first entry point's parameter sets, its trailer in `close`).
///
/// A sink is used by one thread at a time, its `SinkRunner`'s worker (or, for a runner
/// `.onCaller`, the thread that pushes, then the one that finishes): it may block in `write`
/// (that is what the runner's queue is for). It is handed to the runner and never touched
/// by anyone else after that.
public protocol AccessUnitSink: AnyObject {
    /// A short name for logs, events and metric labels: `stdout`, `segments`, `forward`.
    var name: String { get }
    /// Writes a batch of items, in order, and says how many access units (and bytes) it
    /// really wrote. Throwing `SinkError` closes this sink (the others go on).
    func write(_ items: ArraySlice<SinkItem>) throws(SinkError) -> WriteReport
    /// Flushes and closes (end of input or a stop). Called once, on the runner's thread.
    func close() throws(SinkError)
    /// True when the sink writes an audio track (`SinkItem.audioFormat`, `.audio`): the
    /// containers. Annex-B sinks say no, and their runner keeps audio out of their queue
    /// (said once, counted). Read once, when the runner is made.
    var carriesAudio: Bool { get }
    /// Audio packets written and dropped since the last `write` returned: what `close`
    /// wrote out (a container writes the audio waiting for pictures at its end). Read once,
    /// after `close`.
    func audioCountsAfterLastWrite() -> (written: Int, dropped: Int)
}

extension AccessUnitSink {
    /// Raw Annex-B carries video only.
    public var carriesAudio: Bool { false }
    public func audioCountsAfterLastWrite() -> (written: Int, dropped: Int) { (0, 0) }
}

/// Why a sink stopped: one line, e.g. `stdout: write: Broken pipe`.
public struct SinkError: Error, CustomStringConvertible, Sendable {
    public let sink: String
    public let message: String
    /// True when the reading side went away (EPIPE): a normal end for `-o -`.
    public let peerClosed: Bool

    public init(sink: String, message: String, peerClosed: Bool = false) {
        self.sink = sink
        self.message = message
        self.peerClosed = peerClosed
    }

    public var description: String { "\(sink): \(message)" }
}

/// What one `write` call achieved.
public struct WriteReport: Sendable, Equatable {
    public var units = 0
    public var bytes = 0
    /// Access units not written and not to be (a remote that is down).
    public var dropped = 0
    /// Audio packets written, and those not written and not to be (before the first video
    /// entry point, for a segment or a connection already closed, out of time order).
    public var audioPackets = 0
    public var droppedAudio = 0
    public init(units: Int = 0, bytes: Int = 0, dropped: Int = 0, audioPackets: Int = 0, droppedAudio: Int = 0) {
        self.units = units
        self.bytes = bytes
        self.dropped = dropped
        self.audioPackets = audioPackets
        self.droppedAudio = droppedAudio
    }
}
