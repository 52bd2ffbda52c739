import H264
import Relay
import Synchronization

/// The capture thread's end of the hand-off to the loop thread, kept decodable.
///
/// `send` is the mailbox's (bounded, never waits: false when full) and `hasRoom` says whether
/// it would take one more. A refused access unit opens a gap (`ResyncGate`): everything up to
/// the next IDR is held back and counted in the capture statistics (`droppedHandOff`), the
/// encoder is asked for an IDR as soon as the mailbox has room (again if that IDR is refused
/// too), and
/// `report` hears when a gap opens and when the stream resumes, for the log and `--events`.
public final class ResyncingHandOff: Sendable {
    /// A gap opened (the loop thread is behind) or closed (an IDR went through).
    public enum Report: Sendable {
        case gapOpened
        case resumed(lostAccessUnits: UInt64)
    }

    private let gate = Mutex(ResyncGate())
    private let control: CaptureControl
    private let send: @Sendable (AccessUnit) -> Bool
    private let hasRoom: @Sendable () -> Bool
    private let report: @Sendable (Report) -> Void

    public init(control: CaptureControl, send: @escaping @Sendable (AccessUnit) -> Bool, hasRoom: @escaping @Sendable () -> Bool,
                report: @escaping @Sendable (Report) -> Void) {
        self.control = control
        self.send = send
        self.hasRoom = hasRoom
        self.report = report
    }

    /// Hands `unit` on, or counts it as lost. Capture thread.
    public func hand(_ unit: AccessUnit) {
        let (outcome, askForIDR) = gate.withLock { gate in
            let outcome = gate.pass(isIDR: unit.isIDR) { send(unit) }
            return (outcome, gate.isOpen && gate.shouldAskForIDR(hasRoom: hasRoom()))
        }
        if askForIDR { control.requestIDR() }
        switch outcome {
        case .sent:
            return
        case .resumed(let lost):
            report(.resumed(lostAccessUnits: lost))
        case .refused(let opensGap):
            control.state.withLock { $0.counters.droppedHandOff += 1 }
            if opensGap { report(.gapOpened) }
        case .held:
            control.state.withLock { $0.counters.droppedHandOff += 1 }
        }
    }
}
