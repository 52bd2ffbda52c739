#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The layout of a fragmented MP4 (a finished `--segments` file): where its header (ftyp +
/// moov) ends, and for each fragment (moof + mdat) where it lies, each track's decode time
/// (`tfdt`), duration and whether its first sample is a sync sample (an IDR). Read from the
/// box headers, the moov and the moofs only: the media data is never read.
public struct MP4Fragments: Sendable {
    public struct Track: Sendable, Equatable {
        public let id: UInt32
        public var timescale: UInt32
        var defaultDuration: UInt32 = 0
        var defaultFlags: UInt32 = 0
    }

    public struct Run: Sendable, Equatable {
        public let track: UInt32
        public let decodeTime: UInt64
        public let duration: UInt64
        public let startsWithSync: Bool
        /// Where this traf's tfdt value sits in the moof (to rewrite it) and its width.
        let tfdtOffset: Int
        let tfdtIs64: Bool
    }

    public struct Fragment: Sendable {
        /// The moof's bytes (a copy: small, rewritten when stitched) and where the fragment's
        /// mdat (and whatever follows the moof up to the next moof) lies in the file.
        public let moof: [UInt8]
        public let dataOffset: Int
        public let dataLength: Int
        public let runs: [Run]
    }

    public let headerLength: Int
    /// The header (ftyp + moov) as a cut that begins with it must serve it: its tracks'
    /// leading empty edits shortened by the shortest (`startingAtZero`).
    public let header: [UInt8]
    public let tracks: [Track]
    public let fragments: [Fragment]

    /// The first video-like track: the one whose fragments start with sync samples at times;
    /// the track with the smallest id (nalcast writes the video first).
    public var videoTrack: Track? { tracks.min { $0.id < $1.id } }

    /// Reads the layout of the file at `path`; nil when it is not a fragmented MP4.
    public static func read(path: String) -> MP4Fragments? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        let size = Int(info.st_size)
        var offset = 0, headerLength = 0
        var tracks: [Track] = []
        var fragments: [Fragment] = []
        var pendingMoof: [UInt8]?
        var pendingMoofEnd = 0
        var header: [UInt8] = []
        while offset + 8 <= size {
            guard let head = pread(fd, offset, 16), head.count >= 8 else { break }
            var boxSize = Int(be32(head, 0))
            let type = String(decoding: head[4..<8], as: UTF8.self)
            if boxSize == 1, head.count >= 16 { boxSize = Int(be64(head, 8)) } else if boxSize == 0 { boxSize = size - offset }
            guard boxSize >= 8, offset + boxSize <= size else { break }
            switch type {
            case "moov":
                guard let moov = pread(fd, offset, boxSize) else { return nil }
                tracks = parseMoov(moov)
                headerLength = offset + boxSize
                header = (offset > 0 ? pread(fd, 0, offset) ?? [] : []) + startingAtZero(moov)
            case "moof":
                if let moof = pendingMoof { fragments.append(fragment(moof, tracks, end: pendingMoofEnd, to: offset)) }
                guard let moof = pread(fd, offset, boxSize) else { return nil }
                pendingMoof = moof
                pendingMoofEnd = offset + boxSize
            case "mfra":
                if let moof = pendingMoof { fragments.append(fragment(moof, tracks, end: pendingMoofEnd, to: offset)) }
                pendingMoof = nil
            default: break
            }
            offset += boxSize
        }
        if let moof = pendingMoof { fragments.append(fragment(moof, tracks, end: pendingMoofEnd, to: min(offset, size))) }
        guard headerLength > 0, !tracks.isEmpty else { return nil }
        guard header.count == headerLength else { return nil }
        return MP4Fragments(headerLength: headerLength, header: header, tracks: tracks, fragments: fragments)
    }

    private static func fragment(_ moof: [UInt8], _ tracks: [Track], end: Int, to next: Int) -> Fragment {
        var runs: [Run] = []
        for (trafStart, trafEnd) in children(moof, 8, moof.count) where type(moof, trafStart) == "traf" {
            var id: UInt32 = 0, duration: UInt64 = 0, decodeTime: UInt64 = 0, sync = true, tfdtAt = -1, is64 = false
            var defaultDuration: UInt32 = 0, defaultFlags: UInt32 = 0
            for (box, boxEnd) in children(moof, trafStart + 8, trafEnd) {
                let flags = be32(moof, box + 8) & 0xFFFFFF
                switch type(moof, box) {
                case "tfhd":
                    id = be32(moof, box + 12)
                    let track = tracks.first { $0.id == id }
                    defaultDuration = track?.defaultDuration ?? 0
                    defaultFlags = track?.defaultFlags ?? 0
                    var at = box + 16
                    if flags & 0x1 != 0 { at += 8 }
                    if flags & 0x2 != 0 { at += 4 }
                    if flags & 0x8 != 0 { defaultDuration = be32(moof, at); at += 4 }
                    if flags & 0x10 != 0 { at += 4 }
                    if flags & 0x20 != 0 { defaultFlags = be32(moof, at) }
                case "tfdt":
                    is64 = moof[box + 8] == 1
                    tfdtAt = box + 12
                    decodeTime = is64 ? be64(moof, tfdtAt) : UInt64(be32(moof, tfdtAt))
                case "trun":
                    let count = Int(be32(moof, box + 12))
                    var at = box + 16
                    if flags & 0x1 != 0 { at += 4 }
                    var firstFlags: UInt32?
                    if flags & 0x4 != 0 { firstFlags = be32(moof, at); at += 4 }
                    for index in 0..<count where at <= boxEnd {
                        var sampleFlags = defaultFlags
                        if flags & 0x100 != 0 { duration += UInt64(be32(moof, at)); at += 4 } else { duration += UInt64(defaultDuration) }
                        if flags & 0x200 != 0 { at += 4 }
                        if flags & 0x400 != 0 { sampleFlags = be32(moof, at); at += 4 }
                        if flags & 0x800 != 0 { at += 4 }
                        if index == 0 { sync = (firstFlags ?? sampleFlags) & 0x10000 == 0 }
                    }
                default: break
                }
            }
            if tfdtAt >= 0 { runs.append(Run(track: id, decodeTime: decodeTime, duration: duration, startsWithSync: sync, tfdtOffset: tfdtAt, tfdtIs64: is64)) }
        }
        return Fragment(moof: moof, dataOffset: end, dataLength: next - end, runs: runs)
    }

    /// The tracks of a moov: id and timescale (mdhd), and the defaults of mvex's trex.
    private static func parseMoov(_ moov: [UInt8]) -> [Track] {
        var tracks: [Track] = []
        for (box, end) in children(moov, 8, moov.count) {
            switch type(moov, box) {
            case "trak":
                var id: UInt32 = 0, timescale: UInt32 = 0
                for (child, childEnd) in children(moov, box + 8, end) {
                    if type(moov, child) == "tkhd" { id = be32(moov, child + (moov[child + 8] == 1 ? 28 : 20)) }
                    if type(moov, child) == "mdia" {
                        for (m, _) in children(moov, child + 8, childEnd) where type(moov, m) == "mdhd" {
                            timescale = be32(moov, m + (moov[m + 8] == 1 ? 28 : 20))
                        }
                    }
                }
                tracks.append(Track(id: id, timescale: timescale))
            case "mvex":
                for (trex, _) in children(moov, box + 8, end) where type(moov, trex) == "trex" {
                    let id = be32(moov, trex + 12)
                    if let i = tracks.firstIndex(where: { $0.id == id }) {
                        tracks[i].defaultDuration = be32(moov, trex + 20)
                        tracks[i].defaultFlags = be32(moov, trex + 28)
                    }
                }
            default: break
            }
        }
        return tracks
    }

    /// `moov` with its tracks' leading empty edits (elst entries with media time -1) made
    /// shorter by the shortest of them. A segment's muxer places its tracks at the time the
    /// segment began in the stream (an empty edit that long, with sound), so a cut served
    /// with that header would start there (Chromium's `<video>` showed 2.7 s of nothing
    /// before a cut's first picture); the tracks keep their offsets to one another.
    static func startingAtZero(_ moov: [UInt8]) -> [UInt8] {
        var out = moov
        var edits: [(at: Int, wide: Bool, duration: UInt64)] = []
        for (trak, trakEnd) in children(moov, 8, moov.count) where type(moov, trak) == "trak" {
            for (edts, edtsEnd) in children(moov, trak + 8, trakEnd) where type(moov, edts) == "edts" {
                for (elst, elstEnd) in children(moov, edts + 8, edtsEnd) where type(moov, elst) == "elst" && be32(moov, elst + 12) > 0 {
                    let wide = moov[elst + 8] == 1, entry = elst + 16
                    guard entry + (wide ? 16 : 8) <= elstEnd else { continue }
                    let mediaTime = wide ? Int64(bitPattern: be64(moov, entry + 8)) : Int64(Int32(bitPattern: be32(moov, entry + 4)))
                    if mediaTime == -1 { edits.append((entry, wide, wide ? be64(moov, entry) : UInt64(be32(moov, entry)))) }
                }
            }
        }
        guard edits.count == children(moov, 8, moov.count).filter({ type(moov, $0.0) == "trak" }).count,
              let least = edits.map(\.duration).min(), least > 0 else { return out }
        for edit in edits {
            let value = edit.duration - least, width = edit.wide ? 8 : 4
            for k in 0..<width { out[edit.at + k] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(width - 1 - k))) }
        }
        return out
    }

    /// The boxes directly inside `bytes[start..<end]`: (offset, end) of each.
    static func children(_ bytes: [UInt8], _ start: Int, _ end: Int) -> [(Int, Int)] {
        var out: [(Int, Int)] = []
        var at = start
        while at + 8 <= end {
            let size = Int(be32(bytes, at))
            guard size >= 8, at + size <= end else { break }
            out.append((at, at + size))
            at += size
        }
        return out
    }

    static func type(_ bytes: [UInt8], _ at: Int) -> String { String(decoding: bytes[at + 4 ..< at + 8], as: UTF8.self) }

    static func be32(_ b: [UInt8], _ at: Int) -> UInt32 {
        guard at + 4 <= b.count else { return 0 }
        return UInt32(b[at]) << 24 | UInt32(b[at + 1]) << 16 | UInt32(b[at + 2]) << 8 | UInt32(b[at + 3])
    }

    static func be64(_ b: [UInt8], _ at: Int) -> UInt64 { UInt64(be32(b, at)) << 32 | UInt64(be32(b, at + 4)) }

    static func pread(_ fd: Int32, _ offset: Int, _ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        let n = bytes.withUnsafeMutableBytes { Glibc.pread(fd, $0.baseAddress, count, off_t(offset)) }
        guard n > 0 else { return nil }
        if n < count { bytes.removeLast(count - n) }
        return bytes
    }
}
