import IO
import Media
import Delivery

/// The Annex-B listener kind (`tcp://…`, `unix:…`): no address prefix; what its readers share
/// of each access unit is its framed chunks (`DelimitedUnit`), made once by
/// `DelimitedPackaging` (an IDR's wire list with its SPS and PPS is made once by
/// `QueuedAccessUnit`).
enum AnnexBListener: ListenerKind {
    static let addressPrefix = ""

    static func makePackager(_ config: StreamServer.Config, _ metrics: StreamServer.Metrics) -> (any UnitPackager)? {
        DelimitedPackaging()
    }

    static func makeReader(_ socket: Socket, peer: String, _ context: ReaderContext) -> any StreamReader {
        AnnexBReader(socket, peer: peer, context)
    }
}

/// An access unit's chunks as every Annex-B reader past its first access unit writes them
/// (`AccessUnitFraming.continuing`: without its own AUD, with the trailer behind), made once
/// per published unit and shared, with the `iovec` list of their gathered write
/// (`SharedWrite`): no reader builds a list of its own per unit. A class: a reader takes it
/// out of the unit's `WireForms` with one reference, not one per array in it.
final class DelimitedUnit: Sendable {
    let continuation: FramedContinuation
    let write: SharedWrite

    init(_ continuation: FramedContinuation) {
        self.continuation = continuation
        write = SharedWrite(continuation.chunks)
    }
}

/// Makes each published unit's `DelimitedUnit` from the NAL units its readers get (an IDR
/// with its parameter sets in front, as `QueuedAccessUnit` lists them). Loop-owned, as the
/// stream server.
final class DelimitedPackaging: UnitPackager {
    private var framing = StreamFraming()

    func package(_ unit: AccessUnit, pts90k: UInt64?, into forms: inout WireForms) {
        let nalUnits = unit.isIDR ? unit.nalUnitsForEntry : unit.nalUnits
        forms.add(DelimitedUnit(framing.continuing(nalUnits, of: unit.codec)))
    }
}

/// A reader of a plain `--listen` address: the access units' own Annex-B bytes, each one
/// followed at once by the next one's AUD, so the reader's parser releases it
/// (`AccessUnitDelimiting`), and the stream ends with an end of sequence: the reader learns
/// that it ended rather than broke (a consumer keeps the last access unit rather than
/// dropping it as possibly cut off).
final class AnnexBReader: ConnectionReader {
    /// The codec's framing (H.264: `AccessUnitDelimiting`), made at the first access unit.
    private var delimiting = StreamFraming()

    /// The shared chunks and their write (`DelimitedUnit`) once this reader's next delimiter
    /// is open; its own framing for its first access unit (and for a unit published without
    /// them).
    override func frame(_ unit: QueuedAccessUnit) -> FramedUnit {
        if let shared = unit.forms[DelimitedUnit.self], delimiting.take(shared.continuation) { return .shared(shared.write) }
        return .own(delimiting.frame(unit.nalUnits, of: unit.accessUnit.codec))
    }

    /// It follows the AUD sent behind the last picture, which opened an access unit that
    /// never comes: see H.264's `AccessUnitDelimiting` for why this ending.
    override func closing() -> [ArraySlice<UInt8>]? {
        delimiting.closing()
    }
}
