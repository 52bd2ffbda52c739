/// Keeps a stream decodable across a hand-off that can refuse access units.
///
/// The capture thread hands every access unit to the loop thread through a bounded mailbox
/// and never waits. When the mailbox is full the unit is lost, and every P-frame after it
/// would refer to a picture nobody received. The gate closes at the first refusal and holds
/// back everything up to the next IDR (readers resume there, with nothing undecodable in
/// between). While a gap is open the encoder is asked for an IDR once the hand-off has room
/// again (`shouldAskForIDR`), and once more if that IDR is refused too: asking while the
/// hand-off is still full would only turn every lost frame into a costly IDR. Every unit
/// lost, refused or held, is counted.
///
/// Pure and single-threaded: the capture thread owns it.
public struct ResyncGate: Sendable {
    /// What became of one access unit.
    public enum Outcome: Equatable, Sendable {
        /// Handed on.
        case sent
        /// Handed on, and it closed a gap of `lost` access units (it is an IDR).
        case resumed(lost: UInt64)
        /// Refused by the hand-off; `opensGap` for the first of a gap.
        case refused(opensGap: Bool)
        /// Held back: a gap is open and this is not an IDR.
        case held
    }

    /// Access units lost: refused by the hand-off or held back behind a refusal.
    public private(set) var lost: UInt64 = 0
    /// Gaps opened so far.
    public private(set) var gaps: UInt64 = 0
    /// True from a refusal to the next IDR handed on.
    public private(set) var isOpen = false
    private var lostInGap: UInt64 = 0
    /// An IDR was asked for in this gap and has not come through the gate yet.
    private var idrAsked = false

    public init() {}

    /// Hands `isIDR`'s unit on with `send` (false: refused) unless a gap is open.
    public mutating func pass(isIDR: Bool, send: () -> Bool) -> Outcome {
        if isOpen && !isIDR {
            lose()
            return .held
        }
        guard send() else {
            let opens = !isOpen
            if opens { gaps += 1 }
            isOpen = true
            if isIDR || opens { idrAsked = false }
            lose()
            return .refused(opensGap: opens)
        }
        guard isOpen else { return .sent }
        isOpen = false
        defer { lostInGap = 0 }
        return .resumed(lost: lostInGap)
    }

    /// True when the encoder should be asked for an IDR now: a gap is open, the IDR asked
    /// for before (if any) was refused, and the hand-off `hasRoom` for it.
    public mutating func shouldAskForIDR(hasRoom: Bool) -> Bool {
        guard isOpen, !idrAsked, hasRoom else { return false }
        idrAsked = true
        return true
    }

    private mutating func lose() {
        lost += 1
        lostInGap += 1
    }
}
