/// One picture as a source produced it, with its timing.
///
/// Not `Sendable`: it points into a `FrameBuffer` that its source reuses.
public struct Frame {
    public let width: Int
    public let height: Int
    public let format: PixelFormat
    public let buffer: FrameBuffer
    public let planes: [Plane]
    /// Counts every frame the source produced (or should have, for live sources that
    /// skip slots), starting at 0: gaps mean drops.
    public var sequence: UInt64
    /// When the frame was captured, CLOCK_REALTIME nanoseconds.
    public var captureTimeNs: UInt64
    /// Media time in 90 kHz ticks, 0 for the first frame of the source.
    public var pts90k: UInt64
    /// A change-driven source had nothing new: this stands for the previous frame again
    /// (a keep-alive, or a wake-up for an IDR), with its own times. It has no pixels
    /// (no planes); the pipeline encodes the picture it kept.
    public var isRepeat = false
    /// What changed since the source's previous picture, when the source knows it (nil: the
    /// whole picture may have).
    public var damage: FrameDamage?

    public init(width: Int, height: Int, format: PixelFormat, buffer: FrameBuffer, planes: [Plane],
                sequence: UInt64, captureTimeNs: UInt64, pts90k: UInt64) {
        precondition(planes.allSatisfy { $0.offset + $0.stride * $0.rows <= buffer.capacity }, "planes outside the buffer")
        self.width = width
        self.height = height
        self.format = format
        self.buffer = buffer
        self.planes = planes
        self.sequence = sequence
        self.captureTimeNs = captureTimeNs
        self.pts90k = pts90k
    }

    /// The first byte of plane `index`.
    public func pointer(plane index: Int) -> UnsafeMutablePointer<UInt8> { buffer.base + planes[index].offset }

    /// Bytes from one row of plane `index` to the next.
    public func stride(plane index: Int) -> Int { planes[index].stride }

    /// The byte at column `x` (in bytes) of row `y` of plane `index`, for checks.
    public func byte(plane index: Int, x: Int, y: Int) -> UInt8 {
        pointer(plane: index)[y * planes[index].stride + x]
    }

    /// Media time in seconds.
    public var seconds: Double { Double(pts90k) / 90_000 }
}
