import Capture
import Testing

/// `ColorConverter(inPlace: true)` with `FrameDamage`: the damaged rectangles converted alone
/// into the picture kept give the very picture a whole conversion gives.
@Suite struct DamageConversionTests {
    /// Per plane of a format: horizontal and vertical subsampling, bytes per sample group.
    static func geometry(_ format: PixelFormat) -> [(h: Int, v: Int, bytes: Int)] {
        switch format {
        case .i420: [(1, 1, 1), (2, 2, 1), (2, 2, 1)]
        case .i422: [(1, 1, 1), (2, 1, 1), (2, 1, 1)]
        case .i444: [(1, 1, 1), (1, 1, 1), (1, 1, 1)]
        case .nv12: [(1, 1, 1), (2, 2, 2)]
        case .gray: [(1, 1, 1)]
        case .bgra, .rgba, .argb: [(1, 1, 4)]
        case .yuyv: [(1, 1, 2)]
        case .rgb24, .bgr24: [(1, 1, 3)]
        }
    }

    struct Noise {
        var state: UInt64
        mutating func next() -> UInt8 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return UInt8(truncatingIfNeeded: state >> 33)
        }
    }

    /// A frame of noise; `base` and `rects`: `base`'s bytes outside the rectangles, noise inside.
    static func frame(_ format: PixelFormat, _ width: Int, _ height: Int, seed: UInt64, base: Frame? = nil,
                      rects: [FrameDamage.Rect] = [], damage: FrameDamage? = nil) -> Frame {
        let layout = format.packedLayout(width: width, height: height)
        let buffer = FrameBuffer(capacity: format.frameByteCount(width: width, height: height))
        var noise = Noise(state: seed)
        for (index, plane) in layout.enumerated() {
            let g = geometry(format)[index]
            for row in 0..<plane.rows {
                for column in 0..<plane.stride {
                    let (x, y) = (column / g.bytes * g.h, row * g.v)
                    let inside = rects.contains { x >= $0.x && x < $0.x + $0.width && y >= $0.y && y < $0.y + $0.height }
                    let at = plane.offset + row * plane.stride + column
                    buffer.base[at] = base == nil || inside ? noise.next() : base!.buffer.base[at]
                }
            }
        }
        var frame = Frame(width: width, height: height, format: format, buffer: buffer, planes: layout, sequence: 1, captureTimeNs: 2, pts90k: 3)
        frame.damage = damage
        return frame
    }

    static func planes(_ frame: Frame) -> [[UInt8]] {
        (0..<3).map { i in
            let (w, h) = i == 0 ? (frame.width, frame.height) : (frame.width / 2, frame.height / 2)
            return (0..<h).flatMap { y in (0..<w).map { x in frame.byte(plane: i, x: x, y: y) } }
        }
    }

    @Test(arguments: [PixelFormat.bgra, .rgba, .argb, .rgb24, .bgr24, .yuyv, .nv12, .i422, .i444, .gray])
    func damagedRectanglesAloneGiveTheWholeConversion(format: PixelFormat) throws {
        let (w, h) = (64, 48)
        // Odd edges where the format has a sample per pixel; even where it shares chroma.
        let shared = [.yuyv, .nv12, .i422].contains(format)
        let rects = shared ? [FrameDamage.Rect(x: 4, y: 6, width: 14, height: 10), .init(x: 40, y: 30, width: 10, height: 12), .init(x: 10, y: 8, width: 20, height: 4)]
                           : [FrameDamage.Rect(x: 5, y: 7, width: 13, height: 9), .init(x: 41, y: 31, width: 9, height: 11), .init(x: 10, y: 8, width: 20, height: 3)]
        let first = Self.frame(format, w, h, seed: 1, damage: FrameDamage(picture: 1, rects: [.init(x: 0, y: 0, width: w, height: h)]))
        let second = Self.frame(format, w, h, seed: 2, base: first, rects: rects, damage: FrameDamage(picture: 2, rects: rects))
        let converter = ColorConverter(inPlace: true)
        let kept = try converter.convert(first)
        let partial = try converter.convert(second)
        #expect(partial.buffer === kept.buffer)
        #expect(converter.partialConversions == 1 && converter.fullConversions == 1)
        let whole = try ColorConverter().convert(second)
        #expect(Self.planes(partial) == Self.planes(whole))
    }

    @Test func onlyTheDamageIsRead() throws {
        // A frame whose damage leaves out a change (what no compositor should send): the change
        // is not in the picture, which shows that the rest was kept, not converted again.
        let (w, h) = (32, 16)
        let all = [FrameDamage.Rect(x: 0, y: 0, width: w, height: h)]
        let converter = ColorConverter(inPlace: true)
        let first = Self.frame(.bgra, w, h, seed: 1, damage: FrameDamage(picture: 1, rects: all))
        let expected = Self.planes(try ColorConverter().convert(first))
        _ = try converter.convert(first)
        let moved = Self.frame(.bgra, w, h, seed: 3, base: first, rects: [.init(x: 20, y: 4, width: 6, height: 6)],
                               damage: FrameDamage(picture: 2, rects: [.init(x: 0, y: 0, width: 2, height: 2)]))
        let out = Self.planes(try converter.convert(moved))
        #expect(out[0][4 * w + 20] == expected[0][4 * w + 20])
        #expect(out[0] != Self.planes(try ColorConverter().convert(moved))[0])
    }

    @Test func damageAfterAGapOrAnotherSizeIsConvertedWhole() throws {
        let (w, h) = (32, 16)
        let all = [FrameDamage.Rect(x: 0, y: 0, width: w, height: h)]
        let small = [FrameDamage.Rect(x: 2, y: 2, width: 4, height: 4)]
        let converter = ColorConverter(inPlace: true)
        let first = Self.frame(.bgra, w, h, seed: 1, damage: FrameDamage(picture: 1, rects: all))
        _ = try converter.convert(first)
        // Picture 3 after 1: picture 2 was never converted, its damage is not in 3's.
        let skipped = Self.frame(.bgra, w, h, seed: 4, damage: FrameDamage(picture: 3, rects: small))
        #expect(Self.planes(try converter.convert(skipped)) == Self.planes(try ColorConverter().convert(skipped)))
        // No damage: whole, and the next damage has nothing to be relative to.
        let unknown = Self.frame(.bgra, w, h, seed: 5)
        #expect(Self.planes(try converter.convert(unknown)) == Self.planes(try ColorConverter().convert(unknown)))
        let after = Self.frame(.bgra, w, h, seed: 6, damage: FrameDamage(picture: 4, rects: small))
        #expect(Self.planes(try converter.convert(after)) == Self.planes(try ColorConverter().convert(after)))
        // Another size: whole.
        let larger = Self.frame(.bgra, 2 * w, h, seed: 7, damage: FrameDamage(picture: 5, rects: small))
        #expect(Self.planes(try converter.convert(larger)) == Self.planes(try ColorConverter().convert(larger)))
        #expect(converter.partialConversions == 0 && converter.fullConversions == 5)
    }

    @Test func evenRectsAreClippedAndWidened() {
        let damage = FrameDamage(picture: 1, rects: [.init(x: 3, y: 5, width: 4, height: 2), .init(x: -4, y: 10, width: 8, height: 100), .init(x: 40, y: 0, width: 5, height: 5)])
        #expect(damage.evenRects(width: 32, height: 16) == [.init(x: 2, y: 4, width: 6, height: 4), .init(x: 0, y: 10, width: 4, height: 6)])
    }
}

/// `ColorConverter.convertIfChanged`: nil for a frame whose converted rectangles hold the bytes
/// of the picture before; a change anywhere in them, in any band, gives the picture.
@Suite struct UnchangedConversionTests {
    /// Where each check starts: an in-place converter that has converted a first 48x40 picture
    /// (seed 1, the whole of it as damage); the size and the whole as a rectangle.
    static func started() throws -> (converter: ColorConverter, first: Frame, w: Int, h: Int, all: [FrameDamage.Rect]) {
        let (w, h) = (48, 40)
        let all = [FrameDamage.Rect(x: 0, y: 0, width: w, height: h)]
        let converter = ColorConverter(inPlace: true)
        let first = DamageConversionTests.frame(.bgra, w, h, seed: 1, damage: FrameDamage(picture: 1, rects: all))
        _ = try #require(try converter.convertIfChanged(first), "a first picture is always converted")
        return (converter, first, w, h, all)
    }

    @Test func theSamePictureAgainIsNil() throws {
        let (converter, _, w, h, all) = try Self.started()
        // The same bytes, full damage and partial damage; then with no damage (the whole compared).
        let again = DamageConversionTests.frame(.bgra, w, h, seed: 1, damage: FrameDamage(picture: 2, rects: all))
        #expect(try converter.convertIfChanged(again) == nil)
        let part = DamageConversionTests.frame(.bgra, w, h, seed: 1, damage: FrameDamage(picture: 3, rects: [.init(x: 4, y: 20, width: 10, height: 18)]))
        #expect(try converter.convertIfChanged(part) == nil)
        #expect(try converter.convertIfChanged(DamageConversionTests.frame(.bgra, w, h, seed: 1)) == nil)
        #expect(converter.unchangedPictures == 3)
    }

    /// A change in the last rows (the third band of 16) of a full damage: the picture, equal to a whole conversion's.
    @Test func aChangeInTheLastBandIsThePicture() throws {
        let (converter, first, w, h, all) = try Self.started()
        let changed = DamageConversionTests.frame(.bgra, w, h, seed: 9, base: first, rects: [.init(x: 30, y: 37, width: 2, height: 2)],
                                                  damage: FrameDamage(picture: 2, rects: all))
        let out = try #require(try converter.convertIfChanged(changed))
        #expect(DamageConversionTests.planes(out) == DamageConversionTests.planes(try ColorConverter().convert(changed)))
        // And another, changed in the first band only, with a damage of two rectangles.
        let next = DamageConversionTests.frame(.bgra, w, h, seed: 10, base: changed, rects: [.init(x: 2, y: 2, width: 2, height: 2)],
                                               damage: FrameDamage(picture: 3, rects: [.init(x: 0, y: 0, width: 8, height: 8), .init(x: 20, y: 20, width: 8, height: 8)]))
        let out2 = try #require(try converter.convertIfChanged(next))
        #expect(DamageConversionTests.planes(out2) == DamageConversionTests.planes(try ColorConverter().convert(next)))
        #expect(converter.unchangedPictures == 0)
    }
}

/// `ColorConverter.lastChanges`: what the last conversion wrote into the picture before it, for
/// the encoder to copy the rest; unknown whenever the picture before is not what the buffer holds.
@Suite struct ConversionChangesTests {
    @Test func theRectanglesWrittenAreTheChanges() throws {
        let (converter, first, w, h, all) = try UnchangedConversionTests.started()
        #expect(converter.lastChanges == .unknown)
        // The same pixels: nothing.
        let again = DamageConversionTests.frame(.bgra, w, h, seed: 1, damage: FrameDamage(picture: 2, rects: all))
        #expect(try converter.convertIfChanged(again) == nil)
        #expect(converter.lastChanges == .none)
        // A change at row 37 of a whole compare: from the band it is in (rows 32-39) to the end.
        let low = DamageConversionTests.frame(.bgra, w, h, seed: 9, base: first, rects: [.init(x: 30, y: 37, width: 2, height: 2)],
                                              damage: FrameDamage(picture: 3, rects: all))
        _ = try #require(try converter.convertIfChanged(low))
        #expect(converter.lastChanges == .rects([.init(x: 0, y: 32, width: w, height: 8)]))
        // Damage of two rectangles, the first unchanged: the second, from its first band.
        let two = DamageConversionTests.frame(.bgra, w, h, seed: 10, base: low, rects: [.init(x: 22, y: 22, width: 2, height: 2)],
                                              damage: FrameDamage(picture: 4, rects: [.init(x: 0, y: 0, width: 8, height: 8), .init(x: 20, y: 20, width: 8, height: 8)]))
        _ = try #require(try converter.convertIfChanged(two))
        #expect(converter.lastChanges == .rects([.init(x: 20, y: 20, width: 8, height: 8)]))
        // Changed in the first of two: both, the second converted without a compare.
        let both = DamageConversionTests.frame(.bgra, w, h, seed: 11, base: two, rects: [.init(x: 2, y: 2, width: 2, height: 2)],
                                               damage: FrameDamage(picture: 5, rects: [.init(x: 0, y: 0, width: 8, height: 8), .init(x: 20, y: 20, width: 8, height: 8)]))
        _ = try #require(try converter.convertIfChanged(both))
        #expect(converter.lastChanges == .rects([.init(x: 0, y: 0, width: 8, height: 8), .init(x: 20, y: 20, width: 8, height: 8)]))
    }

    @Test func anotherSizeI420OrScalingIsUnknown() throws {
        let (w, h) = (48, 40)
        let converter = ColorConverter(inPlace: true)
        _ = try converter.convertIfChanged(DamageConversionTests.frame(.bgra, w, h, seed: 1))
        _ = try converter.convertIfChanged(DamageConversionTests.frame(.bgra, w, h, seed: 2))
        #expect(converter.lastChanges == .rects([.init(x: 0, y: 0, width: w, height: h)]))
        _ = try converter.convertIfChanged(DamageConversionTests.frame(.bgra, 2 * w, h, seed: 2))
        #expect(converter.lastChanges == .unknown)
        _ = try converter.convertIfChanged(DamageConversionTests.frame(.i420, w, h, seed: 2))
        #expect(converter.lastChanges == .unknown)
        let scaling = ColorConverter(maxSize: 24, inPlace: true)
        _ = try scaling.convertIfChanged(DamageConversionTests.frame(.bgra, w, h, seed: 1))
        _ = try #require(try scaling.convertIfChanged(DamageConversionTests.frame(.bgra, w, h, seed: 2)))
        #expect(scaling.lastChanges == .unknown)
    }
}
