import IO
import Media
import Delivery

/// The Annex-B listener kind (`tcp://…`, `unix:…`): no address prefix, nothing shared but
/// the access units themselves (an IDR's wire list with its SPS and PPS, made once by
/// `QueuedAccessUnit`).
enum AnnexBListener: ListenerKind {
    static let addressPrefix = ""

    static func makePackager(_ config: StreamServer.Config, _ metrics: StreamServer.Metrics) -> (any UnitPackager)? { nil }

    static func makeReader(_ socket: Socket, peer: String, _ context: ReaderContext) -> any StreamReader {
        AnnexBReader(socket, peer: peer, context)
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

    override func frame(_ unit: QueuedAccessUnit) -> [ArraySlice<UInt8>] {
        delimiting.frame(unit.nalUnits, of: unit.accessUnit.codec)
    }

    /// It follows the AUD sent behind the last picture, which opened an access unit that
    /// never comes: see H.264's `AccessUnitDelimiting` for why this ending.
    override func closing() -> [ArraySlice<UInt8>]? {
        delimiting.closing()
    }
}
