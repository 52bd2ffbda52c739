/// Draws a pointer into a captured frame of 4-byte pixels: the seam X11's capture (XFixes'
/// cursor image) and PipeWire's (a compositor's cursor metadata) share.
///
/// The pointer comes as 32-bit ARGB words with premultiplied alpha (XFixes' layout;
/// PipeWire's bitmaps are turned into it), so each channel blends as
/// `out = cursor + out * (255 - alpha) / 255` (as FFmpeg's x11grab does). The frame is
/// `bgra` (B,G,R,x: X11's and most compositors'), `rgba` or `argb`.
public enum CursorOverlay {
    /// The pixels a drawn pointer covered, to put back before it is drawn elsewhere.
    public struct Covered {
        public let left: Int, top: Int, width: Int, height: Int
        var bytes: [UInt8]
    }

    /// Blends `image` (`width`x`height` premultiplied ARGB words) with its top-left corner
    /// at (`left`, `top`) in frame pixels into `frame`, clipped to the frame.
    public static func blend(_ image: UnsafePointer<UInt32>, width: Int, height: Int, left: Int, top: Int,
                             into frame: UnsafeMutablePointer<UInt8>, stride: Int, frameWidth: Int, frameHeight: Int,
                             format: PixelFormat = .bgra) {
        let (x0, x1, y0, y1) = clip(width: width, height: height, left: left, top: top, frameWidth: frameWidth, frameHeight: frameHeight)
        guard x0 < x1, y0 < y1 else { return }
        let offsets = channelOffsets(format)  // where B, G, R sit in a pixel
        for y in y0..<y1 {
            let src = image + (y - top) * width
            let row = frame + y * stride
            for x in x0..<x1 {
                let argb = src[x - left]
                let alpha = argb >> 24
                guard alpha != 0 else { continue }
                let pixel = row + x * 4
                let keep = 255 - alpha
                for channel in 0..<3 {
                    let c = (argb >> (8 * UInt32(channel))) & 0xff
                    let at = offsets[channel]
                    let blended = alpha == 255 ? c : c + (UInt32(pixel[at]) * keep + 127) / 255
                    pixel[at] = UInt8(Swift.min(255, blended))
                }
            }
        }
    }

    /// Blends the pointer as `blend` does, first keeping what it covers.
    public static func draw(_ image: UnsafePointer<UInt32>, width: Int, height: Int, left: Int, top: Int,
                            into frame: UnsafeMutablePointer<UInt8>, stride: Int, frameWidth: Int, frameHeight: Int,
                            format: PixelFormat) -> Covered {
        let (x0, x1, y0, y1) = clip(width: width, height: height, left: left, top: top, frameWidth: frameWidth, frameHeight: frameHeight)
        var covered = Covered(left: x0, top: y0, width: Swift.max(0, x1 - x0), height: Swift.max(0, y1 - y0), bytes: [])
        covered.bytes.reserveCapacity(covered.width * covered.height * 4)
        for y in y0..<Swift.max(y0, y1) {
            covered.bytes.append(contentsOf: UnsafeBufferPointer(start: frame + y * stride + x0 * 4, count: covered.width * 4))
        }
        blend(image, width: width, height: height, left: left, top: top, into: frame, stride: stride,
              frameWidth: frameWidth, frameHeight: frameHeight, format: format)
        return covered
    }

    /// Puts back what a drawn pointer covered.
    public static func restore(_ covered: Covered, into frame: UnsafeMutablePointer<UInt8>, stride: Int) {
        let row = covered.width * 4
        covered.bytes.withUnsafeBufferPointer { saved in
            for y in 0..<covered.height {
                (frame + (covered.top + y) * stride + covered.left * 4).update(from: saved.baseAddress! + y * row, count: row)
            }
        }
    }

    private static func clip(width: Int, height: Int, left: Int, top: Int, frameWidth: Int, frameHeight: Int) -> (Int, Int, Int, Int) {
        (Swift.max(0, left), Swift.min(frameWidth, left + width), Swift.max(0, top), Swift.min(frameHeight, top + height))
    }

    /// The byte of blue, green and red in a pixel of `format`.
    private static func channelOffsets(_ format: PixelFormat) -> [Int] {
        switch format {
        case .rgba: [2, 1, 0]
        case .argb: [3, 2, 1]
        default: [0, 1, 2]
        }
    }
}
