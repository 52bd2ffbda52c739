import Consumer
import H264
import Media
import Output
import Delivery
import Metrics
import Synchronization
import Testing

/// consume's relay feed: what an input thread hands to the server of `--listen`/`--web`.
@Suite struct RelayFeedTests {
    /// What reached the server's side of the hand-off, and what the audio path reported.
    final class Server: Sendable {
        let units = Mutex<[(AccessUnit, UInt64?)]>([])
        let packets = Mutex<[AudioPacket]>([])
        let tracks = Mutex<[AudioFormat]>([])
        let reports = Mutex<[RelayAudio.Report]>([])
        let audioDropped = Counter()
        /// False: the mailbox is full for audio.
        let takesAudio = Mutex(true)

        func handOff() -> ResyncingHandOff {
            ResyncingHandOff(send: { unit, pts in self.units.withLock { $0.append((unit, pts)) }; return true }, hasRoom: { true },
                             requestIDR: nil, countLost: {}, report: { _ in })
        }

        func audio(carried: Bool) -> RelayAudio {
            let carrier = RelayAudio.Carrier(
                declare: { format in self.tracks.withLock { $0.append(format) } },
                send: { packet in
                    guard self.takesAudio.withLock({ $0 }) else { return false }
                    self.packets.withLock { $0.append(packet) }
                    return true
                },
                dropped: audioDropped, isSameTrack: { $0.sampleRate == $1.sampleRate && $0.channels == $1.channels })
            return RelayAudio(carrier: carried ? carrier : nil, videoOnly: [(place: "tcp://127.0.0.1:7265", why: "raw H.264 carries video only")]) { report in
                self.reports.withLock { $0.append(report) }
            }
        }
    }

    static func nal(_ bytes: [UInt8]) -> NALUnit { NALUnit(wire: ArraySlice([0, 0, 0, 1] + bytes))! }
    /// An IDR picture that ends its stream: the last of a producer that knew it.
    static let lastPicture = AccessUnit(codec: H264Codec(), nalUnits: [nal([0x65, 0x88, 0x84]), nal([0x0a])], isIDR: true, resolution: nil, timestamp: nil)
    static let track = AudioFormat(extradata: [0x11, 0x90])

    @Test func theSourcesEndOfSequenceGoesOnOnlyWhereItIsTheRelaysEnd() {
        for keeps in [false, true] {
            let server = Server()
            let feed = RelayFeed(handOff: server.handOff(), audio: server.audio(carried: true), keepsStreamEnd: keeps)
            feed.take(TimedUnit(unit: Self.lastPicture, mediaTime: .zero, arrivalNs: 0))
            let sent = server.units.withLock { $0.map { $0.0.nalUnits.map(\.type) } }
            #expect(sent == [keeps ? [.idrSlice, .endOfSequence] : [.idrSlice]], "keepsStreamEnd \(keeps)")
        }
    }

    /// A source that restarts (its media time begins again at 0) goes on rising for readers,
    /// and its sound is shifted with its pictures; sound before any picture has no time yet:
    /// counted, not sent.
    @Test func soundFollowsThePicturesTimeLineAndWhatHasNoTimeIsCounted() {
        let server = Server()
        let feed = RelayFeed(handOff: server.handOff(), audio: server.audio(carried: true), keepsStreamEnd: false)
        let packet = { (ticks: Int64) in SinkItem.audio(AudioPacket(data: [1], mediaTime: MediaTime(ticks: ticks))) }
        feed.takeAudio(.audioFormat(Self.track))
        feed.takeAudio(packet(0))
        #expect(server.audioDropped.value == 1)
        feed.take(TimedUnit(unit: Self.lastPicture, mediaTime: MediaTime(ticks: 90_000), arrivalNs: 0))
        feed.take(TimedUnit(unit: Self.lastPicture, mediaTime: MediaTime(ticks: 93_000), arrivalNs: 0))
        feed.take(TimedUnit(unit: Self.lastPicture, mediaTime: .zero, arrivalNs: 0))
        feed.takeAudio(packet(1_500))
        #expect(server.units.withLock { $0.map(\.1) } == [90_000, 93_000, 96_000])
        #expect(server.packets.withLock { $0.map(\.mediaTime.ticks) } == [97_500])
        server.takesAudio.withLock { $0 = false }
        feed.takeAudio(packet(3_000))
        #expect(server.audioDropped.value == 2, "a packet the full mailbox refused is counted")
    }

    @Test func theTrackIsSaidOnceAndAChangeOfTrackIsSaid() {
        let server = Server()
        let audio = server.audio(carried: true)
        audio.declare(Self.track)
        audio.declare(Self.track)
        audio.declare(AudioFormat(sampleRate: 44_100, extradata: [0x12, 0x10]))
        #expect(server.reports.withLock { $0 } == [
            .relaying(track: "aac 48000 Hz 2 ch"),
            .videoOnly(place: "tcp://127.0.0.1:7265", why: "raw H.264 carries video only", carried: true),
            .trackChanged(track: "aac 44100 Hz 2 ch"),
        ])
        #expect(server.tracks.withLock { $0.count } == 3, "the server hears every declaration (it keeps the first)")
    }

    @Test func withoutAnMPEGTSListenerNothingGoesToTheServer() {
        let server = Server()
        let audio = server.audio(carried: false)
        audio.declare(Self.track)
        audio.declare(AudioFormat(sampleRate: 44_100, extradata: [0x12, 0x10]))
        audio.send(AudioPacket(data: [1], mediaTime: .zero))
        #expect(server.reports.withLock { $0 } == [.videoOnly(place: "tcp://127.0.0.1:7265", why: "raw H.264 carries video only", carried: false)])
        #expect(server.tracks.withLock { $0.isEmpty } && server.packets.withLock { $0.isEmpty })
        #expect(server.audioDropped.value == 0)
    }
}
