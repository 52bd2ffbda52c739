import Clocks
/// Headerless frames of a known size and pixel format from a file or `-` (standard input),
/// like ffmpeg's `-f rawvideo`.
///
/// Not `Sendable`: lives on the capture thread.
public final class RawSource: FrameSource {
    public let frameRate: FrameRate
    public let width: Int
    public let height: Int
    public let pixelFormat: PixelFormat
    public var isLive: Bool { false }
    public var isAtEnd: Bool { input.isAtEndOfRegularFile }

    private let input: FileInput
    private let planes: [Plane]
    private let frameSize: Int
    private var reusable = ReusableBuffer()
    private var index: UInt64 = 0
    private var pacer: RealtimePacer?
    private var ended = false

    /// Opens `path` (`-` = stdin). A regular file whose size is not a whole number of
    /// frames is refused here, before any frame. With `realtime`, frames are released at
    /// `frameRate`, like ffmpeg `-re`.
    public init(path: String, width: Int, height: Int, pixelFormat: PixelFormat, frameRate: FrameRate, realtime: Bool = false) throws {
        guard width > 0, height > 0, width <= 16384, height <= 16384 else { throw CaptureError.badSize(width: width, height: height) }
        self.width = width
        self.height = height
        self.pixelFormat = pixelFormat
        self.frameRate = frameRate
        planes = pixelFormat.packedLayout(width: width, height: height)
        frameSize = pixelFormat.frameByteCount(width: width, height: height)
        input = try FileInput(path: path)
        input.enlargePipeBuffer(toHold: frameSize)
        if let size = try input.regularFileSize(), size % frameSize != 0 {
            throw CaptureError.rawSizeNotWholeFrames(path: path, fileSize: size, frameSize: frameSize)
        }
        pacer = realtime ? RealtimePacer(rate: frameRate) : nil
    }

    public func nextFrame() throws -> Frame? {
        guard !ended else { return nil }
        let buffer = reusable.obtain(capacity: frameSize)
        let got = try input.readFully(into: buffer.base, count: frameSize)
        if got == 0 {
            ended = true
            return nil
        }
        guard got == frameSize else {
            ended = true
            throw CaptureError.truncatedFrame(source: "raw", frame: index, got: got, expected: frameSize)
        }
        pacer?.wait(forFrame: Int64(index))
        let frame = Frame(width: width, height: height, format: pixelFormat, buffer: buffer, planes: planes,
                          sequence: index, captureTimeNs: WallClock.nanoseconds, pts90k: frameRate.ticks90k(ofFrame: Int64(index)))
        index += 1
        return frame
    }
}
