import Foundation
import Media
import Output
import Testing
import TestSupport
@testable import Muxing

/// `SinkFanout.deliver(audioFormat:)` and `deliver(audio:)`, the entry point `produce --audio`
/// hands its AAC packets to, called from another thread than the pictures' (as a capture
/// thread and an audio thread would): the container file gets both tracks, interleaved by
/// time, every packet written.
@Suite struct AudioDeliveryTests {
    @Test(arguments: [ContainerFormat.mp4, .ts, .mkv])
    func audioFromAnotherThreadGoesIntoTheFileWithThePictures(_ format: ContainerFormat) throws {
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // 3 s of pictures without B-frames (as nalcast encodes them) and AAC, read back as
        // produce would hand them over: access units and AudioPackets on one media time line.
        let source = dir.appendingPathComponent("src.mp4").path
        let made = try Tool.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=30",
                                 "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000", "-t", "3", "-c:v", "libx264", "-preset", "ultrafast",
                                 "-bf", "0", "-g", "30", "-c:a", "aac", "-ac", "2", source])
        #expect(made.status == 0, "\(made.stderr)")
        let demuxer = try Demuxer(url: "file:" + source, shown: source, options: [], deadline: DemuxDeadline())
        let audioFormat = try #require(demuxer.audioFormat)
        var packager = try AnnexBPackager(extradata: demuxer.extradata)
        var pictures: [TimedUnit] = []
        var sound: [AudioPacket] = []
        while let packet = try demuxer.read() {
            if packet.isAudio {
                for (i, frame) in packet.audioFrames.enumerated() {
                    let ticks = (packet.pts ?? 0) + Int64(i) * audioFormat.packetDuration.ticks
                    if ticks >= 0 { sound.append(AudioPacket(data: frame, mediaTime: MediaTime(ticks: ticks))) }
                }
            } else if let unit = packager.assemble(packager.nalUnits(packet: packet.data)) {
                pictures.append(TimedUnit(unit: unit, mediaTime: MediaTime(ticks: packet.dts ?? 0), arrivalNs: 0))
            }
        }
        #expect(pictures.count == 90)
        #expect(sound.count > 130)

        let out = dir.appendingPathComponent("out.\(format)").path
        let runner = SinkRunner(sink: try ContainerSink(format: format, path: out), queue: SinkQueue(policy: .wait, highWater: 64 << 20),
                                counters: SinkCounters())
        #expect(runner.carriesAudio)
        let fanout = SinkFanout(runners: [runner])
        fanout.deliver(audioFormat: audioFormat)
        fanout.push(.unit(pictures[0]))
        let packets = sound
        let audioThread = Thread { for packet in packets { fanout.deliver(audio: packet) } }
        audioThread.start()
        for picture in pictures.dropFirst() { fanout.push(.unit(picture)) }
        while !audioThread.isFinished { usleep(1_000) }
        #expect(fanout.finish(timeout: 30).isEmpty)
        #expect(runner.counters.writtenAudioPackets.value == UInt64(sound.count))
        #expect(runner.counters.droppedAudioPackets.value == 0)

        let probe = try Tool.run(["ffprobe", "-v", "error", "-count_packets", "-show_entries", "stream=codec_name,nb_read_packets", "-of", "csv=p=0", out])
        let lines = Set(probe.stdout.split(separator: "\n").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: ", ")) })
        #expect(lines.contains("h264,90") && lines.contains("aac,\(sound.count)"), "\(probe.stdout)")
        let decoded = try Tool.run(["ffmpeg", "-hide_banner", "-v", "error", "-i", out, "-f", "null", "-"])
        #expect(decoded.status == 0 && decoded.stderr.isEmpty, "\(decoded.stderr)")
    }
}
