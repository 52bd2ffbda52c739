import Media
import Output
import Synchronization

/// `--replay TIME`: the last TIME of the stream in memory, whole GOPs (each from its IDR with
/// the sound of its instants), saved to an MP4 when asked (SIGUSR2, `POST /replay`): "save
/// the last 30 seconds". Memory is the stream's bytes over TIME plus at most one GOP (about
/// 15 MB for 30 s at 4 Mbit/s). Saving writes the file on this sink's thread; what comes
/// meanwhile waits in its queue.
public final class ReplaySink: AccessUnitSink {
    /// Where save requests come from (the loop thread) to the sink's thread.
    public final class Control: Sendable {
        private let requests = Mutex<[String]>([])
        public init() {}
        /// Saves the buffer to `path` with the next items the sink gets.
        public func request(path: String) { requests.withLock { $0.append(path) } }
        func take() -> [String] { requests.withLock { r in defer { r = [] }; return r } }
    }

    public enum Event: Sendable {
        case saved(path: String, duration: MediaTime, frames: Int, bytes: Int)
        case failed(path: String, message: String)
        case empty(path: String)
    }

    private struct GOP {
        let start: MediaTime
        var items: [SinkItem] = []
        var frames = 0
        var bytes = 0
    }

    public let name = "replay"
    public var carriesAudio: Bool { true }
    private let window: MediaTime
    private let control: Control
    private let onEvent: @Sendable (Event) -> Void
    /// A few dozen at most (one per IDR interval of the window).
    private var gops: [GOP] = []
    private var audioFormat: AudioFormat?
    private var newest = MediaTime.zero

    public init(window: MediaTime, control: Control, onEvent: @escaping @Sendable (Event) -> Void) {
        self.window = window
        self.control = control
        self.onEvent = onEvent
    }

    /// Bytes held now.
    public var heldBytes: Int { gops.reduce(0) { $0 + $1.bytes } }

    public func write(_ items: ArraySlice<SinkItem>) throws(SinkError) -> WriteReport {
        var report = WriteReport()
        for item in items {
            switch item {
            case .unit(let unit):
                if unit.isEntryPoint {
                    gops.append(GOP(start: unit.mediaTime))
                } else if gops.isEmpty {
                    report.dropped += 1
                    continue
                }
                add(item, frames: 1, bytes: unit.unit.byteCount)
                newest = max(newest, unit.mediaTime)
                report.units += 1
                report.bytes += unit.unit.byteCount
            case .audioFormat(let format):
                audioFormat = format
            case .audio(let packet):
                if gops.isEmpty { report.droppedAudio += 1 } else { add(item, frames: 0, bytes: packet.data.count) }
            case .discontinuity, .gap:
                if !gops.isEmpty { add(.discontinuity, frames: 0, bytes: 0) }
            }
        }
        trim()
        for path in control.take() { save(to: path) }
        return report
    }

    public func close() throws(SinkError) {
        for path in control.take() { save(to: path) }
    }

    private func add(_ item: SinkItem, frames: Int, bytes: Int) {
        guard !gops.isEmpty else { return }
        gops[gops.count - 1].items.append(item)
        gops[gops.count - 1].frames += frames
        gops[gops.count - 1].bytes += bytes
    }

    /// Drops the oldest GOP while the ones after it still cover the window.
    private func trim() {
        while gops.count > 1, newest - gops[1].start >= window { gops.removeFirst() }
    }

    private func save(to path: String) {
        guard let first = gops.first else { return onEvent(.empty(path: path)) }
        do {
            let sink = try ContainerSink(format: .mp4, path: path)
            var items: [SinkItem] = audioFormat.map { [.audioFormat($0)] } ?? []
            var frames = 0
            for gop in gops {
                items += gop.items
                frames += gop.frames
            }
            let report = try sink.write(items[...])
            try sink.close()
            onEvent(.saved(path: path, duration: newest - first.start, frames: report.units == frames ? frames : report.units, bytes: sink.bytesWritten))
        } catch {
            onEvent(.failed(path: path, message: error.message))
        }
    }
}
