#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Segment file names from a pattern: strftime fields (local time) plus `%n`, the segment's
/// sequence number (five digits, zero-padded). Default `%Y%m%d-%H%M%S-%n.mp4`: the name's
/// extension picks the container (`ContainerFormat.forPath`), and MP4 is what players,
/// browsers and editors open; `.h264` names keep the Annex-B stream as received.
///
/// A name never leaves its directory: the pattern may not contain `/`, a `/` that a field
/// produces (`%D`) becomes `-`, and `.`/`..` or names ending in `.part`/`.idx` (ours) are
/// refused.
public struct SegmentNamer: Sendable {
    public static let defaultPattern = "%Y%m%d-%H%M%S-%n.mp4"
    public let pattern: String

    public init(pattern: String = SegmentNamer.defaultPattern) throws(SegmentNameError) {
        guard !pattern.isEmpty else { throw SegmentNameError(pattern: pattern, reason: "it is empty") }
        guard !pattern.contains("/") else { throw SegmentNameError(pattern: pattern, reason: "names cannot contain '/'") }
        guard !pattern.utf8.contains(0) else { throw SegmentNameError(pattern: pattern, reason: "it contains a zero byte") }
        guard pattern != "." && pattern != ".." else { throw SegmentNameError(pattern: pattern, reason: "it names a directory") }
        self.pattern = pattern
        let sample = name(time: 0, sequence: 1)
        guard sample != "." && sample != ".." && !sample.isEmpty else { throw SegmentNameError(pattern: pattern, reason: "it makes the name '\(sample)'") }
        guard !sample.hasSuffix(".part") && !sample.hasSuffix(".idx") else {
            throw SegmentNameError(pattern: pattern, reason: "names ending in .part or .idx are the recorder's own")
        }
    }

    /// The name for a segment opened at `time` (seconds since the epoch) with `sequence`.
    public func name(time: Int, sequence: Int) -> String {
        var digits = String(sequence)
        if digits.count < 5 { digits = String(repeating: "0", count: 5 - digits.count) + digits }
        // %n first (strftime's own %n is a newline); %% stays for strftime.
        var expanded = ""
        var it = pattern.makeIterator()
        while let c = it.next() {
            guard c == "%" else { expanded.append(c); continue }
            guard let next = it.next() else { expanded += "%%"; break }
            if next == "n" { expanded += digits } else { expanded += "%"; expanded.append(next) }
        }
        var t = time_t(time)
        var parts = tm()
        localtime_r(&t, &parts)
        var buffer = [CChar](repeating: 0, count: 1024)
        let n = strftime(&buffer, buffer.count, expanded, &parts)
        let text = n > 0 ? String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : expanded
        let safe = text.map { $0 == "/" ? "-" : String($0) }.joined()
        return safe == "." || safe == ".." ? "_" + safe : safe
    }
}

/// `bad --segment-name "a/b": names cannot contain '/'`.
public struct SegmentNameError: Error, CustomStringConvertible, Sendable {
    public let pattern: String
    public let reason: String
    public var description: String { "bad --segment-name \"\(pattern)\": \(reason)" }
}
