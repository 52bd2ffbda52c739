import Media

/// Watches the IDRs going to the segment files and tells once when segments cannot be the
/// length asked for: a segment ends only at an IDR, so with an IDR every 2 s a 5 s segment
/// runs to 6 s. Known after two IDRs (from media time); a reconnect starts over.
///
/// Used by the one thread that feeds the intake (the loop thread or the file reader).
public final class IDRSpacingCheck {
    /// What segments will be: `actual` seconds long, not the `asked` ones, because the stream
    /// has an IDR every `spacing` seconds.
    public struct Finding: Equatable, Sendable {
        public let asked: Double
        public let actual: Double
        public let spacing: Double

        public init(asked: Double, actual: Double, spacing: Double) {
            self.asked = asked
            self.actual = actual
            self.spacing = spacing
        }
    }

    public let segmentDuration: Double
    private let report: (Finding) -> Void
    private var lastIDR: MediaTime?
    private var done = false

    public init(segmentDuration: Double, report: @escaping (Finding) -> Void) {
        self.segmentDuration = segmentDuration
        self.report = report
    }

    public func note(_ unit: TimedUnit) {
        guard !done, unit.unit.isIDR else { return }
        if unit.resumes { lastIDR = nil }
        defer { lastIDR = unit.mediaTime }
        guard let last = lastIDR else { return }
        let spacing = (unit.mediaTime - last).seconds
        guard spacing > 0.001 else { return }
        done = true
        if let actual = IDRSpacingCheck.segmentLength(asked: segmentDuration, idrSpacing: spacing) {
            report(Finding(asked: segmentDuration, actual: actual, spacing: spacing))
        }
    }

    /// The length segments will have when it differs from `asked` by more than a little
    /// (2 %, at least 0.1 s: 29.97 fps streams put IDRs at 2.002 s), else nil.
    public static func segmentLength(asked: Double, idrSpacing spacing: Double) -> Double? {
        let actual = Swift.max(1, ((asked - 1e-6) / spacing).rounded(.up)) * spacing
        return actual - asked > Swift.max(0.1, asked * 0.02) ? actual : nil
    }
}
