import Clocks
/// Frames from a YUV4MPEG2 stream (a file, or `-` for standard input), as ffmpeg's
/// `-f yuv4mpegpipe` writes them. Frames come out in the stream's colourspace
/// (`i420`, `i422`, `i444` or `gray`); `ColorConverter` makes them I420.
///
/// Not `Sendable`: lives on the capture thread.
public final class Y4MSource: FrameSource {
    public let header: Y4MHeader
    public var frameRate: FrameRate { header.frameRate }
    public var width: Int { header.width }
    public var height: Int { header.height }
    public var pixelFormat: PixelFormat { header.pixelFormat }
    public var isLive: Bool { false }
    public var isAtEnd: Bool { input.isAtEndOfRegularFile }

    private let input: FileInput
    private let planes: [Plane]
    private var reusable = ReusableBuffer()
    private var index: UInt64 = 0
    private var pacer: RealtimePacer?
    private var ended = false

    /// Opens `path` (`-` = stdin) and reads the stream header. With `realtime`, frames are
    /// released at the stream's frame rate, like ffmpeg `-re`.
    public init(path: String, realtime: Bool = false) throws {
        input = try FileInput(path: path)
        guard let (line, complete) = try input.readLine(limit: 4096) else {
            throw CaptureError.y4mBadSignature("")
        }
        // Not a Y4M stream at all (often binary): show its first bytes escaped.
        if !line.starts(with: Y4MHeader.signature.utf8) { throw CaptureError.y4mBadSignature(printableBytes(line.prefix(16))) }
        let text = String(decoding: line, as: UTF8.self)
        if !complete && line.count >= 4096 { throw CaptureError.y4mHeaderTooLong }
        // A header cut before its newline is a truncated input (its last field may be cut
        // too: `H24` may have been `H240`), not a stream with no frames.
        if !complete && text.hasPrefix(Y4MHeader.signature) { throw CaptureError.y4mTruncatedHeader(String(text.prefix(64))) }
        header = try Y4MHeader(line: text)
        guard complete else { throw CaptureError.y4mTruncatedHeader(String(text.prefix(64))) }
        planes = header.pixelFormat.packedLayout(width: header.width, height: header.height)
        input.enlargePipeBuffer(toHold: header.pixelFormat.frameByteCount(width: header.width, height: header.height))
        pacer = realtime ? RealtimePacer(rate: header.frameRate) : nil
    }

    public func nextFrame() throws -> Frame? {
        guard !ended else { return nil }
        guard let (line, complete) = try input.readLine(limit: 1024) else {
            ended = true
            // A header and nothing else: the writer died before its first frame.
            if index == 0 { throw CaptureError.y4mNoFrames }
            return nil
        }
        guard line.starts(with: Array("FRAME".utf8)), line.count == 5 || line[5] == UInt8(ascii: " ") else {
            ended = true
            throw CaptureError.y4mBadFrameHeader(frame: index, line: printableBytes(line.prefix(32)))
        }
        let expected = header.frameByteCount
        guard complete else {
            ended = true
            throw CaptureError.truncatedFrame(source: "y4m", frame: index, got: 0, expected: expected)
        }
        let buffer = reusable.obtain(capacity: expected)
        let got = try input.readFully(into: buffer.base, count: expected)
        guard got == expected else {
            ended = true
            throw CaptureError.truncatedFrame(source: "y4m", frame: index, got: got, expected: expected)
        }
        pacer?.wait(forFrame: Int64(index))
        let frame = Frame(width: header.width, height: header.height, format: header.pixelFormat, buffer: buffer, planes: planes,
                          sequence: index, captureTimeNs: WallClock.nanoseconds,
                          pts90k: header.frameRate.ticks90k(ofFrame: Int64(index)))
        index += 1
        return frame
    }
}
