import Capture
/// Draws the pointer into a captured BGRA frame.
///
/// XFixes hands the cursor image as 32-bit ARGB words with premultiplied alpha, so each
/// channel blends as `out = cursor + out * (255 - alpha) / 255` (as FFmpeg's x11grab
/// does). The frame's bytes are B, G, R, X per pixel (a little-endian xRGB word).
enum X11Cursor {
    /// Blends `image` (`width`x`height` premultiplied ARGB words) with its top-left
    /// corner at (`left`, `top`) in frame pixels into `frame`, clipped to the frame.
    static func blend(_ image: UnsafePointer<UInt32>, width: Int, height: Int, left: Int, top: Int,
                      into frame: UnsafeMutablePointer<UInt8>, stride: Int, frameWidth: Int, frameHeight: Int) {
        let x0 = Swift.max(0, left), x1 = Swift.min(frameWidth, left + width)
        let y0 = Swift.max(0, top), y1 = Swift.min(frameHeight, top + height)
        guard x0 < x1, y0 < y1 else { return }
        for y in y0..<y1 {
            let src = image + (y - top) * width
            let row = frame + y * stride
            for x in x0..<x1 {
                let argb = src[x - left]
                let alpha = argb >> 24
                guard alpha != 0 else { continue }
                let pixel = row + x * 4
                if alpha == 255 {
                    pixel[0] = UInt8(truncatingIfNeeded: argb)
                    pixel[1] = UInt8(truncatingIfNeeded: argb >> 8)
                    pixel[2] = UInt8(truncatingIfNeeded: argb >> 16)
                    continue
                }
                let keep = 255 - alpha
                for channel in 0..<3 {
                    let c = (argb >> (8 * UInt32(channel))) & 0xff
                    let blended = c + (UInt32(pixel[channel]) * keep + 127) / 255
                    pixel[channel] = UInt8(Swift.min(255, blended))
                }
            }
        }
    }
}
