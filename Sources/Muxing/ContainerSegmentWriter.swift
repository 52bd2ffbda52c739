import Media
import Output

/// One segment of `--segments DIR --segment-name NAME.mp4|.ts|.mkv|.flv` in its container:
/// a `ContainerSink` over the segment's `.part` descriptor (which the segment sink owns).
/// MP4 segments are fragmented (a fragment at every IDR and at least every second, written
/// as it closes), so that what a killed `consume` leaves in a `.part` is playable up to its
/// last complete fragment, which is the prefix the segment index records. MPEG-TS segments'
/// times start at 1.4 s (`Muxer.timeOffset`), so that they follow each other from the first.
public final class ContainerSegmentWriter: SegmentWriter {
    private let sink: ContainerSink

    public init(format: ContainerFormat, fd: Int32, path: String, fallbackFrameRate: Double?, countedClock: Bool) throws(SinkError) {
        sink = try ContainerSink(format: format, fd: fd, ownsDescriptor: false, name: "segments", label: path,
                                 fallbackFrameRate: fallbackFrameRate, countedClock: countedClock, fragmented: true)
    }

    /// How `SegmentSink` writes segments named for `format`: in that container, with the
    /// audio track; `.h264` as the Annex-B stream received.
    public static func segmentFormat(_ format: ContainerFormat, fallbackFrameRate: Double?, countedClock: Bool) -> SegmentFormat {
        guard format != .h264 else { return .annexB }
        return SegmentFormat(carriesAudio: true) { (fd: Int32, path: String) throws(SinkError) -> any SegmentWriter in
            try ContainerSegmentWriter(format: format, fd: fd, path: path, fallbackFrameRate: fallbackFrameRate, countedClock: countedClock)
        }
    }

    public func append(_ unit: TimedUnit) throws(SinkError) {
        _ = try sink.accept(unit)
    }

    public func declare(audio format: AudioFormat) {
        sink.declare(audio: format)
    }

    public func append(audio packet: AudioPacket) throws(SinkError) {
        try sink.accept(audio: packet)
    }

    public func takeAudioCounts() -> (written: Int, dropped: Int) {
        sink.takeAudioCounts()
    }

    public func flush() throws(SinkError) -> Int {
        try sink.writeOut()
        return sink.bytesWritten > sink.headerBytes ? sink.bytesWritten : 0
    }

    public func finish() throws(SinkError) -> Int {
        do {
            try sink.finishContainer()
        } catch {
            throw SinkError(sink: "segments", message: error.message, peerClosed: false)
        }
        return sink.bytesWritten
    }
}
