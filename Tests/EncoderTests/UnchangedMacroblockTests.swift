import Capture
import Encoder
import Foundation
import Media
import TestSupport
import Testing

/// `H264Encoder.encode(_:changes:)`: macroblocks outside what changed are marked the same
/// (`X264_MBINFO_CONSTANT`), x264 copies them, and FFmpeg decodes the stream to the right pixels.
@Suite struct UnchangedMacroblockTests {
    static let (width, height) = (320, 240)

    /// An I420 picture of a texture with edges and fine detail (text-like, which x264's rate
    /// control keeps sharpening on an unchanged picture), with `rects` filled with `fill`
    /// (luma; chroma 90 and 200 there).
    static func picture(_ index: Int, rects: [FrameDamage.Rect] = [], fill: UInt8 = 235) -> Frame {
        let layout = PixelFormat.i420.packedLayout(width: width, height: height)
        let buffer = FrameBuffer(capacity: PixelFormat.i420.frameByteCount(width: width, height: height))
        func inside(_ x: Int, _ y: Int) -> Bool { rects.contains { x >= $0.x && x < $0.x + $0.width && y >= $0.y && y < $0.y + $0.height } }
        for y in 0..<height {
            for x in 0..<width {
                // Lines of "text" (dark strokes) on a gradient.
                let stroke = y % 12 < 8 && x % 40 < 32 && (x * 5 + y * 3 + (x / 4) * (y / 3)) % 7 < 2
                let texture = stroke ? UInt8(30 + (x + y) % 20) : UInt8(120 + x / 4 + y / 8)
                buffer.base[layout[0].offset + y * layout[0].stride + x] = inside(x, y) ? fill : texture
            }
        }
        for plane in 1...2 {
            for y in 0..<(height / 2) {
                for x in 0..<(width / 2) {
                    let value: UInt8 = inside(2 * x, 2 * y) ? (plane == 1 ? 90 : 200) : UInt8(truncatingIfNeeded: 100 + (x + plane * y) % 60)
                    buffer.base[layout[plane].offset + y * layout[plane].stride + x] = value
                }
            }
        }
        return Frame(width: width, height: height, format: .i420, buffer: buffer, planes: layout,
                     sequence: UInt64(index), captureTimeNs: 0, pts90k: UInt64(index) * 3000)
    }

    /// `writesRepeats`: off, x264 codes a picture that changed nothing too (the path a preset
    /// with more than one reference frame takes), told every macroblock is the same.
    /// One thread: with sliced threads, x264's row-level VBV sets each row's QP from the other
    /// slices' sizes as far as their threads have got, so a row of a repeat may come out at a
    /// lower QP than the picture before and not be copied, depending on how the threads ran
    /// (1 run in 30 under load: [240, 299, 300, ...] where every other run copied all 300).
    /// With one thread the stream is the same every run, and what a repeat copies is x264's
    /// rule alone.
    static func encoder(writesRepeats: Bool = false) throws -> H264Encoder {
        var parameters = H264Encoder.Parameters(width: width, height: height, frameRate: FrameRate(30))
        parameters.bitrate = 8_000_000
        parameters.keyint = 1000
        parameters.writesRepeats = writesRepeats
        parameters.threads = 1
        return try H264Encoder(parameters: parameters)
    }

    /// The raw pictures FFmpeg decodes from `units` in `pixelFormat`, and what it said on stderr.
    /// `also` gets the stream's file before it is removed (another decoder's turn).
    static func decode(_ units: [AccessUnit], pixelFormat: String, also: (URL) throws -> Void = { _ in }) throws -> (bytes: Data, errors: String) {
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let stream = dir.appendingPathComponent("stream.h264"), raw = dir.appendingPathComponent("stream.raw")
        try Data(units.flatMap { $0.nalUnits.flatMap(\.wire) }).write(to: stream)
        let result = try Tool.run(["ffmpeg", "-v", "error", "-f", "h264", "-i", stream.path, "-f", "rawvideo", "-pix_fmt", pixelFormat, "-y", raw.path])
        #expect(result.status == 0, "\(result.stderr)")
        try also(stream)
        return (try Data(contentsOf: raw), result.stderr)
    }

    /// The luma planes FFmpeg decodes from `units`, and what it said on stderr.
    static func decodeLuma(_ units: [AccessUnit]) throws -> (pictures: [[UInt8]], errors: String) {
        let decoded = try decode(units, pixelFormat: "gray")
        let data = [UInt8](decoded.bytes)
        let size = width * height
        return ((0..<(data.count / size)).map { Array(data[($0 * size)..<(($0 + 1) * size)]) }, decoded.errors)
    }

    /// For each picture, the mean luma error of its worst macroblock against `expected`.
    static func worstMacroblock(_ pictures: [[UInt8]], _ expected: [[UInt8]]) -> [Double] {
        zip(pictures, expected).map { picture, expected in
            var worst = 0.0
            for row in 0..<(height / 16) {
                for column in 0..<(width / 16) {
                    var error = 0
                    for y in (row * 16)..<(row * 16 + 16) {
                        for x in (column * 16)..<(column * 16 + 16) {
                            error += abs(Int(picture[y * width + x]) - Int(expected[y * width + x]))
                        }
                    }
                    worst = max(worst, Double(error) / 256)
                }
            }
            return worst
        }
    }

    static func luma(_ frame: Frame) -> [UInt8] {
        (0..<height).flatMap { y in (0..<width).map { frame.byte(plane: 0, x: $0, y: y) } }
    }

    @Test func anUnchangedPictureMarkedTheSameIsCopied() throws {
        let first = Self.picture(0)
        let marked = try Self.encoder(), unmarked = try Self.encoder()
        var markedUnits = [try #require(try marked.encode(first))]
        _ = try #require(try unmarked.encode(first))
        var copied: [Int] = [], markedBytes = 0, unmarkedBytes = 0
        for index in 1...8 {
            var again = first
            again.sequence = UInt64(index)
            again.pts90k = UInt64(index) * 3000
            let copy = try #require(try marked.encode(again, changes: .none))
            let analysed = try #require(try unmarked.encode(again))
            #expect(!copy.isIDR && !analysed.isIDR)
            markedUnits.append(copy)
            copied.append(marked.lastCopiedMacroblocks)
            #expect(unmarked.lastCopiedMacroblocks == 0)
            markedBytes += copy.byteCount
            unmarkedBytes += analysed.byteCount
        }
        // x264 copies a macroblock only where the picture before was coded at a QP no worse: the
        // first repeats code again what the IDR's rate control left coarser; from then on, all.
        let all = (Self.width / 16) * (Self.height / 16)
        #expect(copied.suffix(4) == [all, all, all, all], "macroblocks copied per repeat: \(copied)")
        #expect(copied.allSatisfy { $0 > all / 2 }, "macroblocks copied per repeat: \(copied)")
        // Far smaller than the pictures x264 sharpens again and again when not told.
        #expect(markedBytes * 5 < unmarkedBytes, "8 repeats: marked \(markedBytes) bytes, unmarked \(unmarkedBytes)")
        let decoded = try Self.decodeLuma(markedUnits)
        #expect(decoded.errors.isEmpty, "\(decoded.errors)")
        try #require(decoded.pictures.count == 9)
        // A repeat all copied decodes to the very pixels of the picture before it.
        for index in 1...8 where copied[index - 1] == all {
            #expect(decoded.pictures[index] == decoded.pictures[index - 1], "repeat \(index) differs from the picture before")
        }
    }

    @Test func aChangedRectangleIsCodedAndTheRestCopied() throws {
        // Not on macroblock edges: the macroblocks it only touches must be coded too.
        let rect = FrameDamage.Rect(x: 70, y: 37, width: 61, height: 50)
        let first = Self.picture(0), second = Self.picture(1, rects: [rect])
        let encoder = try Self.encoder()
        let units = [try #require(try encoder.encode(first)), try #require(try encoder.encode(second, changes: .rects([rect])))]
        // Macroblock columns 4...8 and rows 2...5 changed: 20 of 300; most of the rest copied.
        let total = (Self.width / 16) * (Self.height / 16)
        #expect(encoder.lastCopiedMacroblocks <= total - 20)
        let decoded = try Self.decodeLuma(units)
        #expect(decoded.errors.isEmpty, "\(decoded.errors)")
        try #require(decoded.pictures.count == 2)
        let source = Self.luma(second)
        var worstInside = 0, worstFar = 0, farChanged = 0
        for y in 0..<Self.height {
            for x in 0..<Self.width {
                let i = y * Self.width + x
                let error = abs(Int(decoded.pictures[1][i]) - Int(source[i]))
                if x >= rect.x && x < rect.x + rect.width && y >= rect.y && y < rect.y + rect.height {
                    worstInside = max(worstInside, error)
                } else if x < 48 || x >= 160 || y < 16 || y >= 112 {
                    // A macroblock or more away from the changed ones: unless x264 chose to code it
                    // again, the first picture's pixels exactly.
                    worstFar = max(worstFar, error)
                    if decoded.pictures[1][i] != decoded.pictures[0][i] { farChanged += 1 }
                }
            }
        }
        // The rectangle's new flat luma (235) over the texture (up to 255 apart) to every edge pixel.
        #expect(worstInside <= 24, "worst luma error inside the changed rectangle \(worstInside)")
        #expect(worstFar <= 64, "worst luma error away from it \(worstFar)")
        #expect(farChanged * 10 < Self.width * Self.height, "\(farChanged) pixels away from the change differ from the first picture")
    }

    /// Keep-alives coded by x264 (marked the same) or written by nalcast (`RepeatPicture`).
    @Test(arguments: [false, true])
    func aStreamWithCopiedMacroblocksDecodesCleanly(writesRepeats: Bool) throws {
        // A window moving over the texture, keep-alives between, an IDR in the middle; the same
        // pictures encoded without marks for the encoder's usual error.
        let encoder = try Self.encoder(writesRepeats: writesRepeats), unmarked = try Self.encoder()
        var units: [AccessUnit] = [], plain: [AccessUnit] = []
        var previous: FrameDamage.Rect?
        var expected: [[UInt8]] = []
        for index in 0..<40 {
            let rect = FrameDamage.Rect(x: 10 + 6 * index, y: 20 + 3 * index, width: 40, height: 30)
            // Every fourth a keep-alive: the picture before again, its window and fill.
            let keepAlive = index % 4 == 3
            let picture = keepAlive ? Self.picture(index, rects: [previous!], fill: UInt8(60 + ((index - 1) % 4) * 40))
                                    : Self.picture(index, rects: [rect], fill: UInt8(60 + (index % 4) * 40))
            if index == 20 {
                encoder.requestIDR()
                unmarked.requestIDR()
            }
            let changes: PictureChanges = index == 0 ? .unknown : keepAlive ? .none : .rects([previous!, rect])
            units.append(try #require(try encoder.encode(picture, changes: changes)))
            plain.append(try #require(try unmarked.encode(picture)))
            expected.append(Self.luma(picture))
            if !keepAlive { previous = rect }
        }
        #expect(encoder.copiedMacroblocks > 0)
        #expect(encoder.repeatPictures == (writesRepeats ? 10 : 0))
        #expect(units.map(\.isIDR) == plain.map(\.isIDR))
        let decoded = try Self.decodeLuma(units), decodedPlain = try Self.decodeLuma(plain)
        #expect(decoded.errors.isEmpty, "\(decoded.errors)")
        try #require(decoded.pictures.count == 40 && decodedPlain.pictures.count == 40)
        // A macroblock left with old pixels (the window's earlier fill or place, 40 to 200 luma
        // away) would stand out.
        let (marked, usual) = (Self.worstMacroblock(decoded.pictures, expected).max()!, Self.worstMacroblock(decodedPlain.pictures, expected).max()!)
        #expect(marked <= usual + 4, "worst mean luma error of a macroblock: marked \(marked), unmarked \(usual)")
    }
}

/// `PictureChanges.macroblockMap`: any pixel of a rectangle in a macroblock makes it changed.
@Suite struct MacroblockMapTests {
    @Test func rectanglesMarkEveryMacroblockTheyTouch() {
        #expect(PictureChanges.unknown.macroblockMap(width: 64, height: 32) == nil)
        #expect(PictureChanges.none.macroblockMap(width: 64, height: 32) == [1, 1, 1, 1, 1, 1, 1, 1])
        // 2x2 across the corner of four macroblocks; one exactly on a macroblock; one past the edge.
        let map = PictureChanges.rects([.init(x: 15, y: 15, width: 2, height: 2), .init(x: 48, y: 0, width: 16, height: 16),
                                        .init(x: 60, y: 30, width: 40, height: 40)]).macroblockMap(width: 64, height: 32)
        #expect(map == [0, 0, 1, 0,
                        0, 0, 1, 0])
        // A height that is no multiple of 16: the last row of macroblocks is partly outside.
        #expect(PictureChanges.rects([.init(x: 0, y: 39, width: 2, height: 1)]).macroblockMap(width: 32, height: 40) == [1, 1, 1, 1, 0, 1])
    }
}
