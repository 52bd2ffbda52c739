/// `/recordings/get`: the fragments of the recorded segments that cover a time range,
/// stitched into one fragmented MP4 without copying the media: the header (ftyp + moov) of
/// the first segment used (its tracks' start moved to 0: `MP4Fragments.header`), then moof + mdat of each fragment from the last one that starts
/// with an IDR at or before the start, up to the first that starts at or after the end. Each
/// segment's decode times start over (its own muxer), so the moofs of the later segments
/// are copies with their `tfdt` moved on to follow the fragments before; the rest of the
/// body is ranges of the files. A gap between segments (the input was away) closes up.
public struct RecordingCut: Sendable {
    public enum Piece: Sendable, Equatable {
        case bytes([UInt8])
        case file(name: String, offset: Int, length: Int)

        public var length: Int {
            switch self {
            case .bytes(let b): b.count
            case .file(_, _, let length): length
            }
        }
    }

    public let pieces: [Piece]
    /// Wall-clock time of the first picture (the IDR the cut begins at), and how long it runs.
    public let startNs: UInt64
    public let durationNs: UInt64
    public var length: Int { pieces.reduce(0) { $0 + $1.length } }

    /// The cut of `[startNs, startNs + durationNs)` from `index`; nil when nothing recorded
    /// overlaps it.
    public static func make(_ index: RecordingIndex, startNs: UInt64, durationNs: UInt64) -> RecordingCut? {
        let endNs = startNs + durationNs
        var chosen: [(entry: RecordingIndex.Entry, layout: MP4Fragments, fragment: Int, timeNs: UInt64)] = []
        for entry in index.covering(startNs: startNs, endNs: endNs) {
            guard let layout = index.layout(entry.name), let video = layout.videoTrack, video.timescale > 0 else { continue }
            let first = layout.fragments.first?.runs.first { $0.track == video.id }?.decodeTime ?? 0
            for (i, fragment) in layout.fragments.enumerated() {
                guard let run = fragment.runs.first(where: { $0.track == video.id }) else { continue }
                let time = entry.startNs + (run.decodeTime &- first) * 1_000_000_000 / UInt64(video.timescale)
                guard time < endNs else { break }
                // (Listed times are in milliseconds: an IDR within one after `startNs` is at it.)
                if run.startsWithSync && time <= startNs + 999_999 { chosen.removeAll() }
                if !chosen.isEmpty || run.startsWithSync { chosen.append((entry, layout, i, time)) }
            }
        }
        guard let head = chosen.first else { return nil }
        var pieces: [Piece] = [.bytes(head.layout.header)]
        // Per track: where its next fragment must start, and the shift of the current segment.
        var next: [UInt32: UInt64] = [:]
        var shift: [UInt32: Int64] = [:]
        var segment = ""
        for item in chosen {
            let fragment = item.layout.fragments[item.fragment]
            if item.entry.name != segment {
                segment = item.entry.name
                for run in fragment.runs {
                    shift[run.track] = next[run.track].map { Int64(bitPattern: $0) &- Int64(bitPattern: run.decodeTime) } ?? 0
                }
            }
            var moof = fragment.moof
            for run in fragment.runs {
                let moved = UInt64(bitPattern: Int64(bitPattern: run.decodeTime) &+ (shift[run.track] ?? 0))
                if moved != run.decodeTime { write(moved, into: &moof, at: run.tfdtOffset, wide: run.tfdtIs64) }
                next[run.track] = moved + run.duration
            }
            pieces.append(.bytes(moof))
            if fragment.dataLength > 0 { pieces.append(.file(name: item.entry.name, offset: fragment.dataOffset, length: fragment.dataLength)) }
        }
        let video = head.layout.videoTrack!
        let videoEnd = next[video.id] ?? 0
        let firstRun = head.layout.fragments[head.fragment].runs.first { $0.track == video.id }!
        let duration = (videoEnd &- firstRun.decodeTime) * 1_000_000_000 / UInt64(video.timescale)
        return RecordingCut(pieces: pieces, startNs: head.timeNs, durationNs: duration)
    }

    private static func write(_ value: UInt64, into bytes: inout [UInt8], at: Int, wide: Bool) {
        let width = wide ? 8 : 4
        let v = wide ? value : min(value, UInt64(UInt32.max))
        for k in 0..<width { bytes[at + k] = UInt8(truncatingIfNeeded: v >> (8 * UInt64(width - 1 - k))) }
    }

    /// The pieces of bytes `first...last` of the body.
    public func slice(first: Int, last: Int) -> [Piece] {
        var out: [Piece] = []
        var at = 0
        for piece in pieces {
            let end = at + piece.length
            defer { at = end }
            guard end > first, at <= last else { continue }
            let from = max(first, at) - at, to = min(last + 1, end) - at
            switch piece {
            case .bytes(let b): out.append(.bytes(Array(b[from..<to])))
            case .file(let name, let offset, _): out.append(.file(name: name, offset: offset + from, length: to - from))
            }
        }
        return out
    }
}
