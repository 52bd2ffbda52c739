import Capture
import Testing

/// What every change-driven source (X11 damage, PipeWire, wlroots) sends: frames numbered in
/// the order they go out, pts from the first, repeats of the still picture when due.
@Suite struct ChangeDrivenFramesTests {
    static func picture() -> Frame {
        Frame(width: 4, height: 2, format: .bgra, buffer: FrameBuffer(capacity: 32), planes: [Plane(offset: 0, stride: 16, rows: 2)],
              sequence: 0, captureTimeNs: 0, pts90k: 0)
    }

    @Test func framesAreNumberedAndTimedFromTheFirst() {
        var frames = ChangeDrivenFrames(idleRate: 2)  // a repeat every 500 ms
        #expect(!frames.started && frames.nextRepeat == nil && !frames.idleRepeatDue(at: 10_000_000_000))
        let first = frames.changed(Self.picture(), at: 1_000_000_000)
        #expect(first.sequence == 0 && first.pts90k == 0 && !first.isRepeat)
        #expect(frames.nextRepeat == 1_500_000_000)
        #expect(!frames.idleRepeatDue(at: 1_499_999_999) && frames.idleRepeatDue(at: 1_500_000_000))
        let repeated = frames.repeated(width: 4, height: 2, format: .bgra, captureTimeNs: 7, at: 1_500_000_000)
        #expect(repeated.isRepeat && repeated.sequence == 1 && repeated.pts90k == 45_000 && repeated.captureTimeNs == 7)
        #expect(repeated.planes.isEmpty && repeated.width == 4)
        let second = frames.changed(Self.picture(), at: 1_600_000_000)
        #expect(second.sequence == 2 && second.pts90k == 54_000)
        #expect(frames.changed == 2 && frames.repeats == 1 && frames.nextRepeat == 2_100_000_000)
    }

    @Test func withoutAnIdleRateNoRepeatFallsDue() {
        var frames = ChangeDrivenFrames(idleRate: 0)
        _ = frames.changed(Self.picture(), at: 0)
        #expect(frames.started && frames.nextRepeat == nil && !frames.idleRepeatDue(at: .max))
    }
}
