import Media
import Output
import Delivery
import Metrics
import Synchronization

/// The relay's audio path (`consume --listen ts:…`), safe from any input thread: the track goes
/// to the server past its mailbox's bound (it must not be lost), each packet within it (a full
/// mailbox refuses it: counted in `nalcast_ts_audio_packets_dropped_total`, as for `produce`).
/// The first track declared is reported once for the places that do not carry it (Annex-B
/// listeners, `--web`); a later different one (a restarted source with other audio) is
/// reported too: the TS readers keep the track their header declared, and its packets are
/// left out and counted by the server. Without an MPEG-TS listener (no `carrier`) nothing goes
/// to the server (as `produce`'s Annex-B listeners, they get no sound): only the reports.
public final class RelayAudio: Sendable {
    /// How the audio reaches the MPEG-TS listeners: the server's mailbox.
    public struct Carrier: Sendable {
        /// Declares the track, past the mailbox's bound.
        let declare: @Sendable (AudioFormat) -> Void
        /// One packet; false when the mailbox is full.
        let send: @Sendable (AudioPacket) -> Bool
        /// The TS listeners' count of audio left out.
        let dropped: Counter
        /// The server's rule for packets of one format decoding as the other's track
        /// (`AudioFormat.isSameTrack`): a track that is not the same is a change.
        let isSameTrack: @Sendable (AudioFormat, AudioFormat) -> Bool

        public init(declare: @escaping @Sendable (AudioFormat) -> Void, send: @escaping @Sendable (AudioPacket) -> Bool, dropped: Counter,
                    isSameTrack: @escaping @Sendable (AudioFormat, AudioFormat) -> Bool) {
            self.declare = declare
            self.send = send
            self.dropped = dropped
            self.isSameTrack = isSameTrack
        }
    }

    /// What the relay says about its audio (the executable words it).
    public enum Report: Sendable, Equatable {
        /// The first track (`aac 48000 Hz 2 ch`) goes to the MPEG-TS listeners.
        case relaying(track: String)
        /// `place` (a listener or `--web`, as shown) gets no sound, for `why`; `carried`:
        /// whether the MPEG-TS listeners have it.
        case videoOnly(place: String, why: String, carried: Bool)
        /// The input's track changed: the TS readers keep theirs, these packets are left out.
        case trackChanged(track: String)
    }

    private let carrier: Carrier?
    /// The WHEP viewers' sound (the track, then each packet), when `--web` serves WHEP.
    private let webrtc: (declare: @Sendable (AudioFormat) -> Void, send: @Sendable (AudioPacket) -> Void)?
    private let firstFormat = Mutex<AudioFormat?>(nil)
    private let report: @Sendable (Report) -> Void
    /// The places that get no sound, as shown on the command line, each with why.
    private let videoOnly: [(place: String, why: String)]

    /// - Parameters:
    ///   - carrier: nil without an MPEG-TS listener.
    ///   - videoOnly: the listeners and the page that carry no sound (as bound: the kernel's
    ///     port for port 0), each with why.
    ///   - webrtc: the WHEP viewers' sound, which takes every track and packet.
    public init(carrier: Carrier?, webrtc: (declare: @Sendable (AudioFormat) -> Void, send: @Sendable (AudioPacket) -> Void)? = nil,
                videoOnly: [(place: String, why: String)], report: @escaping @Sendable (Report) -> Void) {
        self.carrier = carrier
        self.webrtc = webrtc
        self.videoOnly = videoOnly
        self.report = report
    }

    /// The input has this audio track from now.
    public func declare(_ format: AudioFormat) {
        carrier?.declare(format)
        webrtc?.declare(format)
        let first = firstFormat.withLock { first -> AudioFormat? in
            defer { if first == nil { first = format } }
            return first
        }
        let shown = "\(format.codec.rawValue) \(format.sampleRate) Hz \(format.channels) ch"
        if let first {
            guard let carrier, !carrier.isSameTrack(format, first) else { return }
            report(.trackChanged(track: shown))
            return
        }
        if carrier != nil || webrtc != nil { report(.relaying(track: shown)) }
        for place in videoOnly { report(.videoOnly(place: place.place, why: place.why, carried: carrier != nil)) }
    }

    /// One packet, at its time for the readers.
    public func send(_ packet: AudioPacket) {
        webrtc?.send(packet)
        guard let carrier else { return }
        if !carrier.send(packet) { carrier.dropped.increment() }
    }

    /// One packet left out before it reached the server (no time for it yet).
    public func drop() { carrier?.dropped.increment() }
}

/// One input thread's end of the relay: times each access unit and audio packet on the
/// relay's rising time line (`RisingMediaTime`), and hands it on. Owned by that thread: a new
/// feed per intake.
public final class RelayFeed {
    private let handOff: ResyncingHandOff
    private let audio: RelayAudio
    private var times = RisingMediaTime()
    private let keepsStreamEnd: Bool

    /// `keepsStreamEnd` when the source's end is the relay's (a file, `--reconnect-timeout 0`):
    /// see `take`.
    public init(handOff: ResyncingHandOff, audio: RelayAudio, keepsStreamEnd: Bool) {
        self.handOff = handOff
        self.audio = audio
        self.keepsStreamEnd = keepsStreamEnd
    }

    /// Hands an access unit to the server. One that ends with an end of sequence (a producer
    /// that knew its last picture) keeps it where the source's end is the relay's: the readers
    /// get that picture without an AUD behind it, and nothing left open
    /// (`AccessUnitFraming`). Elsewhere the relay outlives the source.
    public func take(_ received: TimedUnit) {
        let unit = keepsStreamEnd ? received.unit : RelayFeed.withoutStreamEnd(received.unit)
        handOff.hand(unit, pts90k: times.pts90k(for: received.mediaTime))
    }

    /// The input's audio track and packets (on the same time line as its access units: the
    /// intake places them so), to the MPEG-TS listeners, shifted as the pictures are.
    public func takeAudio(_ item: SinkItem) {
        guard !handOff.isClosed else { return }
        switch item {
        case .audioFormat(let format):
            audio.declare(format)
        case .audio(let packet):
            guard let pts = times.audioPts90k(for: packet.mediaTime) else { return audio.drop() }
            audio.send(AudioPacket(data: packet.data, mediaTime: MediaTime(ticks: Int64(pts)), captureTimeNs: packet.captureTimeNs))
        case .unit, .discontinuity, .gap:
            return
        }
    }

    /// The access unit without a trailing end-of-stream or end-of-sequence NAL unit: the
    /// source's end is not the relay's (readers stay through a source's restart, and get
    /// the relay's own end-of-stream when it stops). An IDR goes to readers with its
    /// parameter sets in front in any case (`QueuedAccessUnit`).
    public static func withoutStreamEnd(_ unit: AccessUnit) -> AccessUnit {
        guard let last = unit.nalUnits.last, unit.codec.endsStream(last) else { return unit }
        let kept = unit.nalUnits.filter { !unit.codec.endsStream($0) }
        return AccessUnit(codec: unit.codec, nalUnits: kept, isIDR: unit.isIDR, resolution: unit.resolution, timestamp: unit.timestamp, parameterSets: unit.parameterSets)
    }
}
