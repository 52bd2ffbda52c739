import Media
import Delivery

extension ResyncingHandOff {
    /// The capture thread's hand-off: the encoder is asked for an IDR to close a gap, and
    /// what is left out counts as frames dropped at the hand-off (`droppedHandOff` in the
    /// capture statistics).
    public convenience init(control: CaptureControl, send: @escaping @Sendable (AccessUnit) -> Bool, hasRoom: @escaping @Sendable () -> Bool,
                            report: @escaping @Sendable (Report) -> Void) {
        self.init(send: { unit, _ in send(unit) }, hasRoom: hasRoom, requestIDR: { control.requestIDR() },
                  countLost: { control.state.withLock { $0.counters.droppedHandOff += 1 } }, report: report)
    }
}
