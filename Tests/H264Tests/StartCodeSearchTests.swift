import Testing
@testable import H264
import Media

@Suite struct StartCodeSearchTests {
    /// The start codes of `bytes` from `from` on, one byte at a time: what the search must find.
    static func naive(_ bytes: [UInt8], from: Int) -> Int? {
        var p = Swift.max(from, 2)
        while p < bytes.count {
            if bytes[p] == 1 && bytes[p - 1] == 0 && bytes[p - 2] == 0 { return p }
            p += 1
        }
        return nil
    }

    /// Buffers dense with zeros and ones, so that pairs of zeros, start codes and near misses
    /// (`00 01`, `00 00 02`, `00 00 00 01`) fall at every offset of the 16-byte groups and
    /// across the 64-byte steps, and lengths around the group and the step (the search's
    /// tail: a step needs 65 bytes, a group 17).
    static func buffers() -> [[UInt8]] {
        var rng = SplitMix(state: 7)
        var out: [[UInt8]] = [[], [1], [0, 1], [0, 0, 1], [0, 0, 0, 1], [UInt8](repeating: 0, count: 40), [UInt8](repeating: 0, count: 130)]
        for length in [3, 15, 16, 17, 18, 31, 32, 33, 34, 63, 64, 65, 66, 80, 81, 82, 100, 128, 129, 130, 145, 146, 257] {
            for _ in 0..<40 {
                out.append((0..<length).map { _ in [0, 0, 0, 1, 2, 3, 0x80, 0xff][Int.random(in: 0...7, using: &rng)] })
            }
        }
        // One start code at each offset of a long run of data bytes: in each group of a step,
        // across the groups and the steps, in the tail.
        for offset in 0..<150 {
            var bytes = [UInt8](repeating: 0x55, count: 152)
            bytes[offset] = 0
            bytes[offset + 1] = 0
            bytes[offset + 2] = 1
            out.append(bytes)
        }
        // An escaped pair (`00 00 03`) in front of a start code: in the same group, the group
        // before, the step before; and pairs whose `01` would be the byte past the end.
        for (escape, start) in [(3, 9), (5, 20), (20, 70), (60, 64), (62, 66), (1, 140)] {
            var bytes = [UInt8](repeating: 0x55, count: 152)
            bytes.replaceSubrange(escape..<(escape + 3), with: [0, 0, 3])
            bytes.replaceSubrange(start..<(start + 3), with: [0, 0, 1])
            out.append(bytes)
        }
        for length in [17, 18, 64, 65, 66, 67, 81, 129] {
            var bytes = [UInt8](repeating: 0x55, count: length)
            bytes[length - 2] = 0
            bytes[length - 1] = 0
            out.append(bytes)
        }
        return out
    }

    @Test func findsWhatAByteByByteSearchFinds() {
        for bytes in Self.buffers() {
            bytes.withUnsafeBufferPointer { buffer in
                guard let base = buffer.baseAddress else { return }
                for from in 0...bytes.count {
                    let found = StartCodeSearch.next(in: base, from: from, count: bytes.count)
                    #expect(found == Self.naive(bytes, from: from), "\(bytes) from \(from)")
                }
            }
        }
    }

    /// Two zeros in a row, found byte by byte: in every length of each buffer from its first
    /// bytes, and in every tail (the 16-byte groups, the overlapping last group, buffers
    /// shorter than one group).
    @Test func findsZeroPairsAsAByteByByteSearch() {
        for bytes in Self.buffers() {
            // nextPair[i]: where the first pair at or after i begins (bytes.count if none).
            var nextPair = [Int](repeating: bytes.count, count: bytes.count + 1)
            for i in stride(from: bytes.count - 2, through: 0, by: -1) {
                nextPair[i] = bytes[i] == 0 && bytes[i + 1] == 0 ? i : nextPair[i + 1]
            }
            bytes.withUnsafeBufferPointer { buffer in
                guard let base = buffer.baseAddress else { return }
                var ranges = (0...Swift.min(3, bytes.count)).flatMap { from in (from...bytes.count).map { (from, $0) } }
                ranges += (0...bytes.count).map { ($0, bytes.count) }
                for (from, end) in ranges {
                    let expected = nextPair[from] + 1 < end
                    #expect(StartCodeSearch.hasZeroPair(base + from, count: end - from) == expected, "\(bytes) \(from)..<\(end)")
                }
            }
        }
    }

    /// The RBSP prefix a slice header is read from is the unescaped bytes' first ones, shared
    /// or copied: for escaped payloads with and without emulation prevention bytes, at every
    /// limit.
    @Test func unescapedPrefixIsTheRBSPsFirstBytes() {
        var rng = SplitMix(state: 5)
        // Escaped payloads, and raw bytes (pairs of zeros before other bytes than 03).
        var payloads: [[UInt8]] = Self.buffers().map { RBSP.escape($0) } + Self.buffers()
        for length in [20, 48, 49, 60, 100] {
            for _ in 0..<20 {
                payloads.append(RBSP.escape((0..<length).map { _ in [0, 0, 3, 0x40, 0xff][Int.random(in: 0...4, using: &rng)] }))
            }
        }
        for escaped in payloads {
            let rbsp = RBSP.unescape(escaped)
            for limit in [1, 16, 17, 33, 48, 64] {
                let prefix = RBSP.unescapedPrefix(escaped[...], limit: limit)
                #expect(Array(prefix) == Array(rbsp.prefix(limit)), "\(escaped) limit \(limit)")
            }
        }
    }

    /// The NAL unit bodies of `bytes`, cut byte by byte: each from the byte after a start
    /// code to the zeros before the next one (a body of zeros only is no NAL unit), the last
    /// to the end less its trailing zeros (at least its header byte).
    static func naiveBodies(_ bytes: [UInt8]) -> [[UInt8]] {
        var starts: [Int] = []
        var from = 0
        while let p = naive(bytes, from: from) {
            starts.append(p)
            from = p + 1
        }
        var bodies: [[UInt8]] = []
        for (i, p) in starts.enumerated() where p + 1 < bytes.count {
            let header = p + 1
            var end: Int
            if i + 1 < starts.count {
                end = starts[i + 1] - 2
                while end > header && bytes[end - 1] == 0 { end -= 1 }
                if end == header { continue }
            } else {
                end = bytes.count
                while end > header + 1 && bytes[end - 1] == 0 { end -= 1 }
            }
            bodies.append(Array(bytes[header..<end]))
        }
        return bodies
    }

    /// The scanner, fed the same dense bytes in random chunks, cuts the NAL units a byte-by-byte
    /// cut of the whole buffer gives: chunks shorter than the search's 16-byte group (start
    /// codes split across them, their zeros kept from the chunk before), and chunks long
    /// enough for its 64-byte steps and the tail after them.
    @Test func scannerCutsAtEveryStartCodeInAnyChunking() {
        var rng = SplitMix(state: 11)
        for sizes in [1...40, 60...300] {
            for bytes in Self.buffers() {
                var scanner = AnnexBScanner()
                var nals: [NALUnit] = []
                var at = 0
                while at < bytes.count {
                    let n = Swift.min(bytes.count - at, Int.random(in: sizes, using: &rng))
                    nals += scanner.push(Array(bytes[at..<(at + n)]))
                    at += n
                }
                if let last = scanner.finish() { nals.append(last) }
                #expect(nals.map { Array($0.body) } == Self.naiveBodies(bytes), "\(bytes) in chunks of \(sizes)")
            }
        }
    }
}
