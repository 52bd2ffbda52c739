import Capture
import Testing

/// A frame of `format` with every pixel (or pixel pair, for yuyv) set to `pattern`.
func uniformFrame(_ format: PixelFormat, width: Int, height: Int, planeBytes: [[UInt8]]) -> Frame {
    let layout = format.packedLayout(width: width, height: height)
    let buffer = FrameBuffer(capacity: format.frameByteCount(width: width, height: height))
    for (index, plane) in layout.enumerated() {
        let pattern = planeBytes[index]
        for i in 0..<(plane.stride * plane.rows) { buffer.base[plane.offset + i] = pattern[i % pattern.count] }
    }
    return Frame(width: width, height: height, format: format, buffer: buffer, planes: layout, sequence: 7, captureTimeNs: 11, pts90k: 3000)
}

/// Every sample of the I420 output plane lies within `tolerance` of `value`.
func expectPlane(_ frame: Frame, _ plane: Int, _ value: Int, tolerance: Int = 2, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
    let w = plane == 0 ? frame.width : frame.width / 2
    let h = plane == 0 ? frame.height : frame.height / 2
    var worst = 0
    for y in 0..<h { for x in 0..<w { worst = max(worst, abs(Int(frame.byte(plane: plane, x: x, y: y)) - value)) } }
    #expect(worst <= tolerance, "\(what) plane \(plane): off by \(worst) from \(value)", sourceLocation: sourceLocation)
}

@Suite struct ColorConverterTests {
    // BT.601 limited range: red Y82 U90 V240, green Y145 U54 V34, blue Y41 U240 V110.
    @Test func bgraAndRgbaKeepRedAndBlueApart() throws {
        let converter = ColorConverter()
        // The same bytes 00 00 FF FF: red as bgra, blue as rgba.
        let asBGRA = try converter.convert(uniformFrame(.bgra, width: 16, height: 8, planeBytes: [[0, 0, 255, 255]]))
        expectPlane(asBGRA, 0, 82, "bgra red")
        expectPlane(asBGRA, 1, 90, "bgra red")
        expectPlane(asBGRA, 2, 240, "bgra red")
        #expect(asBGRA.sequence == 7 && asBGRA.captureTimeNs == 11 && asBGRA.pts90k == 3000)

        let asRGBA = try ColorConverter().convert(uniformFrame(.rgba, width: 16, height: 8, planeBytes: [[0, 0, 255, 255]]))
        expectPlane(asRGBA, 0, 41, "rgba blue")
        expectPlane(asRGBA, 1, 240, "rgba blue")
        expectPlane(asRGBA, 2, 110, "rgba blue")

        let green = try ColorConverter().convert(uniformFrame(.rgba, width: 16, height: 8, planeBytes: [[0, 255, 0, 255]]))
        expectPlane(green, 0, 145, "rgba green")
        expectPlane(green, 1, 54, "rgba green")
        expectPlane(green, 2, 34, "rgba green")
    }

    @Test func nv12AndYUYV() throws {
        let nv12 = try ColorConverter().convert(uniformFrame(.nv12, width: 16, height: 8, planeBytes: [[77], [60, 200]]))
        expectPlane(nv12, 0, 77, tolerance: 0, "nv12")
        expectPlane(nv12, 1, 60, tolerance: 0, "nv12")
        expectPlane(nv12, 2, 200, tolerance: 0, "nv12")

        let yuyv = try ColorConverter().convert(uniformFrame(.yuyv, width: 16, height: 8, planeBytes: [[50, 70, 90, 210]]))
        for x in 0..<16 { #expect(yuyv.byte(plane: 0, x: x, y: 3) == (x % 2 == 0 ? 50 : 90)) }
        expectPlane(yuyv, 1, 70, tolerance: 0, "yuyv")
        expectPlane(yuyv, 2, 210, tolerance: 0, "yuyv")
    }

    @Test func i420PassesThroughWithoutACopy() throws {
        let input = uniformFrame(.i420, width: 16, height: 8, planeBytes: [[1], [2], [3]])
        let output = try ColorConverter(maxSize: 16).convert(input)
        #expect(output.buffer === input.buffer)
    }

    @Test func maxSizeScalesTheLargerSideKeepingAspect() throws {
        let converter = ColorConverter(maxSize: 640)
        #expect(converter.outputSize(width: 1920, height: 1080) == (640, 360))
        #expect(converter.outputSize(width: 1080, height: 1920) == (360, 640))
        #expect(converter.outputSize(width: 640, height: 480) == (640, 480))
        #expect(converter.outputSize(width: 1366, height: 768) == (640, 360))
        #expect(ColorConverter(maxSize: 101).outputSize(width: 1000, height: 10) == (100, 2))

        let scaled = try converter.convert(uniformFrame(.bgra, width: 1280, height: 720, planeBytes: [[0, 255, 0, 255]]))
        #expect(scaled.width == 640 && scaled.height == 360)
        expectPlane(scaled, 0, 145, "scaled green")
        expectPlane(scaled, 1, 54, "scaled green")
        #expect(scaled.sequence == 7)
    }

    @Test func oddSizesAreRefused() {
        let frame = uniformFrame(.bgra, width: 15, height: 8, planeBytes: [[0]])
        #expect(throws: CaptureError.oddSize(width: 15, height: 8)) { try ColorConverter().convert(frame) }
    }

    @Test func outputBufferIsReusedOnceReleased() throws {
        let converter = ColorConverter()
        let input = uniformFrame(.nv12, width: 16, height: 8, planeBytes: [[1], [2, 3]])
        let first = ObjectIdentifier(try converter.convert(input).buffer)
        let second = ObjectIdentifier(try converter.convert(input).buffer)
        #expect(first == second)
        let held = try converter.convert(input)
        let third = try converter.convert(input)
        #expect(held.buffer !== third.buffer)
    }
}
