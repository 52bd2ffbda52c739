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
///   predecessor stands for it.
/// - A source without AUDs gets them: one per access unit, the only way to end its pictures.
///
/// At the very end a writer has always sent one AUD too many: it opened an access unit that
/// never comes. After an AUD only SEI, parameter sets, prefix NAL units and then the slices
/// of a picture may follow (H.264 7.4.1.2.3); nothing may close an access unit that has no
/// picture. The least harmful ending is `closing`: an end-of-sequence NAL unit (type 10).
/// FFmpeg's decoder takes an end of sequence with no picture as "output what is held" and
/// says nothing; after an end of stream (type 11) or nothing at all it reports "no frame!"
/// and an invalid packet. Its parser still notes "missing picture in access unit" once.
/// nalcast's own parser hands out no access unit for such a delimiter-only tail
/// (`AccessUnitAssembler`), and takes its end of sequence as the stream's clean end.
public struct AccessUnitDelimiting: Sendable {
    /// `00 00 00 01 09 F0`: an AUD whose `primary_pic_type` (7) allows any slice type.
    public static let delimiter = NALUnit(escapedBody: [0x09, 0xF0])
    /// `00 00 00 01 0A`: end of sequence, what ends a delimited stream (see above).
    public static let endOfSequence = NALUnit(escapedBody: [0x0A])

    /// True once an AUD went out behind an access unit: the next access unit is open.
    public private(set) var nextIsOpen = false

    public init() {}

    /// The NAL units to write for one access unit, in place of `nalUnits`: without its
    /// leading AUD when one was sent already (else with one), and the next one's AUD behind.
    public mutating func frame(_ nalUnits: [NALUnit]) -> [NALUnit] {
        var out: [NALUnit] = []
        out.reserveCapacity(nalUnits.count + 2)
        let hasOwn = nalUnits.first?.type == .accessUnitDelimiter
        if !nextIsOpen && !hasOwn { out.append(Self.delimiter) }
        out.append(contentsOf: nextIsOpen && hasOwn ? nalUnits.dropFirst() : nalUnits[...])
        out.append(Self.delimiter)
        nextIsOpen = true
        return out
    }

    /// What ends the stream: an end of sequence behind the AUD that opened an access unit
    /// which never comes, or nothing when no access unit was written.
    public func closing() -> [NALUnit] {
        nextIsOpen ? [Self.endOfSequence] : []
    }
}
