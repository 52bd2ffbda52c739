/// What the codec-neutral parts of nalcast (the server, the outputs, the containers, the
/// page) need of a video codec. Each access unit names its codec; everything else about it
/// (its parameter sets' syntax, its slice headers, the assembler that finds where access
/// units begin, its encoder) lives in the codec's own module (`H264`: `H264Codec`).
///
/// A second codec is a module with its implementation of this protocol, its assembler and
/// its encoder; see docs/architecture.md ("A second codec") for the few places that choose
/// a codec.
public protocol VideoCodec: Sendable {
    /// The codec's name as FFmpeg and WebCodecs' registry say it: `h264`.
    var name: String { get }

    /// What `nal` is for, from its header.
    func role(of nal: NALUnit) -> NALRole

    /// The parameter set types a decoder needs before a picture, one bit per NAL unit type
    /// (H.264: SPS and PPS; every codec's types are below 64).
    var requiredParameterSets: UInt64 { get }

    /// An end-of-sequence NAL unit (with a 4-byte start code).
    var endOfSequence: NALUnit { get }

    /// A writer's framing of access units on a byte stream, so that a reader's parser can
    /// tell where each ends as soon as it arrives (`AccessUnitFraming`).
    func makeFraming() -> any AccessUnitFraming

    /// The presentation order of pictures that may be coded out of it (B-frames).
    func makePictureOrder() -> any PictureOrder

    /// What a container declares for a stream with these parameter sets.
    func streamParameters(_ parameterSets: [NALUnit]) -> VideoStreamParameters

    /// A parser of this codec's Annex-B byte stream: bytes in any chunking in, access units
    /// out; no NAL unit longer than `maxNALUnitSize` is kept.
    func makeParser(maxNALUnitSize: Int) -> any AccessUnitParser

    /// The codec string of a stream with these parameter sets, as WebCodecs, HLS and DASH
    /// take it (`avc1.64001f`); nil without the parameter set it comes from.
    func codecString(_ parameterSets: [NALUnit]) -> String?
}

/// What a NAL unit is for, in the words every codec shares.
public enum NALRole: Sendable, Hashable {
    /// A coded slice (or slice data) of a picture.
    case picture
    /// Supplemental enhancement information (nalcast's timestamp travels in one).
    case sei
    /// A parameter set, with its NAL unit type: a decoder needs one of each type in
    /// `VideoCodec.requiredParameterSets` before a picture.
    case parameterSet(UInt8)
    /// The access unit delimiter, first in its access unit when present.
    case delimiter
    /// End of sequence: the next picture is a keyframe.
    case endOfSequence
    /// End of stream: nothing follows.
    case endOfStream
    case other
}

extension VideoCodec {
    public func isParameterSet(_ nal: NALUnit) -> Bool {
        if case .parameterSet = role(of: nal) { return true }
        return false
    }

    /// True for an end of sequence or of stream.
    public func endsStream(_ nal: NALUnit) -> Bool {
        let role = role(of: nal)
        return role == .endOfSequence || role == .endOfStream
    }
}

/// What a container declares for a video stream: its picture size, its frame rate when the
/// stream says one, and its decoder configuration record (H.264: the `avcC` box of ISO/IEC
/// 14496-15) when one can be made from the parameter sets.
public struct VideoStreamParameters: Sendable, Equatable {
    public var resolution: Resolution?
    public var frameRate: Double?
    public var decoderConfiguration: [UInt8]?

    public init(resolution: Resolution?, frameRate: Double?, decoderConfiguration: [UInt8]?) {
        self.resolution = resolution
        self.frameRate = frameRate
        self.decoderConfiguration = decoderConfiguration
    }
}

/// A writer's framing of access units on a byte stream (`VideoCodec.makeFraming`): what
/// goes out for each access unit, and what ends the stream so that nothing is left open.
public protocol AccessUnitFraming: Sendable {
    /// True when the last access unit written left the next one's delimiter open.
    var nextIsOpen: Bool { get }
    /// True when the last access unit written ended the stream (end of sequence or stream).
    var ended: Bool { get }
    /// The chunks to write for an access unit's NAL units.
    mutating func frame(_ nalUnits: [NALUnit]) -> [ArraySlice<UInt8>]
    /// The chunks that end the stream after the last access unit framed.
    func closing() -> [ArraySlice<UInt8>]
    /// What `frame` gives for `nalUnits` once the next delimiter is open, and what writing
    /// them changes in a writer's state: the same for every writer past its first access
    /// unit, so a server makes it once per access unit and shares it
    /// (`take(_:)`). Changes nothing.
    func continuing(_ nalUnits: [NALUnit]) -> FramedContinuation
    /// When the next delimiter is open: moves past the access unit `continuation` (what
    /// `continuing` gave) stands for, as `frame` would, without walking its NAL units, and
    /// returns true: its chunks are what this writer writes. Otherwise false, and nothing
    /// changes: the writer frames the unit itself. A continuation that `leavesWritersAsTheyAre`
    /// changes nothing in a writer whose delimiter is open: `StreamFraming` takes it by
    /// reading `nextIsOpen`, without calling this.
    mutating func take(_ continuation: FramedContinuation) -> Bool
}

/// An access unit as every writer past its first one writes it (`AccessUnitFraming`'s
/// `continuing`), made once per access unit for all of a server's readers: its chunks, and
/// what taking it changes in a writer's framing, worked out from its NAL units once, so each
/// reader's framing moves past it without walking them.
public struct FramedContinuation: Sendable {
    public let chunks: [ArraySlice<UInt8>]
    /// The NAL units a writer's framing keeps something of (H.264's: its SPS and PPS, for
    /// the closing picture), in order; none in most access units.
    public let noted: [NALUnit]
    /// The access unit ends the stream: nothing is left open behind it.
    public let endsStream: Bool

    /// Nothing to note and not the stream's end: a writer whose next delimiter is open is
    /// the same after it (most access units: every picture between two IDRs). Stored, not
    /// worked out from `noted` by each reader: read from the shared unit, that copied the
    /// continuation out (its arrays retained and released per reader).
    public let leavesWritersAsTheyAre: Bool

    public init(chunks: [ArraySlice<UInt8>], noted: [NALUnit], endsStream: Bool) {
        self.chunks = chunks
        self.noted = noted
        self.endsStream = endsStream
        leavesWritersAsTheyAre = noted.isEmpty && !endsStream
    }
}

/// The presentation order of a codec's pictures (`VideoCodec.makePictureOrder`), access unit
/// by access unit in decode order.
public protocol PictureOrder: Sendable {
    /// The order facts of the next access unit; nil when they cannot be read (no parameter
    /// sets yet, a damaged header).
    mutating func info(for unit: AccessUnit) -> PictureOrderInfo?
}

public struct PictureOrderInfo: Sendable, Equatable {
    public enum Structure: Sendable, Equatable { case frame, firstField, secondField }

    /// Sorts access units into presentation order within a run (twice the picture order
    /// count; a second field sorts right after its first field).
    public var key: Int
    /// A new run starts here (H.264: an IDR or MMCO 5).
    public var startsOver: Bool
    public var structure: Structure

    public init(key: Int, startsOver: Bool, structure: Structure) {
        self.key = key
        self.startsOver = startsOver
        self.structure = structure
    }
}

/// The framing of one output's byte stream (a pipe, a forwarded connection, a reader),
/// made for the codec of the first access unit it frames.
///
/// The codec's framing is kept as an existential that is mutated where it lies: the
/// stream's owner holds the only copy, so its boxed state (the last SPS) is never copied.
/// Before the first access unit it is `Unframed`, which has written nothing.
public struct StreamFraming: Sendable {
    private var framing: any AccessUnitFraming = Unframed()
    private var isMade = false

    public init() {}

    /// True when the last access unit written left the next one's delimiter open.
    public var nextIsOpen: Bool { framing.nextIsOpen }

    /// The chunks to write for an access unit's NAL units (`nalUnits`: as received, or
    /// with the parameter sets in front for an entry).
    public mutating func frame(_ nalUnits: [NALUnit], of codec: any VideoCodec) -> [ArraySlice<UInt8>] {
        make(for: codec)
        return framing.frame(nalUnits)
    }

    /// What ends the stream after the last access unit framed; nothing when none was.
    public func closing() -> [ArraySlice<UInt8>] { framing.closing() }

    /// The chunks of `nalUnits` for a writer whose next delimiter is open
    /// (`AccessUnitFraming.continuing`): made once per access unit, for every writer that
    /// takes it with `take(_:)`. Changes no writer's state.
    public mutating func continuing(_ nalUnits: [NALUnit], of codec: any VideoCodec) -> FramedContinuation {
        make(for: codec)
        return framing.continuing(nalUnits)
    }

    /// The access unit `continuation` (what `continuing(_:of:)` made) stands for, taken as it
    /// is when this writer's next delimiter is open: true, and its chunks are this writer's.
    /// False before the first access unit and after one that ended the stream: frame it.
    public mutating func take(_ continuation: FramedContinuation) -> Bool {
        guard isMade else { return false }
        // Read rather than changed where it stays the same: each reader of a server takes
        // every access unit, and a change would make the reader's boxed framing unique first.
        if continuation.leavesWritersAsTheyAre { return framing.nextIsOpen }
        return framing.take(continuation)
    }

    /// The codec's framing, made the first time.
    private mutating func make(for codec: any VideoCodec) {
        guard !isMade else { return }
        framing = codec.makeFraming()
        isMade = true
    }

    /// The framing of a stream no access unit was written to: nothing open, nothing to end.
    private struct Unframed: AccessUnitFraming {
        var nextIsOpen: Bool { false }
        var ended: Bool { false }
        func closing() -> [ArraySlice<UInt8>] { [] }
        func frame(_ nalUnits: [NALUnit]) -> [ArraySlice<UInt8>] { preconditionFailure("framed before the codec's framing was made") }
        func continuing(_ nalUnits: [NALUnit]) -> FramedContinuation { preconditionFailure("framed before the codec's framing was made") }
        func take(_ continuation: FramedContinuation) -> Bool { false }
    }
}

/// A codec's Annex-B byte stream parser (`VideoCodec.makeParser`): each access unit comes out
/// as soon as the bytes show it complete, so a stream that stops loses only the one still
/// arriving.
public protocol AccessUnitParser {
    /// Pushes bytes; `emit` gets each access unit they completed.
    mutating func push(_ chunk: [UInt8], emit: (AccessUnit) -> Void)
    /// Ends the stream: the last NAL unit and the last access unit come out.
    mutating func finish(emit: (AccessUnit) -> Void)
    /// Starts over for a new connection (the counters are kept).
    mutating func reset()
    /// True once an access unit has begun that is not out yet (what a stop here would lose).
    var hasAccessUnitInProgress: Bool { get }
    /// Bytes of the access unit in progress, not known to be complete.
    var bytesInProgress: Int { get }
    /// The frame rate the active parameter sets give; nil when they give none.
    var frameRate: Double? { get }
    /// True when the stream's last access unit, or a delimited stream's tail, ended it.
    var endedStream: Bool { get }
    /// Bytes skipped looking for the next start code (garbage, a cut-off NAL unit), so far.
    var skippedBytes: Int { get }
}

/// What every codec's Annex-B byte stream shares.
public enum AnnexB {
    /// The longest NAL unit a parser keeps by default (8 MiB: more than any picture of a
    /// 4K intra stream; a longer one is skipped and counted).
    public static let defaultMaxNALUnitSize = 8 << 20
}
