import Clocks
import Delivery
import IO

/// The loop of a reader that opens a live source again whenever it is lost (`DemuxReader`,
/// `RTSPReader`): each try is the reader's (open, then read until lost); the loop keeps the
/// count of tries, says `.opened`, `.unreachable` (the first failed try only), `.lost` and
/// the rate-limited `.retrying`, counts reconnections, waits `ReconnectBackoff`'s delays
/// (cut short by a stop) and gives up after `giveUpAfter`.
struct Reopening {
    /// How one try ended.
    enum Outcome {
        /// The run is over: the reader ends with this.
        case end(DemuxReader.End)
        /// The source could not be opened: why. Tried again.
        case notOpened(String)
        /// The source was open and is lost: why. Opened again.
        case lost(String)
    }

    let backoff: ReconnectBackoff.Config
    let intake: StreamIntake
    let stopped: () -> Bool
    /// Says an event of the source.
    let say: (InputEvent.What) -> Void

    /// Tries until a try ends the run, the reader is stopped, or the backoff gives up.
    /// `attempt` calls `opened(found, ignored, seconds)` once the source is open, before it
    /// reads; `seconds`, how long the opening took when the reader knows it (a demuxer opened
    /// before the try), else the time since the try began.
    func run(_ attempt: (_ opened: (_ found: String, _ ignored: [String], _ seconds: Double?) -> Void) -> Outcome) -> DemuxReader.End {
        var backoff = ReconnectBackoff(config: backoff)
        var everOpened = false
        var attempts = 0
        while !stopped() {
            attempts += 1
            let began = MonotonicClock.nanoseconds
            func opened(found: String, ignored: [String], took: Double?) {
                let seconds = took ?? Double(MonotonicClock.nanoseconds - began) / 1e9
                if everOpened { intake.metrics.reconnects.increment() }
                say(.opened(attempts: attempts, opening: InputEvent.Opening(seconds: seconds, found: found, ignored: everOpened ? [] : ignored)))
                everOpened = true
                backoff.connected()
                attempts = 0
            }
            let reason: String
            switch attempt(opened) {
            case .end(let end):
                return end
            case .notOpened(let why):
                if stopped() { return .ended }
                reason = why
                if attempts == 1 { say(.unreachable(reason: reason)) }
            case .lost(let why):
                reason = why
                let now = MonotonicClock.nanoseconds
                backoff.lost(at: now)
                say(.lost(reason: reason, retrying: !backoff.givesUp(now: now)))
            }
            let now = MonotonicClock.nanoseconds
            guard let delay = backoff.nextDelay(now: now, random: Double.random(in: 0...1)) else {
                return .gaveUp(reason: reason, everOpened: everOpened, endedCleanly: intake.lastConnectionEndedCleanly)
            }
            if attempts > 1 && backoff.progressDue(now: now) {
                say(.retrying(attempt: attempts, reason: reason, downFor: backoff.downFor(now: now), nextIn: delay))
            }
            OSThread.sleep(nanoseconds: UInt64(max(0, delay) * 1e9), step: 50_000_000, unless: stopped)
        }
        return .ended
    }

    /// A stall of `seconds`: counted, the access unit in progress dropped, said; the reason
    /// for the `.lost` that follows.
    func stalled(after seconds: Double) -> String {
        intake.metrics.stalls.increment()
        intake.inputFailed()
        say(.stalled(seconds: seconds))
        return "no packet for \(seconds) s"
    }
}
