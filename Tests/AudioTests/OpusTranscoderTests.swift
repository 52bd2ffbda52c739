@testable import Audio
import Foundation
import Media
import Testing

/// The AAC → Opus transcoder WebRTC viewers get their sound from, against libavcodec's own
/// decoders: a 1 kHz tone encoded to AAC, transcoded, and the Opus decoded again is still a
/// 1 kHz tone, in 20 ms packets on the AAC's time line.
@Suite struct OpusTranscoderTests {
    /// 2 s of a 1 kHz sine at 48 kHz stereo, -6 dBFS, as AAC packets 1024 samples apart
    /// starting at media time `start`.
    static func aacTone(start: MediaTime) throws -> (AudioFormat, [AudioPacket]) {
        let encoder = try AACEncoder(sampleRate: 48_000, channels: 2, bitrate: 128_000)
        var packets: [AudioPacket] = []
        let n = encoder.format.samplesPerPacket
        for block in 0..<(2 * 48_000 / n) {
            let samples = (0..<n).flatMap { i -> [Float] in
                let t = Double(block * n + i) / 48_000
                let v = Float(0.5 * sin(2 * Double.pi * 1000 * t))
                return [v, v]
            }
            try samples.withUnsafeBufferPointer { buffer in
                try encoder.encode(interleaved: buffer, position: Int64(block * n)) { bytes, pts in
                    packets.append(AudioPacket(data: Array(bytes), mediaTime: MediaTime(ticks: start.ticks + pts * 90_000 / 48_000)))
                }
            }
        }
        return (encoder.format, packets)
    }

    @Test func aToneComesThroughAsOpusOnTheSameTimeLine() throws {
        let start = MediaTime(ticks: 900_000)
        let (aac, packets) = try Self.aacTone(start: start)
        let transcoder = try OpusTranscoder(from: aac)
        #expect(transcoder.format.codec == .opus && transcoder.format.sampleRate == 48_000 && transcoder.format.samplesPerPacket == 960)
        let opus = packets.flatMap { transcoder.transcode($0) }
        #expect(transcoder.refusedPackets == 0)
        // 2 s less what the decoder and encoder hold back: about 100 packets of 20 ms.
        #expect((90...100).contains(opus.count), "\(opus.count) Opus packets")
        let steps = Set(zip(opus.dropFirst(), opus).map { $0.mediaTime.ticks - $1.mediaTime.ticks })
        #expect(steps == [1800], "Opus packets not 20 ms apart: \(steps)")
        // The first packet sits at the AAC's start, less the codecs' delays (a few ms each).
        let lead = Double(opus[0].mediaTime.ticks - start.ticks) / 90
        #expect(abs(lead) < 60, "first Opus packet \(lead) ms from the first AAC packet")

        // Decoded by libavcodec's Opus decoder: a 1 kHz tone at about the level it went in.
        let decoder = try AudioDecoder(transcoder.format)
        var left: [Float] = []
        for packet in opus { try decoder.decode(packet.data) { s in left += stride(from: 0, to: s.count, by: 2).map { s[$0] } } }
        let middle = Array(left[24_000..<72_000])  // one second from the middle
        let rms = (middle.reduce(0) { $0 + $1 * $1 } / Float(middle.count)).squareRoot()
        #expect(abs(rms - 0.354) < 0.05, "RMS \(rms), a -6 dBFS sine is 0.354")
        let crossings = zip(middle.dropFirst(), middle).filter { $1 < 0 && $0 >= 0 }.count
        #expect((995...1005).contains(crossings), "\(crossings) rising zero crossings in a second")
    }

    @Test func aJumpInTheAACTimeLineStartsTheOpusOneAgain() throws {
        let (aac, first) = try Self.aacTone(start: .zero)
        let (_, second) = try Self.aacTone(start: MediaTime(ticks: 90_000 * 60))
        let transcoder = try OpusTranscoder(from: aac)
        let before = first.flatMap { transcoder.transcode($0) }
        let after = second.prefix(20).flatMap { transcoder.transcode($0) }
        #expect(!before.isEmpty && !after.isEmpty)
        #expect(after.allSatisfy { $0.mediaTime.ticks >= 90_000 * 60 - 90 * 60 }, "\(after.map(\.mediaTime.ticks))")
        // And none ahead of the sound (the encoder's held samples kept their place).
        #expect(after.allSatisfy { $0.mediaTime.ticks <= 90_000 * 60 + 20 * 1920 }, "\(after.map(\.mediaTime.ticks))")
        let steps = Set(zip(after.dropFirst(), after).map { $0.mediaTime.ticks - $1.mediaTime.ticks })
        #expect(steps == [1800], "\(steps)")
    }

    @Test func aPacketTheDecoderRefusesIsCountedAndSkipped() throws {
        let (aac, packets) = try Self.aacTone(start: .zero)
        let transcoder = try OpusTranscoder(from: aac)
        var out = packets.prefix(10).flatMap { transcoder.transcode($0) }
        out += transcoder.transcode(AudioPacket(data: [0xFF, 0xFF, 0xFF], mediaTime: packets[10].mediaTime))
        out += packets.dropFirst(11).prefix(20).flatMap { transcoder.transcode($0) }
        #expect(transcoder.refusedPackets == 1)
        #expect(out.count > 10)
    }
}
