#if canImport(Glibc)
import Clocks
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A moving picture made in memory, directly in I420: colour bars with a white bar
/// sweeping across them, and below them the frame counter and the capture clock
/// (HH:MM:SS.mmm, local time) in seven-segment digits.
///
/// Cheap by construction: rows are filled with `memset`, and when it gets its previous
/// buffer back it repaints only what moved (the sweeping bar and the text).
///
/// With `realtime`, frame `k` is released at `k` frame intervals after the first; when
/// the caller comes back too late for a slot, the missed slots are skipped (their
/// sequence numbers are not used: the gap shows the drop) and counted in `skippedSlots`,
/// never queued. Without it, frames come as fast as asked with media time `k / fps`.
///
/// With `flash`, the pattern is a sync reference for sound: the frame of each whole second
/// is white from edge to edge (luma 235, neutral chroma), and in realtime mode the frame
/// slots are laid on CLOCK_REALTIME so that whole seconds fall on slots: the first frame
/// waits for the next slot of a grid that starts at a whole second, and each frame's capture
/// time is its slot's instant on that grid (the flashed frame's is the second itself; it is
/// made within the wake-up jitter of it). `--audio tone` beeps at the
/// same instants; a recording's offset between flashes and beeps is its A/V offset. At a
/// rate that does not divide a second (29.97) the flash is the frame nearest to the second,
/// within half a frame interval of it. Without realtime, the flash is at whole seconds of
/// media time. A slot skipped because the encoder was late takes its flash with it (no
/// other frame is flashed instead: it would be at the wrong time). Without `flash` nothing
/// of this happens and the pattern is as it always was.
///
/// Not `Sendable`: lives on the capture thread.
public final class TestPatternSource: FrameSource {
    public let width: Int
    public let height: Int
    public let frameRate: FrameRate
    public let realtime: Bool
    public var pixelFormat: PixelFormat { .i420 }
    public var isLive: Bool { realtime }
    /// Slots skipped because `nextFrame()` was called after the next slot was already due.
    public var skippedSlots: UInt64 { slots.skipped }
    /// Frames to produce; nil for no end.
    public let frameLimit: Int?
    /// Whether the frame of each whole second is white (see above).
    public let flash: Bool
    /// Frames flashed so far.
    public private(set) var flashes: UInt64 = 0

    private let planes: [Plane]
    private var reusable = ReusableBuffer()
    private var lastBuffer: ObjectIdentifier?
    private var lastBarX = 0
    private var slots: LiveSlots
    private var produced = 0
    /// With `flash` in realtime mode: the CLOCK_REALTIME instant of slot 0, a whole second
    /// plus whole frame intervals (nil until the first frame).
    private var slotZeroRealtime: Int64?

    private let barsHeight: Int   // colour bars occupy rows 0..<barsHeight (even)
    private let barWidth: Int     // the sweeping bar (even)
    private let step: Int         // bar movement per frame (even)
    private let font: SegmentFont
    private let textTop: Int
    private let textLeft: Int

    // 75 % colour bars (BT.601 limited range): white, yellow, cyan, green, magenta, red, blue, black.
    private static let bars: [(y: UInt8, u: UInt8, v: UInt8)] = [
        (180, 128, 128), (162, 44, 142), (131, 156, 44), (112, 72, 58),
        (84, 184, 198), (65, 100, 212), (35, 212, 114), (16, 128, 128),
    ]
    private static let backgroundY: UInt8 = 40
    private static let textY: UInt8 = 235

    /// A pattern of `width`x`height` (even, at least 64x64) at `frameRate`.
    public init(width: Int = 1280, height: Int = 720, frameRate: FrameRate = FrameRate(30), realtime: Bool = true, frameLimit: Int? = nil,
                flash: Bool = false) throws {
        guard width >= 64, height >= 64, width <= 16384, height <= 16384 else { throw CaptureError.badSize(width: width, height: height) }
        guard width % 2 == 0, height % 2 == 0 else { throw CaptureError.oddSize(width: width, height: height) }
        self.width = width
        self.height = height
        self.frameRate = frameRate
        self.slots = LiveSlots(rate: frameRate)
        self.realtime = realtime
        self.frameLimit = frameLimit
        self.flash = flash
        planes = PixelFormat.i420.packedLayout(width: width, height: height)
        barsHeight = (height * 2 / 3) & ~1
        barWidth = Swift.max(2, (width / 32) & ~1)
        step = Swift.max(2, (width / 120) & ~1)
        let textArea = height - barsHeight
        // The text is about 14 character heights wide: fit it in the width as well.
        font = SegmentFont(height: Swift.max(10, Swift.min(textArea * 2 / 5, width * 9 / 10 / 14)))
        textTop = barsHeight + (textArea - font.height) / 2
        textLeft = Swift.max(2, width / 40)
    }

    public func nextFrame() throws -> Frame? {
        if let frameLimit, produced >= frameLimit { return nil }
        if realtime && flash && slotZeroRealtime == nil { slotZeroRealtime = waitForSecondsGrid() }
        let slot = realtime ? slots.wait() : slots.take()
        produced += 1

        // With the flash in realtime mode a frame's capture time is its slot's instant on the
        // whole-second grid: the picture is made for that instant (the flash for its second),
        // and the sound is placed by these times. Otherwise, when it was made.
        let captureTime = slotZeroRealtime.map { UInt64($0 + frameRate.nanoseconds(ofFrame: slot)) } ?? WallClock.nanoseconds
        let buffer = reusable.obtain(capacity: PixelFormat.i420.frameByteCount(width: width, height: height))
        let frame = Frame(width: width, height: height, format: .i420, buffer: buffer, planes: planes,
                          sequence: UInt64(slot), captureTimeNs: captureTime, pts90k: frameRate.ticks90k(ofFrame: slot))
        if flash && isFlashSlot(slot) {
            paintWhite(frame)
            flashes += 1
        } else {
            draw(frame, slot: slot)
        }
        return frame
    }

    // MARK: the flash

    /// Starts the frame slots at the first instant at or after now of the grid that starts at
    /// the whole second just passed (CLOCK_REALTIME), and returns that instant: slot 0's (the
    /// first `slots.wait()` sleeps until it).
    private func waitForSecondsGrid() -> Int64 {
        let now = Int64(WallClock.nanoseconds)
        let monotonicNow = Int64(MonotonicClock.nanoseconds)
        let second = now - now % 1_000_000_000
        // The first grid slot at or after now.
        let index = Int64((Int128(now - second) * Int128(frameRate.numerator) + Int128(1_000_000_000) * Int128(frameRate.denominator) - 1)
                          / (Int128(1_000_000_000) * Int128(frameRate.denominator)))
        let start = second + frameRate.nanoseconds(ofFrame: index)
        // Slot 0 is that instant on the monotonic clock, not whenever the first wait wakes.
        slots.start(atMonotonic: monotonicNow + (start - now))
        return start
    }

    /// Whether slot `slot` is the one nearest to a whole second: of CLOCK_REALTIME in
    /// realtime mode, of media time otherwise (ties go to the later slot).
    private func isFlashSlot(_ slot: Int64) -> Bool {
        let at = (slotZeroRealtime ?? 0) + frameRate.nanoseconds(ofFrame: slot)
        let interval = frameRate.nanoseconds(ofFrame: 1)
        let half = interval / 2
        // Distance past the whole second, moved by half an interval: the slot whose window
        // [at - half, at + half) holds the second.
        let shifted = (at + half) % 1_000_000_000
        return shifted < interval
    }

    /// The flash: every luma sample white (235), chroma neutral.
    private func paintWhite(_ frame: Frame) {
        fillRows(frame, plane: 0, rows: 0..<height, columns: 0..<width, value: 235)
        fillRows(frame, plane: 1, rows: 0..<(height / 2), columns: 0..<(width / 2), value: 128)
        fillRows(frame, plane: 2, rows: 0..<(height / 2), columns: 0..<(width / 2), value: 128)
        // Its buffer holds nothing of the pattern: the next picture in it is painted whole.
        lastBuffer = nil
    }

    // MARK: drawing

    private func draw(_ frame: Frame, slot: Int64) {
        let reused = lastBuffer == ObjectIdentifier(frame.buffer)
        lastBuffer = ObjectIdentifier(frame.buffer)
        let travel = width - barWidth
        let position = Int((Int64(step) * slot) % Int64(2 * travel))
        let barX = (position <= travel ? position : 2 * travel - position) & ~1

        if reused {
            paintBars(frame, columns: lastBarX..<(lastBarX + barWidth))
            clearText(frame)
        } else {
            paintBars(frame, columns: 0..<width)
            fillRows(frame, plane: 0, rows: barsHeight..<height, columns: 0..<width, value: TestPatternSource.backgroundY)
            fillRows(frame, plane: 1, rows: (barsHeight / 2)..<(height / 2), columns: 0..<(width / 2), value: 128)
            fillRows(frame, plane: 2, rows: (barsHeight / 2)..<(height / 2), columns: 0..<(width / 2), value: 128)
        }
        // The sweeping bar: white luma, neutral chroma.
        fillRows(frame, plane: 0, rows: 0..<barsHeight, columns: barX..<(barX + barWidth), value: 235)
        fillRows(frame, plane: 1, rows: 0..<(barsHeight / 2), columns: (barX / 2)..<((barX + barWidth) / 2), value: 128)
        fillRows(frame, plane: 2, rows: 0..<(barsHeight / 2), columns: (barX / 2)..<((barX + barWidth) / 2), value: 128)
        lastBarX = barX

        font.draw(text(slot: slot, captureTimeNs: frame.captureTimeNs), x: textLeft, y: textTop, luma: TestPatternSource.textY,
                  into: frame.pointer(plane: 0), stride: frame.stride(plane: 0), size: (width, height))
    }

    /// Frame counter and local capture clock, e.g. `00000123 14:03:27.512`.
    private func text(slot: Int64, captureTimeNs: UInt64) -> String {
        var seconds = time_t(captureTimeNs / 1_000_000_000)
        var parts = tm()
        localtime_r(&seconds, &parts)
        let millis = Int(captureTimeNs / 1_000_000 % 1000)
        func pad(_ v: Int, _ n: Int) -> String {
            let s = String(v)
            return s.count >= n ? s : String(repeating: "0", count: n - s.count) + s
        }
        return "\(pad(Int(slot % 100_000_000), 8)) \(pad(Int(parts.tm_hour), 2)):\(pad(Int(parts.tm_min), 2)):\(pad(Int(parts.tm_sec), 2)).\(pad(millis, 3))"
    }

    private func clearText(_ frame: Frame) {
        let textWidth = Swift.max(0, Swift.min(font.measure("00000000 00:00:00.000"), width - textLeft))
        fillRows(frame, plane: 0, rows: textTop..<Swift.min(height, textTop + font.height),
                 columns: textLeft..<(textLeft + textWidth), value: TestPatternSource.backgroundY)
    }

    /// Repaints the colour bars in the given (even-aligned) columns.
    private func paintBars(_ frame: Frame, columns: Range<Int>) {
        let n = TestPatternSource.bars.count
        for (i, colour) in TestPatternSource.bars.enumerated() {
            let x0 = (width * i / n) & ~1
            let x1 = (width * (i + 1) / n) & ~1
            let lo = Swift.max(x0, columns.lowerBound), hi = Swift.min(x1, columns.upperBound)
            guard lo < hi else { continue }
            fillRows(frame, plane: 0, rows: 0..<barsHeight, columns: lo..<hi, value: colour.y)
            fillRows(frame, plane: 1, rows: 0..<(barsHeight / 2), columns: (lo / 2)..<((hi + 1) / 2), value: colour.u)
            fillRows(frame, plane: 2, rows: 0..<(barsHeight / 2), columns: (lo / 2)..<((hi + 1) / 2), value: colour.v)
        }
    }

    private func fillRows(_ frame: Frame, plane: Int, rows: Range<Int>, columns: Range<Int>, value: UInt8) {
        guard !columns.isEmpty else { return }
        let base = frame.pointer(plane: plane) + columns.lowerBound
        let stride = frame.stride(plane: plane)
        for row in rows { memset(base + row * stride, Int32(value), columns.count) }
    }
}
