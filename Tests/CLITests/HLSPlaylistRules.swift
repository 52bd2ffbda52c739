import Foundation

/// The rules of a Low-Latency HLS media playlist (RFC 8216bis) that a reader relies on, checked
/// on one playlist and across the reloads of a live one: durations within their targets,
/// the media sequence continuous, a segment the same in every reload, the preload hint
/// naming the part that comes next.
struct HLSPlaylistRules {
    struct Segment: Equatable {
        var sequence: Int
        var uri: String
        var duration: Double
    }

    struct Parsed {
        var mediaSequence = -1
        var targetDuration = -1.0
        var partTarget = -1.0
        var partHoldBack = -1.0
        var canBlockReload = false
        var segments: [Segment] = []
        /// Every EXT-X-PART in order: its URI (`URI@OFFSET` for a byte range), duration, the
        /// sequence number of its segment, and its byte range (offset -1 for none).
        var parts: [(uri: String, duration: Double, sequence: Int, offset: Int, length: Int)] = []
        /// The hint's URI (`URI@BYTERANGE-START` for a byte range).
        var preloadHint: String?
        /// Sequence numbers of the segments after an EXT-X-DISCONTINUITY.
        var discontinuities: Set<Int> = []
        var programDates: [Double] = []
        var ended = false
    }

    /// What the reloads before taught: the segments seen, the last part and the hint.
    private var seen: [Int: Segment] = [:]
    private var lastMediaSequence = -1
    private var lastHint: String?
    private var lastParts: [String] = []
    private(set) var checked = 0

    static func attribute(_ name: String, _ line: Substring) -> String? {
        guard let range = line.range(of: name + "=") else { return nil }
        var value = line[range.upperBound...]
        if value.hasPrefix("\"") {
            value = value.dropFirst()
            return String(value.prefix { $0 != "\"" })
        }
        return String(value.prefix { $0 != "," })
    }

    static func parse(_ text: String) -> Parsed {
        var p = Parsed()
        var pendingDuration: Double?
        for line in text.split(separator: "\n") {
            if line.hasPrefix("#EXT-X-MEDIA-SEQUENCE:") { p.mediaSequence = Int(line.dropFirst(22)) ?? -1 }
            if line.hasPrefix("#EXT-X-TARGETDURATION:") { p.targetDuration = Double(line.dropFirst(22)) ?? -1 }
            if line.hasPrefix("#EXT-X-PART-INF:") { p.partTarget = Double(attribute("PART-TARGET", line) ?? "") ?? -1 }
            if line.hasPrefix("#EXT-X-SERVER-CONTROL:") {
                p.partHoldBack = Double(attribute("PART-HOLD-BACK", line) ?? "") ?? -1
                p.canBlockReload = attribute("CAN-BLOCK-RELOAD", line) == "YES"
            }
            if line.hasPrefix("#EXT-X-PART:") {
                let range = (attribute("BYTERANGE", line) ?? "").split(separator: "@").compactMap { Int($0) }
                let (length, offset) = range.count == 2 ? (range[0], range[1]) : (-1, -1)
                let uri = (attribute("URI", line) ?? "") + (offset >= 0 ? "@\(offset)" : "")
                p.parts.append((uri, Double(attribute("DURATION", line) ?? "") ?? -1, p.mediaSequence + p.segments.count, offset, length))
            }
            if line.hasPrefix("#EXT-X-PRELOAD-HINT:") {
                p.preloadHint = attribute("URI", line).map { uri in attribute("BYTERANGE-START", line).map { uri + "@" + $0 } ?? uri }
            }
            if line.hasPrefix("#EXT-X-DISCONTINUITY") && !line.hasPrefix("#EXT-X-DISCONTINUITY-SEQUENCE") {
                p.discontinuities.insert(p.mediaSequence + p.segments.count)
            }
            if line.hasPrefix("#EXT-X-PROGRAM-DATE-TIME:") { p.programDates.append(Self.date(String(line.dropFirst(25)))) }
            if line.hasPrefix("#EXT-X-ENDLIST") { p.ended = true }
            if line.hasPrefix("#EXTINF:") { pendingDuration = Double(line.dropFirst(8).prefix { $0 != "," }) }
            if !line.hasPrefix("#"), let duration = pendingDuration {
                p.segments.append(Segment(sequence: p.mediaSequence + p.segments.count, uri: String(line), duration: duration))
                pendingDuration = nil
            }
        }
        return p
    }

    /// Seconds since the epoch of `2026-12-01T18:11:13.123Z`.
    static func date(_ text: String) -> Double {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.date(from: text)?.timeIntervalSince1970 ?? -1
    }

    /// The rules one playlist breaks, and those it breaks against the reloads before it.
    mutating func violations(_ text: String) -> [String] {
        checked += 1
        let p = Self.parse(text)
        var out: [String] = []
        if !text.hasPrefix("#EXTM3U\n") { out.append("does not begin with #EXTM3U") }
        if p.mediaSequence < 0 || p.targetDuration <= 0 || p.partTarget <= 0 { out.append("no media sequence, target duration or part target") }
        if !p.canBlockReload { out.append("no CAN-BLOCK-RELOAD=YES") }
        if p.partHoldBack < 2 * p.partTarget { out.append("PART-HOLD-BACK \(p.partHoldBack) below twice PART-TARGET \(p.partTarget)") }
        for s in p.segments where s.duration.rounded() > p.targetDuration { out.append("\(s.uri): \(s.duration) s rounds above TARGETDURATION \(p.targetDuration)") }
        for part in p.parts where part.duration > p.partTarget + 1e-9 { out.append("\(part.uri): \(part.duration) s above PART-TARGET \(p.partTarget)") }
        if p.programDates.count != p.segments.count + (p.ended ? 0 : 1) && p.programDates.count != p.segments.count {
            out.append("\(p.programDates.count) program date-times for \(p.segments.count) segments")
        }
        for (i, s) in p.segments.enumerated() where i + 1 < p.programDates.count && !p.discontinuities.contains(s.sequence + 1) {
            let step = p.programDates[i + 1] - p.programDates[i]
            if abs(step - s.duration) > 0.0015 { out.append("\(s.uri): program date-time steps \(step) s over a \(s.duration) s segment") }
        }
        // A complete segment's listed parts add up to it.
        for s in p.segments {
            let parts = p.parts.filter { $0.sequence == s.sequence }
            if !parts.isEmpty {
                let sum = parts.reduce(0) { $0 + $1.duration }
                if abs(sum - s.duration) > 0.001 * Double(parts.count) + 0.001 { out.append("\(s.uri): parts add to \(sum) s, EXTINF \(s.duration) s") }
            }
        }
        // A segment's byte-range parts follow each other from its first byte (a segment's
        // parts are listed all or none).
        for (i, part) in p.parts.enumerated() where part.offset >= 0 {
            let before = i > 0 && p.parts[i - 1].sequence == part.sequence ? p.parts[i - 1] : nil
            let expected = before.map { $0.offset + $0.length } ?? 0
            if part.length <= 0 || part.offset != expected { out.append("\(part.uri): byte range \(part.length)@\(part.offset), expected to begin at \(expected)") }
        }
        if let hint = p.preloadHint, p.parts.contains(where: { $0.uri == hint }) { out.append("the preload hint \(hint) names a part already listed") }
        if p.preloadHint == nil && !p.ended { out.append("no preload hint in a live playlist") }
        // Across reloads.
        if p.mediaSequence < lastMediaSequence { out.append("media sequence went back from \(lastMediaSequence) to \(p.mediaSequence)") }
        for s in p.segments {
            if let before = seen[s.sequence], before != s { out.append("segment \(s.sequence) changed: \(before) then \(s)") }
            seen[s.sequence] = s
        }
        let uris = p.parts.map(\.uri)
        if let hint = lastHint, let last = lastParts.last, let at = uris.firstIndex(of: last), at + 1 < uris.count, uris[at + 1] != hint {
            out.append("the part after \(last) is \(uris[at + 1]), the hint said \(hint)")
        }
        lastMediaSequence = p.mediaSequence
        lastHint = p.preloadHint
        lastParts = uris
        return out
    }
}
