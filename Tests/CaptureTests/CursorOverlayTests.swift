import Capture
import Testing

@Suite struct CursorOverlayTests {
    /// A 4x2 BGRX frame filled with B=10, G=20, R=30.
    private func frame() -> [UInt8] { Array(repeating: [10, 20, 30, 0], count: 8).flatMap { $0 } }

    @Test func opaqueReplacesTransparentKeepsTranslucentBlendsPremultiplied() {
        var pixels = frame()
        // 2x1 cursor: opaque pure red, then half-transparent premultiplied blue (alpha 128, blue 128).
        let cursor: [UInt32] = [0xffff0000, 0x80000080]
        pixels.withUnsafeMutableBufferPointer { out in
            cursor.withUnsafeBufferPointer { image in
                CursorOverlay.blend(image.baseAddress!, width: 2, height: 1, left: 1, top: 1,
                                into: out.baseAddress!, stride: 16, frameWidth: 4, frameHeight: 2)
            }
        }
        // Row 0 untouched, pixel (0,1) untouched.
        #expect(Array(pixels[0..<20]) == Array(frame()[0..<20]))
        // (1,1): opaque red → B 0, G 0, R 255.
        #expect(Array(pixels[20..<23]) == [0, 0, 255])
        // (2,1): B = 128 + 10*127/255 ≈ 133, G = 20*127/255 ≈ 10, R = 30*127/255 ≈ 15.
        #expect(Array(pixels[24..<27]) == [133, 10, 15])
        #expect(Array(pixels[28..<31]) == [10, 20, 30])
    }

    @Test func clipsAtEveryEdge() {
        var pixels = frame()
        let cursor = [UInt32](repeating: 0xff00ff00, count: 9)  // 3x3 opaque green
        for (left, top) in [(-2, -2), (3, 1), (-5, 0), (0, 5)] {
            pixels.withUnsafeMutableBufferPointer { out in
                cursor.withUnsafeBufferPointer { image in
                    CursorOverlay.blend(image.baseAddress!, width: 3, height: 3, left: left, top: top,
                                    into: out.baseAddress!, stride: 16, frameWidth: 4, frameHeight: 2)
                }
            }
        }
        let green: [UInt8] = [0, 255, 0]
        let painted = (0..<8).filter { Array(pixels[($0 * 4)..<($0 * 4 + 3)]) == green }
        // (-2,-2) covers (0,0); (3,1) covers (3,1) only; the others fall outside.
        #expect(painted == [0, 7])
    }

    @Test func blendsIntoRGBAAndARGBFramesAtTheirChannels() {
        // One pixel, opaque red, into a frame of each layout.
        let cursor: [UInt32] = [0xffff0000]
        for (format, red) in [(PixelFormat.rgba, 0), (.argb, 1), (.bgra, 2)] {
            var pixels: [UInt8] = [0, 0, 0, 0]
            pixels.withUnsafeMutableBufferPointer { out in
                cursor.withUnsafeBufferPointer { image in
                    CursorOverlay.blend(image.baseAddress!, width: 1, height: 1, left: 0, top: 0,
                                        into: out.baseAddress!, stride: 4, frameWidth: 1, frameHeight: 1, format: format)
                }
            }
            #expect(pixels.indices.filter { pixels[$0] == 255 } == [red], "\(format): \(pixels)")
        }
    }

    @Test func restoreTakesBackWhatDrawCovered() {
        var pixels = frame()
        let cursor = [UInt32](repeating: 0xff00ff00, count: 4)  // 2x2 opaque green, partly off the frame
        let covered = pixels.withUnsafeMutableBufferPointer { out in
            cursor.withUnsafeBufferPointer { image in
                CursorOverlay.draw(image.baseAddress!, width: 2, height: 2, left: 3, top: 1,
                                   into: out.baseAddress!, stride: 16, frameWidth: 4, frameHeight: 2, format: .bgra)
            }
        }
        #expect((covered.left, covered.top, covered.width, covered.height) == (3, 1, 1, 1))
        #expect(Array(pixels[28..<31]) == [0, 255, 0])
        pixels.withUnsafeMutableBufferPointer { CursorOverlay.restore(covered, into: $0.baseAddress!, stride: 16) }
        #expect(pixels == frame())
    }
}
