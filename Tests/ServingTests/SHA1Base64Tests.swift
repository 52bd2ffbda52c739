import Testing
import Serving

/// The two primitives of the WebSocket handshake against their standards' own vectors.
@Suite struct SHA1Base64Tests {
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef")
        return String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0x0f)]] })
    }

    /// FIPS 180 / RFC 3174 section 7.3 test vectors, plus the empty message.
    @Test(arguments: [
        ("abc", "a9993e364706816aba3e25717850c26c9cd0d89d"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "84983e441c3bd26ebaae4aa1f95129e5e54670f1"),
        ("", "da39a3ee5e6b4b0d3255bfef95601890afd80709"),
    ])
    func sha1Vectors(_ message: String, _ digest: String) {
        #expect(Self.hex(SHA1.digest(Array(message.utf8))) == digest)
    }

    @Test func sha1OfOneMillionA() {
        #expect(Self.hex(SHA1.digest([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000))) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f")
    }

    /// The padding crosses into a second block from 56 bytes on; pieces give the same digest.
    @Test func sha1BlockEdgesAndPieces() {
        // RFC 3174's fourth vector: "0123456701234567..." (64 bytes) ten times.
        let message = [UInt8](String(repeating: "01234567", count: 80).utf8)
        #expect(Self.hex(SHA1.digest(message)) == "dea356a2cddd90c7a7ecedc5ebb563934f460452")
        for split in [1, 55, 56, 63, 64, 65, 639] {
            var sha = SHA1()
            sha.update(message[..<split])
            sha.update(message[split...])
            #expect(Self.hex(sha.finish()) == "dea356a2cddd90c7a7ecedc5ebb563934f460452", "split \(split)")
        }
    }

    /// RFC 4648 section 10.
    @Test(arguments: [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")])
    func base64Vectors(_ plain: String, _ encoded: String) {
        #expect(Base64.encode(Array(plain.utf8)) == encoded)
        #expect(Base64.decode(encoded) == Array(plain.utf8))
    }

    @Test func base64RoundTripsEveryByte() {
        let bytes = (0...255).map { UInt8($0) }
        for count in [0, 1, 2, 3, 16, 255, 256] {
            #expect(Base64.decode(Base64.encode(bytes[..<count])) == Array(bytes[..<count]))
        }
        #expect(Base64.encode([0xfb, 0xff, 0xbf]) == "+/+/")
    }

    /// Only canonical base64 decodes: no missing or misplaced padding, no foreign characters,
    /// no non-zero bits under the padding, no whitespace.
    @Test(arguments: ["Zg", "Zg=", "Zg===", "Z===", "====", "Zm=v", "Zh==", "Zm9=", "Zm9v\n", " Zm9v", "Zm9v-_==", "Zm9vYg=\u{3d}x"])
    func base64RejectsNonCanonical(_ text: String) {
        #expect(Base64.decode(text) == nil)
    }
}
