import Audio
import IO
import Media
import Serving
import Synchronization
import WebRTC

/// The sound of WHEP viewers: the stream's AAC (`produce --audio`'s, or a relay's input's),
/// transcoded to Opus by one `OpusTranscoder` for every viewer, made when the first viewer
/// that takes sound connects and run while one is connected (a stream nobody hears over
/// WebRTC costs nothing; after a pause its time line starts again), on the thread
/// that delivers the AAC (produce's audio thread, the relay's input thread: not the loop's),
/// then handed to the loop through a bounded mailbox to `WHEPService.sendSound`. A track that
/// changes (a relay's source came back with another) gets a new transcoder; what is left out
/// is counted (`nalcast_webrtc_audio_dropped_packets_total`).
final class WebRTCSound: Sendable {
    private struct State {
        var track: AudioFormat?
        var transcoder: OpusTranscoder?
        /// The track the transcoder could not be made for (said once).
        var failedTrack: AudioFormat?
    }
    private let state = Mutex(State())
    private let wanted = Atomic<Bool>(false)
    private let hasTrack = Atomic<Bool>(false)
    /// Runs once, when the first viewer wants the sound.
    private let whenWanted = Mutex<(@Sendable () -> Void)?>(nil)
    private let mailbox: Mailbox<AudioPacket>
    private let metrics: WebRTCMetrics
    private let log: Log

    /// Wires itself to `whep`; on the loop's owner thread, before or on the loop. `track`:
    /// the stream's AAC when known from the start (produce), else `declare` gives it.
    init(whep: WHEPService, loop: EventLoop, track: AudioFormat?, log: Log) {
        metrics = whep.endpoint.metrics
        self.log = log
        // 2 s of 20 ms packets: the loop is never that far behind but by a stall.
        mailbox = Mailbox(loop: loop, capacity: 100) { [unowned whep] packets in whep.sendSound(packets) }
        if let track { declare(track) }
        whep.hasSound = { [self] in hasTrack.load(ordering: .relaxed) }
        whep.onSoundViewers = { [self] count in
            wanted.store(count > 0, ordering: .relaxed)
            guard count > 0 else { return }
            whenWanted.withLock { action in
                action?()
                action = nil
            }
        }
    }

    /// `action` runs when the first viewer wants the sound (produce subscribes to its AAC
    /// then: until a viewer does, its packets are no output's, counted as unsent).
    func whenWanted(_ action: @escaping @Sendable () -> Void) {
        whenWanted.withLock { $0 = action }
    }

    /// The stream's AAC track from now (a relay learns it when its input opens); from any thread.
    func declare(_ format: AudioFormat) {
        state.withLock { state in
            guard state.track != format else { return }
            state.track = format
            state.transcoder = nil
        }
        hasTrack.store(true, ordering: .relaxed)
    }

    /// One AAC packet on the pictures' time line; from the thread that delivers them.
    func take(_ packet: AudioPacket) {
        guard wanted.load(ordering: .relaxed) else { return }
        let (opus, refused, failure) = state.withLock { state -> ([AudioPacket], Int, String?) in
            guard let track = state.track, state.failedTrack != track else { return ([], 0, nil) }
            if state.transcoder == nil {
                do {
                    state.transcoder = try OpusTranscoder(from: track)
                } catch {
                    state.failedTrack = track
                    return ([], 0, "\(error)")
                }
            }
            guard let transcoder = state.transcoder else { return ([], 0, nil) }
            let before = transcoder.refusedPackets
            let out = transcoder.transcode(packet)
            return (out, transcoder.refusedPackets - before, nil)
        }
        if let failure { log.line("WebRTC: no sound for the viewers: \(failure)", force: true) }
        for _ in 0..<refused { metrics.audioUndecodable.increment() }
        for packet in opus {
            metrics.opusPackets.increment()
            if !mailbox.send(packet) { metrics.audioMailboxFull.increment() }
        }
    }
}
