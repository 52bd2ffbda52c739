import Synchronization

/// What the `--hls` writer (on its sink thread) shows the `--web` listener (on the loop
/// thread): the playlist as of the last part written, its text rendered once (on the
/// writer's thread, not per request), and a wake-up for the requests that wait for a newer
/// one (blocking reloads, the preload hint). The files themselves are read from the
/// directory, where a name appears only once its file is whole.
public final class HLSLive: Sendable {
    public let directory: String
    private struct State {
        var published: (playlist: HLSPlaylist, text: [UInt8])?
        var onUpdate: (@Sendable () -> Void)?
    }
    private let state = Mutex(State())

    public init(directory: String) {
        self.directory = directory
    }

    /// The playlist now; nil before the first part.
    public var playlist: HLSPlaylist? { published?.playlist }
    /// The playlist now and its text (`HLSPlaylist.render`); nil before the first part.
    public var published: (playlist: HLSPlaylist, text: [UInt8])? { state.withLock { $0.published } }

    /// Called (on the writer's thread) after every change; set before the writer starts.
    public func setOnUpdate(_ onUpdate: @escaping @Sendable () -> Void) {
        state.withLock { $0.onUpdate = onUpdate }
    }

    /// The writer's new playlist: its files are in place.
    public func publish(_ playlist: HLSPlaylist) {
        let text = Array(playlist.render().utf8)
        let onUpdate = state.withLock { state in
            state.published = (playlist, text)
            return state.onUpdate
        }
        onUpdate?()
    }
}
