import Capture
import Testing

/// One parser for every frame rate a user types (`--fps`, `--input-fps`, consume's
/// `--frame-rate`): the NTSC decimals become their exact rationals.
@Suite struct FrameRateParsingTests {
    @Test(arguments: [
        ("30", 30, 1), ("25", 25, 1), ("30000/1001", 30000, 1001), ("30:1", 30, 1), ("60/2", 30, 1),
        ("29.97", 30000, 1001), ("23.976", 24000, 1001), ("23.98", 24000, 1001), ("59.94", 60000, 1001),
        ("119.88", 120000, 1001), ("47.952", 48000, 1001), ("14.985", 15000, 1001),
        ("12.5", 25, 2), ("0.5", 1, 2), ("29.970", 30000, 1001), (" 30 ", 30, 1),
        ("ntsc", 30000, 1001), ("pal", 25, 1), ("film", 24, 1), ("ntsc-film", 24000, 1001),
    ])
    func parses(text: String, numerator: Int, denominator: Int) {
        let rate = FrameRate(parsing: text)
        #expect(rate?.numerator == numerator && rate?.denominator == denominator, "\(text) → \(rate.map(\.description) ?? "nil")")
    }

    @Test(arguments: ["", "0", "-30", "30/0", "0/1", "abc", "30fps", "1/2/3", "nan", "inf", "1e9", "20000", "29.97/1"])
    func rejects(text: String) {
        #expect(FrameRate(parsing: text) == nil, "\(text)")
    }

    @Test func printsAsTyped() {
        #expect(FrameRate(parsing: "29.97")?.description == "30000/1001")
        #expect(FrameRate(parsing: "12.5")?.description == "25/2")
        #expect(FrameRate(parsing: "30")?.description == "30")
    }
}
