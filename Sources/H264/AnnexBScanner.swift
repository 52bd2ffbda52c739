#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Cuts an Annex-B byte stream (H.264 Annex B) into NAL units, incrementally.
///
/// Push chunks of any size as they arrive; complete NAL units come out as soon as the start
/// code of the next one is seen, and `finish()` hands out the last one. Start codes of three
/// (`00 00 01`) and four (`00 00 00 01`) bytes are both accepted, also when split across
/// chunks. A NAL unit is cut right after its last non-zero byte, so trailing zero bytes and
/// the extra zero of a four-byte start code travel with the *next* NAL unit: concatenating
/// every `NALUnit.wire` reproduces the input exactly, less what was skipped.
///
/// Bytes before the first start code are skipped and counted. A NAL unit that grows past
/// `maxNALUnitSize` is dropped (counted too) and the scanner resyncs at the next start code,
/// so its memory never grows without bound.
///
/// NAL units that lie inside one pushed chunk share that chunk's storage (no copy); only a
/// NAL unit spanning chunks is put together in a new buffer.
public struct AnnexBScanner {
    public static let defaultMaxNALUnitSize = 8 << 20

    public let maxNALUnitSize: Int
    /// Bytes thrown away: before the first start code, of oversized NAL units, and of NAL
    /// units with no header byte.
    public private(set) var skippedBytes = 0
    /// NAL units dropped for growing past `maxNALUnitSize`.
    public private(set) var oversizedNALUnits = 0
    /// Total bytes pushed.
    public private(set) var totalBytes = 0

    /// Bytes kept from earlier chunks. In sync: the NAL unit in progress, from the first zero
    /// of its start code. Out of sync: the last few zero bytes (a start code may follow).
    private var pending: [UInt8] = []
    /// True once a start code was seen and `pending` holds a NAL unit in progress.
    private var inSync = false
    /// Index of the current NAL unit's header byte in `pending`; `pending.count` while the
    /// start code ended the last chunk and the header has not arrived yet.
    private var headerIndex = 0
    /// Zeros kept while out of sync: enough for the longest start code.
    private static let maxKeptZeros = 3

    public init(maxNALUnitSize: Int = AnnexBScanner.defaultMaxNALUnitSize) {
        precondition(maxNALUnitSize >= 4)
        self.maxNALUnitSize = maxNALUnitSize
    }

    /// Pushes the next chunk and returns the NAL units it completed.
    public mutating func push(_ chunk: [UInt8]) -> [NALUnit] {
        var out: [NALUnit] = []
        push(chunk) { out.append($0) }
        return out
    }

    /// Pushes the next chunk; `emit` gets every NAL unit it completed, in order.
    ///
    /// Positions below are "combined": `pending` followed by `chunk`, so index `P + i` is
    /// `chunk[i]` where `P == pending.count`.
    public mutating func push(_ chunk: [UInt8], emit: (NALUnit) -> Void) {
        totalBytes += chunk.count
        guard !chunk.isEmpty else { return }
        let P = pending.count
        // Start of the current NAL unit's bytes (in sync) or of the unskipped bytes (not).
        var nalStart = 0
        var header = headerIndex  // combined
        chunk.withUnsafeBufferPointer { buf in
            let base = buf.baseAddress!
            let count = buf.count
            @inline(__always) func byte(_ c: Int) -> UInt8 { c < P ? pending[c] : base[c - P] }
            // Never look for a start code's `01` before the header byte's successor.
            var searchFrom = inSync ? Swift.max(0, header + 1 - P) : 0
            while searchFrom < count, let hit = memchr(base + searchFrom, 1, count - searchFrom) {
                let p = base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                searchFrom = p + 1
                // Most 01 bytes are data: one look at the byte before settles it.
                if p >= 2 && (base[p - 1] != 0 || base[p - 2] != 0) { continue }
                let q = P + p
                // Zeros right before the `01`, not reaching back past the current header.
                let lowest = inSync ? header : nalStart
                var cut = q
                while cut > lowest && byte(cut - 1) == 0 { cut -= 1 }
                guard q - cut >= 2 else { continue }
                if inSync {
                    if cut - nalStart > maxNALUnitSize {
                        oversizedNALUnits += 1
                        skippedBytes += cut - nalStart
                    } else if cut > header {
                        emit(nalUnit(from: nalStart, to: cut, header: header, chunk: chunk, P: P))
                    } else {
                        skippedBytes += cut - nalStart  // a start code with no header after it
                    }
                } else {
                    skippedBytes += cut - nalStart
                    inSync = true
                }
                nalStart = cut
                header = q + 1
                searchFrom = p + 2  // the header byte may itself be 01
            }
            let end = P + count
            if inSync {
                if nalStart >= P {
                    pending = Array(buf[(nalStart - P)...])
                } else if nalStart == 0 {
                    pending.append(contentsOf: buf)
                } else {
                    var kept = Array(pending[nalStart...])
                    kept.append(contentsOf: buf)
                    pending = kept
                }
                headerIndex = header - nalStart
                if pending.count > maxNALUnitSize {
                    // Too big to be real: drop it and look for the next start code.
                    oversizedNALUnits += 1
                    var zeros = 0
                    while zeros < Self.maxKeptZeros && zeros < pending.count && pending[pending.count - 1 - zeros] == 0 { zeros += 1 }
                    skippedBytes += pending.count - zeros
                    pending = [UInt8](repeating: 0, count: zeros)
                    inSync = false
                    headerIndex = 0
                }
            } else {
                var zeros = 0
                while zeros < Self.maxKeptZeros && zeros < end - nalStart && byte(end - 1 - zeros) == 0 { zeros += 1 }
                skippedBytes += end - nalStart - zeros
                pending = [UInt8](repeating: 0, count: zeros)
                headerIndex = 0
            }
        }
    }

    /// Hands out the NAL unit still in progress at the end of the stream (with any trailing
    /// zero bytes in its `wire`, none in its payload) and resets the scanner.
    public mutating func finish() -> NALUnit? {
        defer {
            pending = []
            inSync = false
            headerIndex = 0
        }
        guard inSync, headerIndex < pending.count else {
            skippedBytes += pending.count
            return nil
        }
        var end = pending.count
        while end > headerIndex + 1 && pending[end - 1] == 0 { end -= 1 }
        return NALUnit(wire: pending[...], headerIndex: headerIndex, payloadEnd: end)
    }

    /// The bytes `[from, to)` (combined positions) as a NAL unit: a slice of the chunk or of
    /// `pending` when it lies in one of them, else a new buffer joining the two.
    private func nalUnit(from: Int, to: Int, header: Int, chunk: [UInt8], P: Int) -> NALUnit {
        if from >= P {
            return NALUnit(wire: chunk[(from - P)..<(to - P)], headerIndex: header - P, payloadEnd: to - P)
        }
        if to <= P {
            return NALUnit(wire: pending[from..<to], headerIndex: header, payloadEnd: to)
        }
        var joined = Array(pending[from...])
        joined.append(contentsOf: chunk[0..<(to - P)])
        return NALUnit(wire: joined[...], headerIndex: header - from, payloadEnd: joined.count)
    }
}
