import Media
import Synchronization

/// The sending end of a hand-off to the loop thread that never waits and keeps the stream
/// decodable: `produce`'s capture thread handing encoded access units to its stream server,
/// and `consume`'s input (the loop thread for a socket, the file reader's thread for a file)
/// handing what it read to the server of `--listen`/`--web`.
///
/// `send` is the mailbox's (bounded, never waits: false when full) and `hasRoom` says whether
/// it would take one more. A refused access unit opens a gap (`ResyncGate`): everything up to
/// the next IDR is held back, each unit counted with `countLost`. When there is an encoder to
/// ask (`requestIDR`), it is asked for an IDR as soon as the mailbox has room (again if that
/// IDR is refused too); without one (a relay) the gap lasts to the stream's next IDR. `report`
/// hears when a gap opens and when the stream resumes, for the log and `--events`.
///
/// After `close(then:)` nothing more is handed on: what `then` sends (the end of the stream)
/// is the last thing the receiver gets from this side.
public final class ResyncingHandOff: Sendable {
    /// A gap opened (the loop thread is behind) or closed (an IDR went through).
    public enum Report: Sendable {
        case gapOpened
        case resumed(lostAccessUnits: UInt64)
    }

    private struct State {
        var gate = ResyncGate()
        var closed = false
    }

    private let state = Mutex(State())
    private let send: @Sendable (AccessUnit, UInt64?) -> Bool
    private let hasRoom: @Sendable () -> Bool
    private let requestIDR: (@Sendable () -> Void)?
    private let countLost: @Sendable () -> Void
    private let report: @Sendable (Report) -> Void

    /// - Parameters:
    ///   - send: hands one access unit on, with the media time (90 kHz) it goes out with when
    ///     the sender knows one (`hand(_:pts90k:)`); false when the mailbox is full.
    ///   - requestIDR: asks the encoder for an IDR; nil when there is no encoder.
    ///   - countLost: counts one access unit left out (refused or held back).
    public init(send: @escaping @Sendable (AccessUnit, UInt64?) -> Bool, hasRoom: @escaping @Sendable () -> Bool,
                requestIDR: (@Sendable () -> Void)?, countLost: @escaping @Sendable () -> Void,
                report: @escaping @Sendable (Report) -> Void) {
        self.send = send
        self.hasRoom = hasRoom
        self.requestIDR = requestIDR
        self.countLost = countLost
        self.report = report
    }

    /// Access units left out so far.
    public var lost: UInt64 { state.withLock { $0.gate.lost } }
    /// True once `close(then:)` was called.
    public var isClosed: Bool { state.withLock { $0.closed } }

    /// Hands `unit` on, or counts it as lost. After `close`, does nothing. The one sending
    /// thread.
    public func hand(_ unit: AccessUnit, pts90k: UInt64? = nil) {
        let canAsk = requestIDR != nil
        let result: (outcome: ResyncGate.Outcome, askForIDR: Bool)? = state.withLock { state in
            guard !state.closed else { return nil }
            let outcome = state.gate.pass(isIDR: unit.isIDR) { send(unit, pts90k) }
            return (outcome, canAsk && state.gate.isOpen && state.gate.shouldAskForIDR(hasRoom: hasRoom()))
        }
        guard let (outcome, askForIDR) = result else { return }
        if askForIDR { requestIDR?() }
        switch outcome {
        case .sent:
            return
        case .resumed(let lost):
            report(.resumed(lostAccessUnits: lost))
        case .refused(let opensGap):
            countLost()
            if opensGap { report(.gapOpened) }
        case .held:
            countLost()
        }
    }

    /// Hands on nothing more, then runs `last` (it sends the end of the stream): whatever
    /// thread is handing units, `last` comes after the last of them. Only the first call runs
    /// `last`.
    public func close(then last: () -> Void) {
        state.withLock { state in
            guard !state.closed else { return }
            state.closed = true
            last()
        }
    }
}
