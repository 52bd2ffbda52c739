import Media

import Output
import Metrics
import Synchronization

/// Where produce's audio packets go: the sinks that carry audio add themselves here; until
/// one does, packets are counted as unsent (`nalcast_audio_unsent_packets_total{reason="no-output"}`):
/// nothing is dropped without being counted.
public final class AudioDelivery: Sendable {
    private let receivers = Mutex<[@Sendable (AudioPacket) -> Void]>([])
    private let unsent = Atomic<UInt64>(0)
    /// Where the pictures end (90 kHz), once the video has stopped: packets from there on
    /// are left out and counted.
    private let videoEnd = Atomic<Int64>(.max)
    private let afterVideo = Atomic<UInt64>(0)

    public init() {}

    /// The video stopped at `end`: the sound stops there too. A live audio thread encodes
    /// by the wall clock, so it is ahead of an encoder that ran late (a loaded machine), and
    /// its last packets would otherwise outlast the pictures.
    public func endVideo(at end: MediaTime) {
        videoEnd.store(end.ticks, ordering: .releasing)
    }

    public func add(_ receiver: @escaping @Sendable (AudioPacket) -> Void) {
        receivers.withLock { $0.append(receiver) }
    }

    public func deliver(_ packet: AudioPacket) {
        if packet.mediaTime.ticks >= videoEnd.load(ordering: .acquiring) {
            afterVideo.add(1, ordering: .relaxed)
            return
        }
        let all = receivers.withLock { $0 }
        if all.isEmpty { unsent.add(1, ordering: .relaxed) }
        for receive in all { receive(packet) }
    }

    /// Packets no sink took (no sink carries audio).
    public var unsentCount: UInt64 { unsent.load(ordering: .relaxed) }
    /// Packets left out for beginning after the last picture.
    public var afterVideoCount: UInt64 { afterVideo.load(ordering: .relaxed) }
}

extension AudioCapture {
    /// The track's figures in `registry`, read from `statistics()` when `/metrics` is
    /// rendered (as the capture's are): packets and bytes, samples dropped and packets unsent
    /// by reason, and per source whether it captures and how often it was lost.
    public func registerMetrics(in registry: MetricsRegistry, delivery: AudioDelivery) {
        func counter(_ name: String, _ help: String, labels: [(String, String)] = [], _ value: @escaping @Sendable (AudioStatistics) -> UInt64) {
            registry.sampledCounter(name, help: help, labels: labels) { [self] in value(statistics()) }
        }
        counter("nalcast_audio_packets_total", "AAC packets encoded.") { $0.packets }
        counter("nalcast_audio_bytes_total", "AAC bytes encoded.") { $0.bytes }
        let dropped = "Samples lost, by reason: late (a source delivered after they were encoded), overflow (a source ran ahead of the buffer)."
        counter("nalcast_audio_dropped_samples_total", dropped, labels: [("reason", "late")]) { $0.lateSamples }
        counter("nalcast_audio_dropped_samples_total", dropped, labels: [("reason", "overflow")]) { $0.overflowSamples }
        let unsent = "Packets no output took (none carries audio), or captured before the first video frame or after the last."
        registry.sampledCounter("nalcast_audio_unsent_packets_total", help: unsent, labels: [("reason", "no-output")]) { delivery.unsentCount }
        counter("nalcast_audio_unsent_packets_total", unsent, labels: [("reason", "before-video")]) { $0.packetsBeforeVideo }
        registry.sampledCounter("nalcast_audio_unsent_packets_total", help: unsent, labels: [("reason", "after-video")]) { delivery.afterVideoCount }
        // The sources are known from the start: one series each, found by name.
        let names = sourceSpecs.map(\.description)
        for name in names {
            registry.sampledGauge("nalcast_audio_source_up", help: "1 while a source captures.", labels: [("source", name)]) { [self] in
                Self.source(statistics(), name)?.state == .capturing ? 1 : 0
            }
        }
        for name in names {
            counter("nalcast_audio_source_losses_total", "Times a source's server or device went away.", labels: [("source", name)]) {
                UInt64(Self.source($0, name)?.losses ?? 0)
            }
        }
    }

    private static func source(_ s: AudioStatistics, _ name: String) -> (state: AudioSourceState, losses: Int)? {
        s.sources.first { $0.name == name }.map { ($0.state, $0.losses) }
    }
}
