/// What an input of `consume` reports, whichever kind of input it is: a socket it connects to
/// (`StreamClient`) or a source libavformat opens (`DemuxReader`). One type, so that one
/// reporter turns both into log lines and `--events` lines; the kind is carried with each
/// event, for the words that differ (a connection is connected, stalls with no data, is
/// disconnected and reconnected; a demuxed source is opened, stalls with no packet, is lost
/// and reopened).
public struct InputEvent: Sendable {
    /// How the input is read.
    public enum Kind: Sendable, Equatable {
        /// A `tcp://` or `unix:` socket carrying Annex-B (`StreamClient`).
        case connection
        /// A URL or container file opened through libavformat (`DemuxReader`).
        case demuxed
        /// A listener that publishers come to (`WHIPIngest`): one comes, leaves, the next is waited for.
        case publisher
    }

    /// What a demuxed source said when it opened.
    public struct Opening: Sendable, Equatable {
        /// Seconds the opening took.
        public let seconds: Double
        /// What was found: `mpegts, 320x240` (`, audio aac` with an AAC track).
        public let found: String
        /// The tracks left out (said on the first opening only).
        public let ignored: [String]

        public init(seconds: Double, found: String, ignored: [String]) {
            self.seconds = seconds
            self.found = found
            self.ignored = ignored
        }
    }

    public enum What: Sendable, Equatable {
        /// Connected or opened, after `attempts` tries; a demuxed source says what it found.
        case opened(attempts: Int, opening: Opening?)
        /// The first try failed; retrying (said once, not per attempt).
        case unreachable(reason: String)
        /// Nothing arrived for `seconds`: the input is dropped (`.lost` follows) and opened again.
        case stalled(seconds: Double)
        /// The open input ended or failed; `retrying` unless the backoff gives up at once
        /// (then `.gaveUp` follows).
        case lost(reason: String, retrying: Bool)
        /// Still down: attempt `attempt` failed, the next one in `nextIn` s. Rate-limited by
        /// `ReconnectBackoff.progressDue` (every 2 s at most), so silence never reads as a hang.
        case retrying(attempt: Int, reason: String, downFor: Double, nextIn: Double)
        /// Packets with no whole H.264 NAL unit since the opening (a demuxed source), said at
        /// the first of each opening.
        case malformed(packets: Int)
        /// The backoff gave up (`--reconnect-timeout`): why, whether the input was ever open
        /// (an input that never came, or one that ended), and whether its last opening ended
        /// with an end-of-stream NAL unit (a producer that finished its stream).
        case gaveUp(reason: String, everOpened: Bool, endedCleanly: Bool)
    }

    public let kind: Kind
    /// The input as shown to users (credentials masked).
    public let input: String
    public let what: What

    public init(_ kind: Kind, _ input: String, _ what: What) {
        self.kind = kind
        self.input = input
        self.what = what
    }
}
