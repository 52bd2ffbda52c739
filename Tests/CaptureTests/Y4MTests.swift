import TestSupport
import Capture
import Foundation
import Testing

/// Writes a Y4M stream: the header line, then each frame's bytes after a FRAME line.
func writeY4M(_ header: String, frames: [[UInt8]], trailing: [UInt8] = [], to url: URL) throws {
    var bytes = Array((header + "\n").utf8)
    for frame in frames {
        bytes += Array("FRAME\n".utf8)
        bytes += frame
    }
    bytes += trailing
    try Data(bytes).write(to: url)
}

@Suite struct Y4MHeaderTests {
    @Test func readsEveryField() throws {
        let h = try Y4MHeader(line: "YUV4MPEG2 W640 H360 F30000:1001 It A128:117 C420mpeg2 XYSCSS=420MPEG2 XCOLORRANGE=LIMITED")
        #expect(h.width == 640)
        #expect(h.height == 360)
        #expect(h.frameRate == FrameRate(numerator: 30000, denominator: 1001))
        #expect(h.interlacing == .topFirst)
        #expect(h.aspect == (128, 117))
        #expect(h.colourspace == "420mpeg2")
        #expect(h.pixelFormat == .i420)
        #expect(h.comments == ["YSCSS=420MPEG2", "COLORRANGE=LIMITED"])
        #expect(h.frameByteCount == 640 * 360 * 3 / 2)
    }

    @Test func defaultsWhenOptionalFieldsAreAbsent() throws {
        let h = try Y4MHeader(line: "YUV4MPEG2 W2 H2")
        #expect(h.frameRate == FrameRate(25))
        #expect(h.interlacing == .progressive)
        #expect(h.aspect == (0, 0))
        #expect(h.colourspace == "420jpeg")
    }

    @Test(arguments: [
        ("420jpeg", PixelFormat.i420, 6 * 4 * 3 / 2), ("420paldv", .i420, 36), ("420mpeg2", .i420, 36), ("420", .i420, 36),
        ("422", .i422, 6 * 4 * 2), ("444", .i444, 6 * 4 * 3), ("mono", .gray, 6 * 4),
    ])
    func colourspaces(token: String, format: PixelFormat, frameBytes: Int) throws {
        let h = try Y4MHeader(line: "YUV4MPEG2 W6 H4 F25:1 Ip A1:1 C\(token)")
        #expect(h.pixelFormat == format)
        #expect(h.frameByteCount == frameBytes)
    }

    @Test(arguments: ["p", "t", "b", "m", "?"])
    func interlacingModes(mode: String) throws {
        let h = try Y4MHeader(line: "YUV4MPEG2 W2 H2 I\(mode)")
        #expect(h.interlacing.rawValue == Character(mode))
    }

    @Test func eachBadFieldIsNamed() {
        let cases: [(String, CaptureError)] = [
            ("YUV4MPEG2 W0 H2 F30:1", .y4mBadField(.width, "W0")),
            ("YUV4MPEG2 Wabc H2 F30:1", .y4mBadField(.width, "Wabc")),
            ("YUV4MPEG2 W2 H-4 F30:1", .y4mBadField(.height, "H-4")),
            ("YUV4MPEG2 W2 H2 F30:0", .y4mBadField(.frameRate, "F30:0")),
            ("YUV4MPEG2 W2 H2 F30", .y4mBadField(.frameRate, "F30")),
            ("YUV4MPEG2 W2 H2 Iz", .y4mBadField(.interlacing, "Iz")),
            ("YUV4MPEG2 W2 H2 A1", .y4mBadField(.aspect, "A1")),
            ("YUV4MPEG2 W2 H2 Cyuv", .y4mBadField(.colourspace, "Cyuv")),
            ("YUV4MPEG2 W2 H2 C420p10", .y4mUnsupportedColourspace("420p10")),
            ("YUV4MPEG2 W2 H2 C444alpha", .y4mUnsupportedColourspace("444alpha")),
            ("YUV4MPEG2 H2 F30:1", .y4mMissingField(.width)),
            ("YUV4MPEG2 W2", .y4mMissingField(.height)),
            ("YUV4MPEG W2 H2", .y4mBadSignature("YUV4MPEG W2 H2")),
        ]
        for (line, expected) in cases {
            #expect(throws: expected, "\(line)") { try Y4MHeader(line: line) }
        }
        #expect(CaptureError.y4mBadField(.frameRate, "F30:0").description == "y4m: bad frame rate 'F30:0'")
    }
}

@Suite struct Y4MSourceTests {
    @Test func truncatedLastFrameIsAnErrorAfterTheGoodFrames() throws {
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("cut.y4m")
        let frameBytes = 4 * 2 * 3 / 2
        let frames = (0..<2).map { i in [UInt8](repeating: UInt8(10 * (i + 1)), count: frameBytes) }
        try writeY4M("YUV4MPEG2 W4 H2 F30:1 C420jpeg", frames: frames, trailing: Array("FRAME\n".utf8) + [1, 2, 3, 4, 5], to: url)
        let source = try Y4MSource(path: url.path)
        let first = try #require(try source.nextFrame())
        #expect(first.byte(plane: 0, x: 0, y: 0) == 10)
        #expect(first.sequence == 0 && first.pts90k == 0)
        let second = try #require(try source.nextFrame())
        #expect(second.byte(plane: 2, x: 1, y: 0) == 20)
        #expect(second.sequence == 1 && second.pts90k == 3000)
        #expect(throws: CaptureError.truncatedFrame(source: "y4m", frame: 2, got: 5, expected: frameBytes)) { try source.nextFrame() }
        #expect(try source.nextFrame() == nil)
    }

    @Test func garbageInsteadOfFrameLineIsNamed() throws {
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("bad.y4m")
        try writeY4M("YUV4MPEG2 W2 H2 F30:1", frames: [[1, 2, 3, 4, 5, 6]], trailing: Array("FRAMEX\n".utf8), to: url)
        let source = try Y4MSource(path: url.path)
        _ = try #require(try source.nextFrame())
        #expect(throws: CaptureError.y4mBadFrameHeader(frame: 1, line: "FRAMEX")) { try source.nextFrame() }
    }

    @Test func frameParametersAreSkipped() throws {
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("params.y4m")
        var bytes = Array("YUV4MPEG2 W2 H2 F30:1\nFRAME Ixyz XFOO=1\n".utf8) + [7, 7, 7, 7, 8, 9]
        bytes += Array("FRAME\n".utf8) + [1, 1, 1, 1, 2, 3]
        try Data(bytes).write(to: url)
        let source = try Y4MSource(path: url.path)
        #expect(try source.nextFrame()?.byte(plane: 2, x: 0, y: 0) == 9)
        #expect(try source.nextFrame()?.byte(plane: 1, x: 0, y: 0) == 2)
        #expect(try source.nextFrame() == nil)
    }

    @Test func readsFFmpegOutputInEverySampling() throws {
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        for (pixFmt, token) in [("yuv420p", "420"), ("yuv422p", "422"), ("yuv444p", "444"), ("gray", "mono")] {
            let url = dir.appendingPathComponent("\(pixFmt).y4m")
            let gen = try Tool.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=25", "-frames:v", "3",
                                    "-pix_fmt", pixFmt, "-strict", "-1", "-f", "yuv4mpegpipe", "-y", url.path])
            #expect(gen.status == 0, "\(gen.stderr)")
            let source = try Y4MSource(path: url.path)
            #expect(source.header.colourspace.hasPrefix(token), "\(pixFmt): C\(source.header.colourspace)")
            #expect(source.width == 160 && source.height == 90 && source.frameRate == FrameRate(25))
            var count = 0
            let converter = ColorConverter()
            while let frame = try source.nextFrame() {
                let i420 = try converter.convert(frame)
                #expect(i420.format == .i420 && i420.width == 160)
                count += 1
            }
            #expect(count == 3, "\(pixFmt)")
        }
    }

    @Test func converts422And444ToI420() throws {
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let w = 8, h = 4
        let y = (0..<(w * h)).map { UInt8(16 + $0) }

        // 4:2:2: chroma rows alternate, so 4:2:0 averages each pair of rows.
        var u422: [UInt8] = [], v422: [UInt8] = []
        for row in 0..<h { for _ in 0..<(w / 2) { u422.append(row % 2 == 0 ? 100 : 110); v422.append(row % 2 == 0 ? 200 : 220) } }
        let url422 = dir.appendingPathComponent("a.y4m")
        try writeY4M("YUV4MPEG2 W\(w) H\(h) F25:1 C422", frames: [y + u422 + v422], to: url422)

        // 4:4:4: each 2x2 block of chroma averages to one 4:2:0 sample.
        var u444: [UInt8] = [], v444: [UInt8] = []
        for row in 0..<h { for col in 0..<w { u444.append(UInt8(100 + 10 * (col % 2) + 20 * (row % 2))); v444.append(UInt8(50 + 4 * (col % 2) + 40 * (row % 2))) } }
        let url444 = dir.appendingPathComponent("b.y4m")
        try writeY4M("YUV4MPEG2 W\(w) H\(h) F25:1 C444", frames: [y + u444 + v444], to: url444)

        // mono: neutral chroma.
        let urlMono = dir.appendingPathComponent("c.y4m")
        try writeY4M("YUV4MPEG2 W\(w) H\(h) F25:1 Cmono", frames: [y], to: urlMono)

        let converter = ColorConverter()
        for (url, expectU, expectV) in [(url422, 105, 210), (url444, 115, 72), (urlMono, 128, 128)] {
            let frame = try converter.convert(try #require(try Y4MSource(path: url.path).nextFrame()))
            #expect(frame.format == .i420)
            for row in 0..<h { for col in 0..<w { #expect(frame.byte(plane: 0, x: col, y: row) == y[row * w + col]) } }
            for row in 0..<(h / 2) {
                for col in 0..<(w / 2) {
                    #expect(abs(Int(frame.byte(plane: 1, x: col, y: row)) - expectU) <= 1, "\(url.lastPathComponent) U")
                    #expect(abs(Int(frame.byte(plane: 2, x: col, y: row)) - expectV) <= 1, "\(url.lastPathComponent) V")
                }
            }
        }
    }
}

/// Inputs the Y4M fuzz target found (fuzz/regressions/y4m/), replayed: no trap.
@Suite struct Y4MFuzzRegressionTests {
    @Test func absurdFrameRateIsABadFieldNotATrap() throws {
        // F25:709551615 is a frame every 328 days: refused, where it used to overflow.
        #expect(throws: CaptureError.self) { try Y4MHeader(line: "YUV4MPEG2 W1920 H1080 F25:709551615") }
        #expect(throws: CaptureError.self) { try Y4MHeader(line: "YUV4MPEG2 W1920 H1080 F1000000:1") }
        let ok = try Y4MHeader(line: "YUV4MPEG2 W1920 H1080 F30000:1001")
        #expect(ok.frameRate.nanoseconds(ofFrame: 1000) == 33_366_666_666)
        #expect(FrameRate(numerator: 1, denominator: 1)!.nanoseconds(ofFrame: .max) == .max)  // saturates
    }

    @Test func committedFuzzInputsParseOrFailCleanly() throws {
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("fuzz/regressions/y4m")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        #expect(!files.isEmpty)
        for file in files {
            let bytes = try Data(contentsOf: dir.appendingPathComponent(file))
            let line = String(decoding: bytes.prefix { $0 != 0x0a }, as: UTF8.self)
            if let header = try? Y4MHeader(line: line) {
                _ = header.frameRate.nanoseconds(ofFrame: 1000)
                _ = header.frameByteCount
            }
        }
    }
}

@Suite struct Y4MTruncationTests {
    func source(_ bytes: [UInt8]) throws -> () throws -> Y4MSource {
        let dir = try Tool.tempDirectory()
        let url = dir.appendingPathComponent("in.y4m")
        try Data(bytes).write(to: url)
        return { defer { try? FileManager.default.removeItem(at: dir) }; return try Y4MSource(path: url.path) }
    }

    @Test func aHeaderWithoutItsNewlineIsTruncated() throws {
        let open = try source(Array("YUV4MPEG2 W320 H24".utf8))
        #expect(throws: CaptureError.y4mTruncatedHeader("YUV4MPEG2 W320 H24")) { _ = try open() }
        let cutInField = try source(Array("YUV4MPEG2 W320 H".utf8))
        #expect(throws: CaptureError.y4mTruncatedHeader("YUV4MPEG2 W320 H")) { _ = try cutInField() }
    }

    @Test func aHeaderAndNoFrameIsAnError() throws {
        let open = try source(Array("YUV4MPEG2 W320 H24\n".utf8))
        let s = try open()
        #expect(throws: CaptureError.y4mNoFrames) { _ = try s.nextFrame() }
        #expect(try s.nextFrame() == nil)
    }

    @Test func somethingElseWithoutNewlineIsNotY4M() throws {
        let open = try source(Array("RIFF1234WAVE".utf8))
        #expect(throws: CaptureError.y4mBadSignature("RIFF1234WAVE")) { _ = try open() }
    }
}
