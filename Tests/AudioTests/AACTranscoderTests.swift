@testable import Audio
import Foundation
import Media
import Testing

/// The Opus → AAC transcoder of the WHIP ingest (a publisher's sound for consume's outputs),
/// against libavcodec's own codecs: a 1 kHz tone made Opus (by `OpusTranscoder`, from
/// `OpusTranscoderTests`' AAC), transcoded to AAC and decoded again is still a 1 kHz tone, in
/// 1024-sample packets on the Opus packets' time line.
@Suite struct AACTranscoderTests {
    /// 2 s of the 1 kHz tone as Opus packets of 20 ms, starting near media time `start`.
    static func opusTone(start: MediaTime) throws -> [AudioPacket] {
        let (aac, packets) = try OpusTranscoderTests.aacTone(start: start)
        let opus = try OpusTranscoder(from: aac)
        return packets.flatMap { opus.transcode($0) }
    }

    @Test func aToneComesThroughAsAACOnTheSameTimeLine() throws {
        let start = MediaTime(ticks: 900_000)
        let opus = try Self.opusTone(start: start)
        let transcoder = try AACTranscoder()
        #expect(transcoder.format.codec == .aac && transcoder.format.sampleRate == 48_000 && transcoder.format.channels == 2)
        let aac = opus.flatMap { transcoder.transcode($0) }
        #expect(transcoder.refusedPackets == 0)
        // About 2 s less what the codecs hold back: some 90 packets of 1024 samples.
        #expect((80...94).contains(aac.count), "\(aac.count) AAC packets")
        let steps = Set(zip(aac.dropFirst(), aac).map { $0.mediaTime.ticks - $1.mediaTime.ticks })
        #expect(steps == [1920], "AAC packets not 1024 samples apart: \(steps)")
        let lead = Double(aac[0].mediaTime.ticks - opus[0].mediaTime.ticks) / 90
        #expect(abs(lead) < 60, "first AAC packet \(lead) ms from the first Opus packet")

        let decoder = try AudioDecoder(transcoder.format)
        var left: [Float] = []
        for packet in aac { try decoder.decode(packet.data) { s in left += stride(from: 0, to: s.count, by: 2).map { s[$0] } } }
        let middle = Array(left[24_000..<72_000])  // one second from the middle
        let rms = (middle.reduce(0) { $0 + $1 * $1 } / Float(middle.count)).squareRoot()
        #expect(abs(rms - 0.354) < 0.05, "RMS \(rms), a -6 dBFS sine is 0.354")
        let crossings = zip(middle.dropFirst(), middle).filter { $1 < 0 && $0 >= 0 }.count
        #expect((995...1005).contains(crossings), "\(crossings) rising zero crossings in a second")
    }

    /// A publisher that comes after another (its Opus a minute later on the time line): the
    /// AAC's time line starts again at its first Opus packet. What the encoder still held of
    /// the first (its priming and its look-ahead, two frames of 1024 samples: 3840 ticks)
    /// comes out just before, not a minute ahead.
    @Test func aJumpInTheOpusTimeLineStartsTheAACOneAgain() throws {
        let first = try Self.opusTone(start: .zero)
        let second = try Self.opusTone(start: MediaTime(ticks: 90_000 * 60))
        let transcoder = try AACTranscoder()
        let before = first.flatMap { transcoder.transcode($0) }
        let after = second.prefix(20).flatMap { transcoder.transcode($0) }
        #expect(!before.isEmpty && !after.isEmpty)
        let start = second[0].mediaTime.ticks
        #expect(after.allSatisfy { $0.mediaTime.ticks >= start - 3840 }, "from \(start): \(after.map(\.mediaTime.ticks))")
        #expect(after.allSatisfy { $0.mediaTime.ticks <= start + 20 * 1800 }, "from \(start): \(after.map(\.mediaTime.ticks))")
        let steps = Set(zip(after.dropFirst(), after).map { $0.mediaTime.ticks - $1.mediaTime.ticks })
        #expect(steps == [1920], "\(steps)")
    }

    @Test func aPacketTheDecoderRefusesIsCountedAndSkipped() throws {
        let opus = try Self.opusTone(start: .zero)
        let transcoder = try AACTranscoder()
        var out = opus.prefix(10).flatMap { transcoder.transcode($0) }
        out += transcoder.transcode(AudioPacket(data: [0xFF, 0xFF, 0xFF], mediaTime: opus[10].mediaTime))
        out += opus.dropFirst(11).prefix(20).flatMap { transcoder.transcode($0) }
        #expect(transcoder.refusedPackets == 1)
        #expect(out.count > 10)
    }
}
