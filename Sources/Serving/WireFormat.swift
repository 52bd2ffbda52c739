import IO
import Media
import Output
import Delivery

/// How a listener's readers get the stream (`--listen [ts:]ADDR`): one case per listener
/// kind, and its registration in `kind`. That is all a new kind touches here; what it is
/// (its prefix, packager and reader) is in a file of its own.
public enum WireFormat: String, Sendable, Hashable, CaseIterable {
    /// Raw H.264 Annex-B, the access units' own bytes (`tcp://…`, `unix:…`): video only.
    case annexB = "annexb"
    /// MPEG-TS (`ts:tcp://…`, `ts:unix:…`): video and, when the producer has it, AAC audio,
    /// with PTS and PCR, so that a player plays it at the right speed with no options.
    case mpegTS = "mpegts"

    /// The registry: each format's listener kind.
    var kind: any ListenerKind.Type {
        switch self {
        case .annexB: AnnexBListener.self
        case .mpegTS: TransportStreamListener.self
        }
    }

    /// The prefix of a `--listen` address in this format: `ts:` for MPEG-TS, none for Annex-B.
    public var addressPrefix: String { kind.addressPrefix }
}

/// One kind of listener: what a `StreamServer` needs to serve the readers of a listener in
/// one wire format, and all it knows of that format. Registered in `WireFormat.kind`.
protocol ListenerKind {
    /// What a `--listen` address of this kind begins with (`ts:`); empty for the default.
    static var addressPrefix: String { get }
    /// What every reader of this kind shares of each published access unit, made once per
    /// server that has a listener of this kind; nil when each reader makes its bytes from
    /// the access unit alone. Throws when it cannot be had (FFmpeg's libraries missing).
    static func makePackager(_ config: StreamServer.Config, _ metrics: StreamServer.Metrics) throws -> (any UnitPackager)?
    /// A reader for a connection this kind's listener accepted from `peer`.
    static func makeReader(_ socket: Socket, peer: String, _ context: ReaderContext) -> any StreamReader
}

/// Makes one wire form of each published access unit (`WireForms`), once, for every reader of
/// its kind; the reader takes it from the unit it is handed. Loop-owned, as the server.
protocol UnitPackager: AnyObject {
    /// Adds `unit`'s form at media time `pts90k` to `forms`; nothing when it leaves the unit
    /// out (counted).
    func package(_ unit: AccessUnit, pts90k: UInt64?, into forms: inout WireForms)
    /// An audio packet for the next access unit's form.
    func add(_ packet: AudioPacket)
    /// The audio track of the packets from now on.
    func declare(audio format: AudioFormat)
}

extension UnitPackager {
    /// A form without sound leaves it out.
    func add(_ packet: AudioPacket) {}
    func declare(audio format: AudioFormat) {}
}

/// One address the stream server accepts readers on, and how they get the stream.
public struct Listening: Sendable, Hashable, CustomStringConvertible {
    public var endpoint: Endpoint
    public var format: WireFormat
    public init(_ endpoint: Endpoint, format: WireFormat = .annexB) {
        self.endpoint = endpoint
        self.format = format
    }

    /// Parses `tcp://HOST:PORT`, `unix:PATH` (Annex-B) or either behind a format's prefix
    /// (`ts:`, MPEG-TS).
    public init(parsing text: String) throws(EndpointParseError) {
        for format in WireFormat.allCases {
            let prefix = format.addressPrefix
            if !prefix.isEmpty && text.hasPrefix(prefix) {
                self.init(try Endpoint(parsing: String(text.dropFirst(prefix.count))), format: format)
                return
            }
        }
        self.init(try Endpoint(parsing: text))
    }

    /// As it is written on the command line: `ts:tcp://127.0.0.1:7265`.
    public var description: String { format.addressPrefix + endpoint.description }
}
