import Media

/// How nalcast puts access units on a live Annex-B byte stream so that no reader's parser
/// holds a finished picture back: each access unit is followed at once by the delimiter of
/// the next one.
///
/// Nothing in Annex B says "this access unit is over": FFmpeg's H.264 parser (ffplay,
/// ffmpeg, every libavcodec reader) and GStreamer's `h264parse` know a picture is complete
/// only when the first NAL unit of the next access unit begins. A stream that sends each
/// access unit's delimiter (AUD) in front of it leaves every picture waiting in the reader
/// for a whole frame interval, and the last picture before a still period until the screen
/// changes again. So the delimiter travels early: right behind the access unit before it,
/// with `primary_pic_type` 7 ("any slice type", the payload byte `F0`), since what the next
/// picture will be is not known yet. The stream stays valid Annex-B byte for byte: each
/// access unit still begins with its AUD, it is only written sooner.
///
/// - The first access unit a writer sends keeps its own AUD (or gets one in front when it
///   has none), so every reader starts at an AUD: at its join, after the cached-GOP burst,
///   after a skip to an IDR (the AUD sent behind the last picture it got opens the IDR).
/// - Every later access unit leaves out its own leading AUD: the one sent behind its
///   predecessor stands for it. The trailer also began the next access unit's SEI (for
///   GStreamer's sake, see `trailer`): that access unit goes on with the rest of its first
///   NAL unit when that is an SEI (nalcast's own P pictures: the timestamp SEI), else with
///   the rest of an empty filler SEI (an IDR, whose SPS and PPS come first; a source without
///   SEIs). No NAL unit is moved: the stream is the same access units, each begun earlier.
/// - A source without AUDs gets them: one per access unit, the only way to end its pictures.
/// - An access unit that ends with an end of sequence (or of stream) goes out without the
///   trailer: nothing follows it (`AccessUnit.endingStream`, the last picture of a producer
///   that knew it was the last: `--frames`, `--duration`, a file's end). Nothing is left
///   open, and `closing` adds nothing. (Should a stream go on after one, the next access
///   unit begins with its own AUD, as a first one.)
///
/// Otherwise, at the very end a writer has always sent one AUD too many: it opened an
/// access unit that never comes. After an AUD only SEI, parameter sets, prefix NAL units and then the slices
/// of a picture may follow (H.264 7.4.1.2.3); nothing may close an access unit that has no
/// picture, and FFmpeg's parser reports every access unit without a slice ("missing picture
/// in access unit"). `closing` completes it: the filler SEI the trailer began, a picture that
/// every decoder drops (`ClosingPicture`: a redundant picture with a PPS of its own), and an
/// end of sequence (type 10), which FFmpeg's decoder takes as "output what is held" and
/// nalcast's as the stream's clean end. nalcast's own parser hands out no access unit for
/// that tail (`AccessUnitAssembler`).
public struct AccessUnitDelimiting: AccessUnitFraming {
    /// `00 00 00 01 09 F0`: an AUD whose `primary_pic_type` (7) allows any slice type.
    public static let delimiter: [UInt8] = [0, 0, 0, 1, 0x09, 0xF0]
    /// What goes behind each access unit: the next one's AUD, then the start code and the
    /// header byte (`06`, SEI) of the NAL unit after it. GStreamer's `h264parse` takes a NAL
    /// unit (this AUD too) only once it has seen where it ends, which is the next start code
    /// *and* the byte after it: without them the AUD, and the picture with it, would wait
    /// for the next access unit. An SEI is the one NAL unit that may follow an AUD in any
    /// access unit (H.264 7.4.1.2.3) whatever comes next.
    public static let trailer: ArraySlice<UInt8> = (delimiter + [0, 0, 0, 1, 0x06])[...]
    /// The rest of an SEI whose only message is an empty filler payload (type 3, size 0),
    /// for an access unit whose first NAL unit after its AUD is not an SEI.
    public static let fillerSEIBody: [UInt8] = [0x03, 0x00, 0x80]
    /// End of sequence (type 10), what ends a delimited stream (see above).
    public static let endOfSequence: [UInt8] = [0, 0, 0, 1, 0x0A]

    /// True once the trailer went out behind an access unit: the next access unit is open,
    /// and the header byte of an SEI in it was sent.
    public private(set) var nextIsOpen = false
    /// True once an access unit that ends the stream went out (with its end of sequence).
    public private(set) var ended = false
    /// The last SPS written, for the closing picture's slice header: the NAL unit, read only
    /// when the stream closes (a server's readers each note every IDR's SPS).
    private var sps: NALUnit?
    /// The PPS ids written (a bit each), so that the closing picture's PPS replaces none.
    private var ppsIds: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

    public init() {}

    /// The bytes to write for one access unit, in place of its NAL units' wire, and the
    /// trailer behind. When the trailer went out already: without its own AUD, and with the
    /// SEI the trailer began: its first NAL unit's body without the header byte when that is
    /// an SEI, else the filler SEI's. Otherwise (the first access unit) with an AUD first, its
    /// own or one put in front. Nothing for an access unit with nothing but an AUD.
    public mutating func frame(_ nalUnits: [NALUnit]) -> [ArraySlice<UInt8>] {
        guard let out = Self.chunks(nalUnits, nextIsOpen: nextIsOpen) else { return [] }
        advance(over: nalUnits)
        return out
    }

    /// What `frame` gives once the next delimiter is open, for any writer, and the SPS and
    /// PPS a writer notes from it, in storage of their own (each reader keeps the SPS until
    /// the next one): made once per access unit by a server and shared by its readers
    /// (`take(_:)`).
    public func continuing(_ nalUnits: [NALUnit]) -> FramedContinuation {
        FramedContinuation(chunks: Self.chunks(nalUnits, nextIsOpen: true) ?? [],
                           noted: nalUnits.filter { Self.isNoted($0.type) }.map { $0.detached() },
                           endsStream: Self.endsStream(nalUnits))
    }

    /// `frame(nalUnits)` for the unit `continuation` (what `continuing(nalUnits)` gave)
    /// stands for, when the next delimiter is open: the same bytes, not made again, and the
    /// same state after them, from the parameter sets it noted rather than from a walk over
    /// every NAL unit (each reader of a server takes every access unit this way). False,
    /// changing nothing, when it is not open.
    public mutating func take(_ continuation: FramedContinuation) -> Bool {
        guard nextIsOpen else { return false }
        // A unit of nothing but an AUD: no bytes, and the writer's state as it was.
        guard !continuation.chunks.isEmpty else { return true }
        for nal in continuation.noted { note(nal) }
        ended = continuation.endsStream
        nextIsOpen = !ended
        return true
    }

    /// The chunks for `nalUnits` after a writer's last access unit left the next delimiter
    /// open or not; nil for an access unit with nothing but an AUD.
    private static func chunks(_ nalUnits: [NALUnit], nextIsOpen: Bool) -> [ArraySlice<UInt8>]? {
        let hasOwn = nalUnits.first?.type == .accessUnitDelimiter
        var rest = hasOwn ? nalUnits.dropFirst() : nalUnits[...]
        guard let first = rest.first else { return nil }
        var out: [ArraySlice<UInt8>] = []
        out.reserveCapacity(rest.count + 3)
        if nextIsOpen {
            if first.header.byte == 0x06 {
                out.append(first.wire[(first.headerIndex + 1)...])
                rest = rest.dropFirst()
            } else {
                out.append(Self.fillerSEIBody[...])
            }
        } else {
            out.append(hasOwn ? nalUnits[0].wire : Self.delimiter[...])
        }
        for nal in rest { out.append(nal.wire) }
        if !Self.endsStream(nalUnits) { out.append(Self.trailer) }
        return out
    }

    /// Whether the access unit's last NAL unit ends the stream (end of sequence or stream).
    private static func endsStream(_ nalUnits: [NALUnit]) -> Bool {
        nalUnits.last.map { $0.type == .endOfSequence || $0.type == .endOfStream } ?? false
    }

    /// The writer's state after an access unit went out (one with more than an AUD): the
    /// parameter sets it carried, whether it ended the stream, whether the next is open.
    private mutating func advance(over nalUnits: [NALUnit]) {
        // By index, the type read in place: each reader advances over every access unit, and
        // a NAL unit taken out of the array is a copy (its bytes retained and released).
        for index in nalUnits.indices {
            if Self.isNoted(nalUnits[index].type) { note(nalUnits[index]) }
        }
        ended = Self.endsStream(nalUnits)
        nextIsOpen = !ended
    }

    /// What ends the stream: the filler SEI the trailer began, the closing picture
    /// (`ClosingPicture`, when the last SPS written reads and a PPS id is free) and an end of
    /// sequence, in the access unit that never comes; an end of sequence alone when no access
    /// unit was written (the reader still learns that the stream ended rather than broke);
    /// nothing after an access unit that ended the stream itself.
    public func closing() -> [ArraySlice<UInt8>] {
        if ended { return [] }
        guard nextIsOpen else { return [Self.endOfSequence[...]] }
        guard let sps = sps.flatMap({ try? SequenceParameterSet($0) }), let ppsId = freePPSId else {
            return [Self.fillerSEIBody[...], Self.endOfSequence[...]]
        }
        return [Self.fillerSEIBody[...], ClosingPicture.nalUnits(sps: sps, ppsId: ppsId)[...], Self.endOfSequence[...]]
    }

    /// The NAL units a writer keeps something of (`note`): the SPS and PPS.
    private static func isNoted(_ type: NALType) -> Bool { type == .sps || type == .pps }

    /// Keeps what the closing picture needs from a parameter set written: the SPS, the PPS's id.
    private mutating func note(_ nal: NALUnit) {
        if nal.type == .sps {
            sps = nal
        } else if let id = try? PictureParameterSet.peekId(nal) {
            let bit = UInt64(1) << UInt64(id % 64)
            switch id / 64 {
            case 0: ppsIds.0 |= bit
            case 1: ppsIds.1 |= bit
            case 2: ppsIds.2 |= bit
            default: ppsIds.3 |= bit
            }
        }
    }

    /// The lowest PPS id not written, if any.
    private var freePPSId: Int? {
        for (n, word) in [ppsIds.0, ppsIds.1, ppsIds.2, ppsIds.3].enumerated() where word != .max {
            return n * 64 + (~word).trailingZeroBitCount
        }
        return nil
    }

    /// True for an SEI with nothing to decode: only an empty filler payload (what `frame` puts
    /// after an AUD where the access unit has no SEI first), or only its header byte (the
    /// trailer's last byte, where a reader left or a stream was cut).
    public static func isEmptySEI(_ nal: NALUnit) -> Bool {
        nal.type == .sei && (nal.body.count == 1 || nal.body.elementsEqual([0x06] + fillerSEIBody))
    }
}
