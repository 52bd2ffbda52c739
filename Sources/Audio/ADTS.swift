/// The 7-byte ADTS header that makes a raw AAC packet readable on its own (an `.aac` file,
/// what FFmpeg and players take without a container). nalcast's packets are raw; this is for
/// writing them out as a plain AAC stream.
public enum ADTS {
    static let sampleRates = [96_000, 88_200, 64_000, 48_000, 44_100, 32_000, 24_000, 22_050, 16_000, 12_000, 11_025, 8_000, 7_350]

    /// The header for one AAC-LC packet of `payloadSize` bytes; nil for a rate ADTS cannot say.
    public static func header(payloadSize: Int, sampleRate: Int, channels: Int) -> [UInt8]? {
        guard let index = sampleRates.firstIndex(of: sampleRate), (1...7).contains(channels) else { return nil }
        let length = payloadSize + 7
        guard length < 1 << 13 else { return nil }
        let profile = 1  // AAC-LC is object type 2, written as type - 1
        return [
            0xFF, 0xF1,  // sync word, MPEG-4, layer 0, no CRC
            UInt8(profile << 6 | index << 2 | channels >> 2),
            UInt8((channels & 3) << 6 | length >> 11),
            UInt8((length >> 3) & 0xFF),
            UInt8((length & 7) << 5 | 0x1F),
            0xFC,  // buffer fullness 0x7FF (variable), one raw data block
        ]
    }
}
