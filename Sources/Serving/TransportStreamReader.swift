import Muxing
import IO
import Media
import Output
import Delivery
import Metrics

/// The MPEG-TS listener kind: `ts:` addresses, one muxer per server.
enum TransportStreamListener: ListenerKind {
    static let addressPrefix = "ts:"

    /// A `MuxError` when FFmpeg's libraries are missing.
    static func makePackager(_ config: StreamServer.Config, _ metrics: StreamServer.Metrics) throws -> (any UnitPackager)? {
        try TransportStreamPackaging(audio: config.audio, droppedAudio: metrics.tsAudioDropped ?? Counter(), droppedUnits: metrics.tsUnitsDropped ?? Counter())
    }

    static func makeReader(_ socket: Socket, peer: String, _ context: ReaderContext) -> any StreamReader {
        TransportStreamReader(socket, peer: peer + " (mpegts)", context)
    }
}

/// A reader of a `ts:` listener (`ts:tcp://…`, `ts:unix:…`): MPEG-TS with the sound, each
/// access unit's packets muxed once for all of them (`TransportStreamPackaging`, its
/// `TransportStreamUnit` in the unit's `WireForms`) and sent with this reader's continuity
/// counters continued from what it got before (`TSContinuity`: the shared bytes themselves
/// while it never skipped). The stream just ends.
final class TransportStreamReader: ConnectionReader {
    private var continuity = TSContinuity()

    /// An access unit the muxer left out (counted there) is nothing for this reader.
    override func frame(_ unit: QueuedAccessUnit) -> FramedUnit {
        .own([unit.forms[TransportStreamUnit.self].map { continuity.bytes(for: $0) } ?? []])
    }
}

/// The stream as MPEG-TS for the TS listeners: each published access unit muxed once (with
/// the audio packets that arrived since the previous one) into a `TransportStreamUnit` that
/// travels with it through the `Broadcaster` (in its `WireForms`). Loop-owned, as the stream
/// server.
final class TransportStreamPackaging: UnitPackager {
    private var muxer: TSStreamMuxer
    /// The audio track the muxer declares (nil: video only).
    private var audioFormat: AudioFormat?
    /// False once a track other than `audioFormat` was declared after the header went out:
    /// its packets are left out and counted until the declared track is the muxer's again.
    private var carriesDeclaredAudio = true
    /// Audio packets since the last access unit, in arrival order.
    private var pendingAudio: [AudioPacket] = []
    /// Audio held while no access unit comes (before the first, or a stalled capture): about
    /// 5 s of AAC at 48 kHz; older packets beyond it are dropped and counted.
    private let maxPendingAudio = 256
    private let droppedAudio: Counter
    private let droppedUnits: Counter
    private var countedAudioDrops = 0
    private var countedUnitDrops = 0
    /// Set when the muxer failed (out of memory): every access unit after it is left out,
    /// and counted, for the TS readers.
    private var failed = false

    init(audio: AudioFormat?, droppedAudio: Counter, droppedUnits: Counter) throws(MuxError) {
        muxer = try TSStreamMuxer(audio: audio)
        audioFormat = audio
        self.droppedAudio = droppedAudio
        self.droppedUnits = droppedUnits
    }

    /// The audio track the input has from now (a relay learns it when its input opens,
    /// after the server was made). Before the header went out (no access unit muxed yet) the
    /// muxer is made again with it; after, the header's track stays (a reader's player cannot
    /// change tracks mid-stream): packets of another track are left out and counted.
    func declare(audio format: AudioFormat) {
        if let audioFormat, format.isSameTrack(as: audioFormat) {
            carriesDeclaredAudio = true
        } else if !muxer.headerWritten, let remade = try? TSStreamMuxer(audio: format) {
            muxer = remade
            countedAudioDrops = 0
            countedUnitDrops = 0
            audioFormat = format
            // Packets of the track before (none in a relay: its input sends none before a picture).
            droppedAudio.increment(by: UInt64(pendingAudio.count))
            pendingAudio.removeAll()
            carriesDeclaredAudio = true
        } else {
            carriesDeclaredAudio = false
        }
    }

    func add(_ packet: AudioPacket) {
        guard carriesDeclaredAudio else {
            droppedAudio.increment()
            return
        }
        if pendingAudio.count >= maxPendingAudio {
            pendingAudio.removeFirst()
            droppedAudio.increment()
        }
        pendingAudio.append(packet)
    }

    func package(_ unit: AccessUnit, pts90k: UInt64?, into forms: inout WireForms) {
        if let packets = package(unit, pts90k: pts90k) { forms.add(packets) }
    }

    /// The TS of `unit` at `pts90k` and the audio gathered since the last one; nil when
    /// the stream has no time or the muxer left it out (counted).
    func package(_ unit: AccessUnit, pts90k: UInt64?) -> TransportStreamUnit? {
        guard !failed, let pts90k else {
            droppedUnits.increment()
            return nil
        }
        let audio = pendingAudio
        pendingAudio.removeAll(keepingCapacity: true)
        defer { countMuxerDrops() }
        do {
            guard let bytes = try muxer.package(unit, pts90k: pts90k, audio: audio) else { return nil }
            return TransportStreamUnit(bytes: bytes)
        } catch {
            failed = true
            droppedUnits.increment()
            return nil
        }
    }

    private func countMuxerDrops() {
        if muxer.droppedAudioPackets > countedAudioDrops {
            droppedAudio.increment(by: UInt64(muxer.droppedAudioPackets - countedAudioDrops))
            countedAudioDrops = muxer.droppedAudioPackets
        }
        if muxer.droppedAccessUnits > countedUnitDrops {
            droppedUnits.increment(by: UInt64(muxer.droppedAccessUnits - countedUnitDrops))
            countedUnitDrops = muxer.droppedAccessUnits
        }
    }
}

extension AudioFormat {
    /// True when packets of `other` decode as this track's: the same codec, rate, channels
    /// and packet length. The bit rate is not part of it (a container states its own
    /// estimate, which differs at each opening of the same source), nor is the
    /// AudioSpecificConfig, which those four make for AAC-LC.
    public func isSameTrack(as other: AudioFormat) -> Bool {
        codec == other.codec && sampleRate == other.sampleRate && channels == other.channels && samplesPerPacket == other.samplesPerPacket
    }
}
