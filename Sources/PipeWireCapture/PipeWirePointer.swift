import Capture
import CPipeWire

/// The pointer drawn into PipeWire frames from the node's cursor metadata (`--cursor` with a
/// compositor in cursor mode "metadata": mutter's, KWin's). The compositor sends the picture
/// without the pointer, and a pointer move alone as a buffer without pixels.
///
/// Each picture taken gets the pointer blended in (`CursorOverlay`, the seam X11's capture
/// shares), what it covered kept. A pointer change alone makes a frame of its own: the last
/// picture copied into the other of two buffers, the covered pixels put back, the pointer
/// drawn where it is now. The two buffers take turns, so the picture being copied from is
/// never the one written, and neither is allocated again in the steady state.
///
/// Not `Sendable`: it lives on the capture thread with its `PipeWireSource`.
final class PipeWirePointer {
    /// The picture last sent (pointer drawn), its row bytes, bytes and visible size.
    private(set) var picture: FrameBuffer?
    private var stride = 0, bytes = 0, width = 0, height = 0, format = PixelFormat.bgra
    private var covered: CursorOverlay.Covered?
    private var buffers = [ReusableBuffer(), ReusableBuffer()]
    private var turn = 0
    private var image: [UInt32] = []
    private var shape: UInt64 = 0
    /// The cursor serial last drawn: a newer one in the shim means the pointer changed.
    private(set) var drawnSerial: UInt64 = 0
    /// Whether any cursor metadata came (once: the source says so).
    private(set) var seen = false
    /// Frames made for a pointer change alone.
    private(set) var ownFrames: UInt64 = 0

    /// A buffer for the next picture: not the one `picture` holds.
    func obtain(capacity: Int) -> FrameBuffer {
        turn ^= 1
        return buffers[turn].obtain(capacity: capacity)
    }

    /// Draws the pointer into a fresh picture (`bytes` of rows of `stride`; `width`x`height`
    /// shown) and keeps it as the last one.
    func drawInto(_ buffer: FrameBuffer, stride: Int, bytes: Int, width: Int, height: Int, format: PixelFormat, stream: OpaquePointer) {
        (self.stride, self.bytes, self.width, self.height, self.format) = (stride, bytes, width, height, format)
        covered = nil
        picture = buffer
        draw(into: buffer, stream: stream)
    }

    /// The last picture with the pointer as it is now: a buffer of its own, nil before any
    /// picture.
    func redraw(stream: OpaquePointer) -> FrameBuffer? {
        guard let last = picture else { return nil }
        let buffer = obtain(capacity: bytes)
        buffer.base.update(from: last.base, count: bytes)
        if let covered { CursorOverlay.restore(covered, into: buffer.base, stride: stride) }
        covered = nil
        picture = buffer
        ownFrames += 1
        draw(into: buffer, stream: stream)
        return buffer
    }

    private func draw(into buffer: FrameBuffer, stream: OpaquePointer) {
        var cursor = nc_pw_cursor()
        nc_pw_take_cursor(stream, &cursor, nil, 0)
        if cursor.shape != shape {
            // PipeWire's thread may change the bitmap between the two looks: again until
            // the bitmap taken has the size it was taken at.
            repeat {
                image = [UInt32](repeating: 0, count: Int(cursor.width) * Int(cursor.height))
                image.withUnsafeMutableBufferPointer { nc_pw_take_cursor(stream, &cursor, $0.baseAddress, $0.count) }
            } while image.count != Int(cursor.width) * Int(cursor.height)
            shape = cursor.shape
        }
        drawnSerial = cursor.serial
        seen = seen || cursor.serial > 0
        guard cursor.visible != 0, image.count == Int(cursor.width) * Int(cursor.height), !image.isEmpty else { return }
        covered = image.withUnsafeBufferPointer {
            CursorOverlay.draw($0.baseAddress!, width: Int(cursor.width), height: Int(cursor.height),
                               left: Int(cursor.x - cursor.hot_x), top: Int(cursor.y - cursor.hot_y),
                               into: buffer.base, stride: stride, frameWidth: width, frameHeight: height, format: format)
        }
    }
}
