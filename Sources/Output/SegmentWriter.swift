import Media

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Writes one segment of `--segments DIR` over the `.part` file's descriptor, which the
/// `SegmentSink` owns (it syncs, renames and closes it). Made per segment by a
/// `SegmentFormat`: Annex-B as received (`AnnexBSegmentWriter`, here) or a container
/// (`ContainerSegmentWriter`, in the `Muxing` module: this module links no libavformat).
public protocol SegmentWriter: AnyObject {
    /// Takes the next access unit. The first one is the segment's entry point, marked
    /// `resumes`, so that its SPS and PPS go in front.
    func append(_ unit: TimedUnit) throws(SinkError)
    /// Writes what is ready and returns the length of the file's complete prefix: what
    /// stays good if the process dies now (whole access units, whole fragments); 0 while
    /// there is no picture in it.
    func flush() throws(SinkError) -> Int
    /// Writes the rest and the trailer, and returns the file's length.
    func finish() throws(SinkError) -> Int
    /// The stream's audio track, declared before the segment's first access unit.
    func declare(audio format: AudioFormat)
    /// One audio packet of this segment (at or after its first picture's time).
    func append(audio packet: AudioPacket) throws(SinkError)
    /// Audio packets written and dropped since the last call.
    func takeAudioCounts() -> (written: Int, dropped: Int)
}

extension SegmentWriter {
    public func declare(audio format: AudioFormat) {}
    public func append(audio packet: AudioPacket) throws(SinkError) {}
    public func takeAudioCounts() -> (written: Int, dropped: Int) { (0, 0) }
}

/// Makes the writer of one segment: the `.part` file's descriptor and path.
public typealias SegmentWriterFactory = @Sendable (_ fd: Int32, _ path: String) throws(SinkError) -> any SegmentWriter

/// How the segments of a `SegmentSink` are written: the writer each one gets, and whether
/// it carries the audio track.
public struct SegmentFormat: Sendable {
    /// The writers write the audio track (`AccessUnitSink.carriesAudio` of the sink).
    public let carriesAudio: Bool
    public let makeWriter: SegmentWriterFactory

    public init(carriesAudio: Bool, makeWriter: @escaping SegmentWriterFactory) {
        self.carriesAudio = carriesAudio
        self.makeWriter = makeWriter
    }

    /// The stream as received (`--segment-name NAME.h264`): each segment begins with SPS +
    /// PPS + IDR, and `cat` of consecutive ones is a valid stream. No audio.
    public static let annexB = SegmentFormat(carriesAudio: false) { (fd: Int32, _: String) throws(SinkError) -> any SegmentWriter in
        AnnexBSegmentWriter(fd: fd)
    }
}

/// A segment in Annex-B: each access unit's NAL units as received (the entry point's with its
/// parameter sets), gathered and written at each flush. Its complete prefix is everything
/// written: a flush writes whole access units only.
final class AnnexBSegmentWriter: SegmentWriter {
    private var output: FileOutput

    init(fd: Int32) {
        output = FileOutput(fd: fd)
    }

    func append(_ unit: TimedUnit) throws(SinkError) {
        output.add(unit.nalUnits)
    }

    func flush() throws(SinkError) -> Int {
        guard output.hasPending else { return output.offset }
        do {
            try output.flush()
        } catch {
            throw SinkError(sink: "segments", message: error.message)
        }
        return output.offset
    }

    func finish() throws(SinkError) -> Int {
        try flush()
    }
}
