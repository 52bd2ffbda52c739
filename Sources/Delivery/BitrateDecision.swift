/// What live bitrate a producer's encoder should have, given the lowest estimate of its WebRTC
/// viewers' paths (their REMB, or one made from their TWCC feedback) and a ceiling (`--bitrate`, or the last `POST /bitrate`).
///
/// An estimate limits the encoder only once the path is congested: the estimate under what
/// that viewer was sent over the last second while its receiver reports say it loses 2 % or
/// more of the packets (a receiver's estimate follows what it gets, so under a still
/// screen's few kbit/s, or an IDR's second, it says nothing of the path). From then on the target
/// is 85 % of the estimate, within 100 kbit/s and the ceiling, following it up as the
/// receiver raises it, until 85 % of it reaches the ceiling or no viewer has an estimate:
/// then the ceiling again. A change only of 10 % or more (or back to the ceiling), at most
/// once a second. Pure: the executable's `AdaptiveBitrate` applies it.
public struct BitrateDecision: Sendable, Equatable {
    public static let floor = 100_000
    public static let headroom = 0.85
    public static let minimumStep = 0.1
    public static let minimumIntervalNs: UInt64 = 1_000_000_000

    public var ceiling: Int
    /// The lowest estimate (bits per second); nil when no viewer has one.
    public private(set) var estimate: UInt64?
    /// The estimate limits the encoder (it once was under the rate that viewer was sent).
    public private(set) var isLimiting = false
    /// What the encoder was last asked for.
    public private(set) var current: Int
    private var lastChangeNs: UInt64?

    public init(ceiling: Int) {
        self.ceiling = ceiling
        current = ceiling
    }

    /// Loss (a receiver report's fraction lost, of 256) from which an estimate under what was
    /// sent limits the encoder.
    public static let congestedFractionLost: UInt8 = 5

    /// A new report: the lowest estimate, what its viewer was sent (bits per second), and the
    /// fraction of packets it lost (its last receiver report's, of 256).
    public mutating func report(estimate: UInt64?, sent: UInt64, fractionLost: UInt8 = 0) {
        self.estimate = estimate
        guard let estimate else {
            isLimiting = false
            return
        }
        if estimate < sent && fractionLost >= Self.congestedFractionLost { isLimiting = true }
        if Double(estimate) * Self.headroom >= Double(ceiling) { isLimiting = false }
    }

    /// The bitrate the estimate and the ceiling allow.
    public var target: Int {
        guard isLimiting, let estimate else { return ceiling }
        let allowed = Int(min(Double(estimate) * Self.headroom, Double(Int.max / 2)))
        return min(ceiling, max(Self.floor, allowed))
    }

    /// The target, when it differs enough from the current bitrate and the last change is
    /// a second old; else nil.
    public func change(nowNs: UInt64) -> Int? {
        let target = self.target
        guard target != current else { return nil }
        let step = abs(Double(target - current)) / Double(current)
        guard step >= Self.minimumStep || target == ceiling else { return nil }
        if let last = lastChangeNs, nowNs - last < Self.minimumIntervalNs { return nil }
        return target
    }

    public mutating func applied(_ bits: Int, nowNs: UInt64) {
        current = bits
        lastChangeNs = nowNs
    }
}
