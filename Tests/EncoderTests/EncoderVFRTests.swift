import Capture
import Encoder
import Foundation
import Media
import TestSupport
import Testing

/// Screen-like I420 pictures: a detailed texture (text and photos are hard to code), with
/// another texture pasted into a rectangle (a window that changed).
private struct ScreenPictures {
    let width = 640
    let height = 360

    private func value(_ x: Int, _ y: Int, _ seed: UInt32) -> UInt8 {
        var h = UInt32(truncatingIfNeeded: x / 2) &* 0x9E37_79B1 ^ UInt32(truncatingIfNeeded: y / 2) &* 0x85EB_CA77 ^ seed &* 0xC2B2_AE3D
        h ^= h >> 15
        h = h &* 0x2C1B_3C6D
        h ^= h >> 12
        return UInt8(48 + Int(h % 160))
    }

    /// The base texture `seed`, with texture `windowSeed` in the rectangle `window`.
    func picture(seed: UInt32, window: (x: Int, y: Int, w: Int, h: Int)? = nil, windowSeed: UInt32 = 0) -> [UInt8] {
        var bytes = [UInt8](repeating: 128, count: width * height * 3 / 2)
        for y in 0..<height {
            for x in 0..<width {
                var s = seed
                if let w = window, x >= w.x, x < w.x + w.w, y >= w.y, y < w.y + w.h { s = windowSeed }
                bytes[y * width + x] = value(x, y, s)
            }
        }
        return bytes
    }

    func frame(_ bytes: [UInt8], sequence: UInt64, pts90k: UInt64) -> Frame {
        let buffer = FrameBuffer(capacity: bytes.count)
        buffer.base.update(from: bytes, count: bytes.count)
        return Frame(width: width, height: height, format: .i420, buffer: buffer,
                     planes: PixelFormat.i420.packedLayout(width: width, height: height),
                     sequence: sequence, captureTimeNs: 0, pts90k: pts90k)
    }

    /// Luma PSNR of `decoded` against `source` (first width × height bytes of each), over
    /// the pixels `inside` says (all by default).
    func lumaPSNR(_ decoded: ArraySlice<UInt8>, _ source: [UInt8], inside: (Int, Int) -> Bool = { _, _ in true }) -> Double {
        var sum = 0.0
        var count = 0
        let base = decoded.startIndex
        for y in 0..<height {
            for x in 0..<width where inside(x, y) {
                let d = Double(Int(decoded[base + y * width + x]) - Int(source[y * width + x]))
                sum += d * d
                count += 1
            }
        }
        let mse = sum / Double(max(count, 1))
        return mse == 0 ? 100 : 10 * log10(255 * 255 / mse)
    }
}

/// What x264's variable frame rate input does for capture on change, measured: it is kept
/// off (`H264Encoder.Parameters.variableFrameRateInput`); these tests hold that choice to
/// its reasons.
@Suite struct EncoderVFRTests {
    /// Typing-like warm-up (30 frames at 30 fps), a still period of `stillSeconds` (as
    /// repeats: 30 a second for fixed capture, 1 a second for capture on change), then a
    /// window changes. Returns the size and luma PSNR of that frame, and how many frames
    /// x264 held back at most.
    private func firstChangeAfterStill(changeDriven: Bool, vfr: Bool, stillSeconds: Int = 5) throws -> (bytes: Int, psnr: Double, windowPSNR: Double, heldBack: Int) {
        let pictures = ScreenPictures()
        var parameters = H264Encoder.Parameters(width: pictures.width, height: pictures.height, frameRate: FrameRate(30))
        parameters.variableFrameRateInput = vfr
        let encoder = try H264Encoder(parameters: parameters)
        var units: [AccessUnit] = []
        var inputs = 0
        var heldBack = 0
        var sequence: UInt64 = 0
        var pts: UInt64 = 0
        func encode(_ bytes: [UInt8], at time: UInt64) throws {
            let frame = pictures.frame(bytes, sequence: sequence, pts90k: time)
            sequence += 1
            inputs += 1
            if let au = try encoder.encode(frame) { units.append(au) }
            heldBack = max(heldBack, inputs - units.count)
        }
        var last: [UInt8] = []
        for i in 0..<30 {
            last = pictures.picture(seed: 1, window: (x: 32 + (i % 10) * 48, y: 40 + (i / 10) * 24, w: 48, h: 16), windowSeed: UInt32(100 + i))
            try encode(last, at: pts)
            pts += 3000
        }
        let stillStart = pts - 3000
        if changeDriven {
            for s in 1...stillSeconds { try encode(last, at: stillStart + UInt64(s) * 90_000) }
        } else {
            for _ in 0..<(30 * stillSeconds) { try encode(last, at: pts); pts += 3000 }
        }
        pts = stillStart + UInt64(stillSeconds) * 90_000 + 3000
        let changed = pictures.picture(seed: 1, window: (x: 160, y: 90, w: 320, h: 180), windowSeed: 7)
        let changeIndex = inputs
        try encode(changed, at: pts)
        units += try encoder.flush()

        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let stream = dir.appendingPathComponent("vfr.h264")
        let raw = dir.appendingPathComponent("vfr.yuv")
        try Data(units.flatMap { $0.nalUnits.flatMap { $0.wire } }).write(to: stream)
        let result = try Tool.run(["ffmpeg", "-v", "error", "-f", "h264", "-i", stream.path, "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "yuv420p", "-y", raw.path])
        #expect(result.status == 0, "\(result.stderr)")
        let decoded = try [UInt8](Data(contentsOf: raw))
        let size = pictures.width * pictures.height * 3 / 2
        try #require(decoded.count == size * units.count && units.count == inputs)
        let picture = decoded[(changeIndex * size)..<(changeIndex * size + size)]
        let psnr = pictures.lumaPSNR(picture, changed)
        let windowPSNR = pictures.lumaPSNR(picture, changed) { x, y in x >= 160 && x < 480 && y >= 90 && y < 270 }
        return (units[changeIndex].byteCount, psnr, windowPSNR, heldBack)
    }

    @Test func variableFrameRateInputCostsAFrameOfDelay() throws {
        let off = try firstChangeAfterStill(changeDriven: true, vfr: false, stillSeconds: 1)
        let on = try firstChangeAfterStill(changeDriven: true, vfr: true, stillSeconds: 1)
        // Each frame out as it goes in without VFR input; one held back with it.
        #expect(off.heldBack == 0)
        #expect(on.heldBack == 1)
    }

    @Test func firstChangeAfterStillIsNeitherStarvedNorFlooded() throws {
        let fixed = try firstChangeAfterStill(changeDriven: false, vfr: false)
        let damage = try firstChangeAfterStill(changeDriven: true, vfr: false)
        let damageVFR = try firstChangeAfterStill(changeDriven: true, vfr: true)
        func text(_ r: (bytes: Int, psnr: Double, windowPSNR: Double, heldBack: Int)) -> String {
            "\(r.bytes) B, luma PSNR \((r.psnr * 10).rounded() / 10) dB (changed window \((r.windowPSNR * 10).rounded() / 10) dB)"
        }
        print("first change after 5 s still, 640x360 at 691 kbit/s: fixed capture \(text(fixed)); "
              + "on change, CFR accounting \(text(damage)); on change, VFR input \(text(damageVFR))")
        // Not starved: as good as fixed-rate capture gets it, within 1 dB.
        #expect(damage.psnr >= fixed.psnr - 1, "\(damage) against \(fixed)")
        // Not flooded: no bigger than the VBV buffer (500 ms of the bitrate) allows.
        let vbvBytes = 640 * 360 * 3 / 2 / 8
        #expect(damage.bytes <= vbvBytes, "\(damage.bytes) bytes against a VBV of \(vbvBytes)")
    }
}
