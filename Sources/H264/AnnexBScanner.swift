import Media

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
///
/// The NAL unit in progress (its start code seen, its end not yet) can be looked at before
/// it ends: `pendingHead()` gives its first bytes, so a reader can tell from its header and
/// slice header that the access unit before it is complete without waiting for the next
/// start code. A NAL unit dropped for its size hands its first bytes to `dropped` for the
/// same reason.
public struct AnnexBScanner {
    public static let defaultMaxNALUnitSize = AnnexB.defaultMaxNALUnitSize
    /// Bytes of a NAL unit's body (header byte included) that `pendingHead()` and `dropped`
    /// hand out at most: enough for any slice header's first 48 bytes of RBSP, even with an
    /// emulation prevention byte after every two.
    public static let headLength = 80

    public let maxNALUnitSize: Int
    /// Bytes thrown away: before the first start code, of oversized NAL units, and of NAL
    /// units with no header byte.
    public private(set) var skippedBytes = 0
    /// NAL units dropped for growing past `maxNALUnitSize`.
    public private(set) var oversizedNALUnits = 0
    /// Total bytes pushed.
    public private(set) var totalBytes = 0
    /// Bytes of the NAL unit in progress known to be its own: from its header byte to its
    /// last non-zero byte (zeros at the end of what arrived may begin the next start code).
    /// 0 when no NAL unit is in progress or none of its body has arrived.
    public private(set) var pendingBodyCount = 0
    /// Bytes held for the NAL unit in progress (start code included), or zeros kept while
    /// looking for a start code: what is lost if the input stops here for good.
    public var pendingBytes: Int { pendingCount }

    /// Bytes kept from earlier chunks, as slices of them (not copied until a NAL unit that
    /// spans chunks completes). In sync: the NAL unit in progress, from the first zero of its
    /// start code. Out of sync: the last few zero bytes (a start code may follow).
    private var pending: [ArraySlice<UInt8>] = []
    /// Bytes in `pending`.
    private var pendingCount = 0
    /// True once a start code was seen and `pending` holds a NAL unit in progress.
    private var inSync = false
    /// Offset of the current NAL unit's header byte in `pending`; `pendingCount` while the
    /// start code ended the last chunk and the header has not arrived yet.
    private var headerIndex = 0
    /// Pieces of earlier chunks kept before they are folded into one buffer.
    private static let maxPendingParts = 1024
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

    /// Pushes the next chunk; `emit` gets every NAL unit it completed, in order, and
    /// `dropped` the first bytes (up to `headLength` of its body, header byte first) of every
    /// NAL unit dropped for growing past `maxNALUnitSize`, in the same order.
    ///
    /// Positions below are "combined": `pending` followed by `chunk`, so index `P + i` is
    /// `chunk[i]` where `P == pendingCount`.
    public mutating func push(_ chunk: [UInt8], emit: (NALUnit) -> Void, dropped: (ArraySlice<UInt8>) -> Void = { _ in }) {
        totalBytes += chunk.count
        guard !chunk.isEmpty else { return }
        let P = pendingCount
        // Start of the current NAL unit's bytes (in sync) or of the unskipped bytes (not).
        var nalStart = 0
        var header = headerIndex  // combined
        chunk.withUnsafeBufferPointer { buf in
            let base = buf.baseAddress!
            let count = buf.count
            // Never look for a start code's `01` before the header byte's successor.
            var searchFrom = inSync ? Swift.max(0, header + 1 - P) : 0
            while searchFrom < count, let p = Self.candidate(base, from: searchFrom, count: count) {
                searchFrom = p + 1
                let q = P + p
                // Zeros right before the `01`, not reaching back past the current header.
                let lowest = inSync ? header : nalStart
                var cut = q
                while cut > lowest && (cut > P ? base[cut - 1 - P] : pendingByte(cut - 1)) == 0 { cut -= 1 }
                guard q - cut >= 2 else { continue }
                if inSync {
                    if cut - nalStart > maxNALUnitSize {
                        oversizedNALUnits += 1
                        skippedBytes += cut - nalStart
                        if cut > header {
                            dropped(Self.bytes(from: header, to: Swift.min(cut, header + Self.headLength), chunk: chunk, P: P, pending: pending))
                        }
                    } else if cut > header {
                        emit(Self.nalUnit(from: nalStart, to: cut, header: header, chunk: chunk, P: P, pending: pending))
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
                // The last non-zero byte from the header on: in this chunk, or (none there,
                // and the NAL unit began in an earlier chunk) where it was before.
                var last = end
                let floor = Swift.max(header, P)
                while last > floor && base[last - 1 - P] == 0 { last -= 1 }
                if last > floor {
                    pendingBodyCount = last - header
                } else if header >= P {
                    pendingBodyCount = 0
                }
                if nalStart >= P {
                    pending = [chunk[(nalStart - P)...]]
                } else {
                    dropPendingPrefix(nalStart)
                    pending.append(chunk[...])
                    // A peer that sends a few bytes per read would otherwise leave one small
                    // buffer per read here: past a bound, fold them into one.
                    if pending.count > Self.maxPendingParts { pending = [joinedPending()[...]] }
                }
                pendingCount = end - nalStart
                headerIndex = header - nalStart
                // Up to three trailing zeros may be the start of the next start code: they
                // do not count, as they would not if the `01` were in this chunk.
                if pendingCount > maxNALUnitSize && pendingCount - trailingZeros(Self.maxKeptZeros) > maxNALUnitSize {
                    // Too big to be real: drop it and look for the next start code.
                    oversizedNALUnits += 1
                    if pendingBodyCount > 0 { dropped(pendingHead()) }
                    let zeros = trailingZeros(Self.maxKeptZeros)
                    skippedBytes += pendingCount - zeros
                    keepZeros(zeros)
                    inSync = false
                    headerIndex = 0
                    pendingBodyCount = 0
                }
            } else {
                var zeros = 0
                while zeros < Self.maxKeptZeros && zeros < end - nalStart
                    && (end - 1 - zeros >= P ? base[end - 1 - zeros - P] : pendingByte(end - 1 - zeros)) == 0 { zeros += 1 }
                skippedBytes += end - nalStart - zeros
                keepZeros(zeros)
                headerIndex = 0
            }
        }
    }

    /// The next `01` from `from` on that may end a start code: at 0 or 1 any `01` (its zeros
    /// may be kept from the chunk before), further on one behind two zeros of this chunk
    /// (`StartCodeSearch`).
    private static func candidate(_ base: UnsafePointer<UInt8>, from: Int, count: Int) -> Int? {
        var p = from
        while p < 2 && p < count {
            if base[p] == 1 { return p }
            p += 1
        }
        return StartCodeSearch.next(in: base, from: p, count: count)
    }

    /// Hands out the NAL unit still in progress at the end of the stream (with any trailing
    /// zero bytes in its `wire`, none in its payload) and resets the scanner.
    public mutating func finish() -> NALUnit? {
        defer {
            pending = []
            pendingCount = 0
            inSync = false
            headerIndex = 0
            pendingBodyCount = 0
        }
        guard inSync, headerIndex < pendingCount else {
            skippedBytes += pendingCount
            return nil
        }
        let bytes = joinedPending()
        var end = bytes.count
        while end > headerIndex + 1 && bytes[end - 1] == 0 { end -= 1 }
        return NALUnit(wire: bytes[...], headerIndex: headerIndex, payloadEnd: end)
    }

    /// The first bytes of the NAL unit in progress that are known to be its own: its header
    /// byte and what follows, up to `headLength` bytes or `pendingBodyCount`, whichever is
    /// less (empty when `pendingBodyCount` is 0). Shares the kept bytes when they lie in one
    /// piece, else a small copy. Not a NAL unit yet: more bytes may follow.
    public func pendingHead() -> ArraySlice<UInt8> {
        guard inSync, pendingBodyCount > 0 else { return [] }
        let from = headerIndex, to = headerIndex + Swift.min(pendingBodyCount, Self.headLength)
        var offset = 0
        for part in pending {
            if from >= offset && to <= offset + part.count {
                return part[(part.startIndex + from - offset)..<(part.startIndex + to - offset)]
            }
            offset += part.count
            if offset > from { break }
        }
        var out: [UInt8] = []
        out.reserveCapacity(to - from)
        offset = 0
        for part in pending {
            let lower = Swift.max(from, offset), upper = Swift.min(to, offset + part.count)
            if lower < upper { out.append(contentsOf: part[(part.startIndex + lower - offset)..<(part.startIndex + upper - offset)]) }
            offset += part.count
            if offset >= to { break }
        }
        return out[...]
    }

    /// The byte at `index` of `pending` (only used near its end: start codes split by chunks).
    private func pendingByte(_ index: Int) -> UInt8 {
        var offset = pendingCount
        for part in pending.reversed() {
            offset -= part.count
            if index >= offset { return part[part.startIndex + index - offset] }
        }
        preconditionFailure("pending index out of range")
    }

    private func trailingZeros(_ limit: Int) -> Int {
        var zeros = 0
        while zeros < limit && zeros < pendingCount && pendingByte(pendingCount - 1 - zeros) == 0 { zeros += 1 }
        return zeros
    }

    private mutating func keepZeros(_ zeros: Int) {
        pending = zeros == 0 ? [] : [[UInt8](repeating: 0, count: zeros)[...]]
        pendingCount = zeros
    }

    /// Drops the first `count` bytes of `pending`.
    private mutating func dropPendingPrefix(_ count: Int) {
        guard count > 0 else { return }
        var left = count
        while left > 0, let first = pending.first {
            if first.count <= left {
                left -= first.count
                pending.removeFirst()
            } else {
                pending[0] = first.dropFirst(left)
                left = 0
            }
        }
        pendingCount -= count
    }

    private func joinedPending() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(pendingCount)
        for part in pending { out.append(contentsOf: part) }
        return out
    }

    /// The bytes `[from, to)` (combined positions): a slice of the chunk when they lie in
    /// it, else a new buffer joining the pieces.
    ///
    /// This and the two below are static, given `pending`: called from inside `push`'s
    /// closure, a method would copy the whole scanner for each NAL unit.
    private static func bytes(from: Int, to: Int, chunk: [UInt8], P: Int, pending: [ArraySlice<UInt8>]) -> ArraySlice<UInt8> {
        if from >= P { return chunk[(from - P)..<(to - P)] }
        return joined(from: from, to: to, chunk: chunk, P: P, pending: pending)[...]
    }

    /// The bytes `[from, to)` (combined positions, `from` inside `pending`) copied into one
    /// new buffer: the pending parts they cover, then the chunk's head when they reach into
    /// it. Only for bytes that straddle pieces; callers slice a single piece instead.
    private static func joined(from: Int, to: Int, chunk: [UInt8], P: Int, pending: [ArraySlice<UInt8>]) -> [UInt8] {
        var joined: [UInt8] = []
        joined.reserveCapacity(to - from)
        var offset = 0
        for part in pending {
            let lower = Swift.max(from, offset), upper = Swift.min(to, offset + part.count)
            if lower < upper { joined.append(contentsOf: part[(part.startIndex + lower - offset)..<(part.startIndex + upper - offset)]) }
            offset += part.count
        }
        if to > P { joined.append(contentsOf: chunk[0..<(to - P)]) }
        return joined
    }

    /// The bytes `[from, to)` (combined positions) as a NAL unit: a slice of the chunk or of
    /// one pending part when it lies in one of them, else a new buffer joining the pieces.
    private static func nalUnit(from: Int, to: Int, header: Int, chunk: [UInt8], P: Int, pending: [ArraySlice<UInt8>]) -> NALUnit {
        if from >= P {
            return NALUnit(wire: chunk[(from - P)..<(to - P)], headerIndex: header - P, payloadEnd: to - P)
        }
        if pending.count == 1 && to <= P {
            let part = pending[0]
            let base = part.startIndex
            return NALUnit(wire: part[(base + from)..<(base + to)], headerIndex: base + header, payloadEnd: base + to)
        }
        let wire = joined(from: from, to: to, chunk: chunk, P: P, pending: pending)
        return NALUnit(wire: wire[...], headerIndex: header - from, payloadEnd: wire.count)
    }
}
