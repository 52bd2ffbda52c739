import Clocks
import IO
import Media
import Output
import Delivery

/// `consume --realtime`: reads a file at the pace of its media time, as FFmpeg's `-re` does.
/// An observer of the intake that holds each access unit until its media time is due on
/// the wall clock (`MediaPacer`), before anything downstream sees it, so that readers of a
/// relay, `-o`, `--segments` and `--forward` all get the file at the pace it was recorded
/// (the intake hands each access unit on alone: `StreamIntake.handsOnEachUnit`). On by
/// default when a file is served (`--listen`, `--web`): read as fast as the disk goes,
/// readers would only skip. Pushing a recording to a live platform wants it too.
///
/// Owned by the intake's thread. The wait is cut into short steps and ends as soon as
/// `stopped` says the run is ending.
final class RealtimePacing {
    private var pacer = MediaPacer()
    private let clock = SystemClock()
    private let stopped: @Sendable () -> Bool

    init(stopped: @escaping @Sendable () -> Bool) {
        self.stopped = stopped
    }

    func take(_ received: TimedUnit) {
        let delay = pacer.delay(for: received.mediaTime, nowNs: clock.nowNanoseconds, resumes: received.resumes)
        if delay > 0 { OSThread.sleep(nanoseconds: delay, unless: stopped) }
    }
}
