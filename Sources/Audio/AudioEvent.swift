/// What happened to an audio source, for the log line, `--events` and the status.
public enum AudioEvent: Sendable, CustomStringConvertible {
    /// Capturing (after a start or a reconnection).
    case connected(source: String)
    /// The server or device went away: silence on the track until it is back.
    case lost(source: String, reason: String)
    /// A file or pipe ended: silence on the track from here.
    case ended(source: String)
    /// A source's samples were moved to where the clock says they belong (a stall).
    case resynced(source: String, milliseconds: Double)
    /// The encoder failed: the audio thread stopped.
    case failed(reason: String)

    public var name: String {
        switch self {
        case .connected: return "audio-connected"
        case .lost: return "audio-lost"
        case .ended: return "audio-ended"
        case .resynced: return "audio-resynced"
        case .failed: return "audio-failed"
        }
    }

    public var description: String {
        switch self {
        case .connected(let source): return "audio \(source): capturing"
        case .lost(let source, let reason): return "audio \(source): lost (\(reason)); silence until it is back"
        case .ended(let source): return "audio \(source): ended; silence from here"
        case .resynced(let source, let ms): return "audio \(source): moved \(Int(ms.rounded())) ms to match the clock"
        case .failed(let reason): return "audio stopped: \(reason)"
        }
    }
}

/// A source's state, for the status line and metrics.
public enum AudioSourceState: String, Sendable {
    case starting, capturing, lost, ended
}
