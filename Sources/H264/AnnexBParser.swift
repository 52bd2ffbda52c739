import Media

/// `AnnexBScanner` and `AccessUnitAssembler` in one: bytes in, access units out.
/// `decode(chunk)` may return nothing (more bytes needed) or several access units.
///
/// An access unit comes out as soon as it is known to be complete: when the first NAL unit
/// of the next one has arrived far enough to tell, not when that NAL unit ends. After each
/// chunk the parser looks at the first bytes of the NAL unit in progress (`pendingHead`):
/// its header settles it for an AUD, SPS, PPS, SEI or types 14 to 18; for a slice, the
/// start of its slice header does, once it has arrived. The answer is taken once per NAL
/// unit, and the NAL unit joins the assembler unasked when it ends. A NAL unit dropped for
/// its size still settles the boundary from its first bytes, so that every chunking gives
/// the same access units.
///
/// So a stream that stops (a connection that fails) loses only the access unit that was
/// still arriving; every one before it has come out already.
public struct AnnexBParser: AccessUnitParser {
    public private(set) var scanner: AnnexBScanner
    public private(set) var assembler = AccessUnitAssembler()
    /// NAL units seen, by type.
    public var nalUnitsByType: [NALType: Int] {
        var out: [NALType: Int] = [:]
        for (type, count) in counts.enumerated() where count > 0 { out[NALType(rawValue: UInt8(type))] = count }
        return out
    }
    private var counts = [Int](repeating: 0, count: 32)
    /// True once the scanner's NAL unit in progress was looked at and settled whether it
    /// begins a new access unit (and the one before came out if it did).
    private var headSettled = false
    /// `scanner.pendingBodyCount` when the NAL unit in progress was last looked at: it is
    /// looked at again only when it has grown.
    private var headBytesSeen = 0

    public init(maxNALUnitSize: Int = AnnexBScanner.defaultMaxNALUnitSize) {
        scanner = AnnexBScanner(maxNALUnitSize: maxNALUnitSize)
    }

    /// Bytes of the access unit in progress, not known to be complete: the NAL units the
    /// assembler holds and the bytes the scanner keeps. What a stream that stops here loses.
    public var bytesInProgress: Int { assembler.bytesInHand + scanner.pendingBytes }

    /// True once an access unit has begun that is not out yet: a NAL unit of it is in the
    /// assembler, or a NAL header has arrived. A few zeros or a bare start code are nothing yet,
    /// and neither is an AUD (or end of sequence) alone, nor the header byte after it: a
    /// delimited stream sends the next access unit's AUD and the first byte of its SEI behind
    /// each picture (`AccessUnitDelimiting`), and a stream that stops there has lost nothing.
    public var hasAccessUnitInProgress: Bool {
        if assembler.hasContentInHand { return true }
        let head = scanner.pendingHead()
        guard let first = head.first else { return false }
        if AccessUnitAssembler.isDelimiting(NALHeader(first).type) { return false }
        // The trailer's last byte: the header of the SEI after the AUD, its body to come.
        return !(head.count == 1 && assembler.nalUnitsInHand > 0)
    }

    /// Pushes bytes; `emit` gets each access unit they completed.
    public mutating func push(_ chunk: [UInt8], emit: (AccessUnit) -> Void) {
        // The scanner is moved out while it calls back into `add`, which changes the rest.
        var scanning = AnnexBScanner(maxNALUnitSize: scanner.maxNALUnitSize)
        swap(&scanning, &scanner)
        scanning.push(chunk, emit: { add($0, emit: emit) }, dropped: { settle(head: $0, isWhole: true, emit: emit) })
        swap(&scanning, &scanner)
        lookAtPending(emit: emit)
    }

    public var frameRate: Double? { assembler.activeSPS?.frameRate }
    public var endedStream: Bool { assembler.endedStream }
    public var skippedBytes: Int { scanner.skippedBytes }

    public mutating func push(_ chunk: [UInt8]) -> [AccessUnit] {
        var out: [AccessUnit] = []
        push(chunk) { out.append($0) }
        return out
    }

    /// Ends the stream: the last NAL unit and the last access unit come out.
    public mutating func finish(emit: (AccessUnit) -> Void) {
        if let nal = scanner.finish() { add(nal, emit: emit) }
        headSettled = false
        headBytesSeen = 0
        if let unit = assembler.finish() { emit(unit) }
    }

    public mutating func finish() -> [AccessUnit] {
        var out: [AccessUnit] = []
        finish { out.append($0) }
        return out
    }

    /// Starts over for a new connection: the NAL unit and access unit in progress and the
    /// parameter sets seen are forgotten; the counters are kept.
    public mutating func reset() {
        scanner = AnnexBScanner(maxNALUnitSize: scanner.maxNALUnitSize)
        assembler = AccessUnitAssembler()
        headSettled = false
        headBytesSeen = 0
    }

    /// A NAL unit ended: it is the one that was in progress, settled or not.
    private mutating func add(_ nal: NALUnit, emit: (AccessUnit) -> Void) {
        counts[Int(nal.type.rawValue)] += 1
        if headSettled {
            assembler.append(nal)
        } else if let unit = assembler.push(nal) {
            emit(unit)
        }
        headSettled = false
        headBytesSeen = 0
    }

    /// Settles from its first bytes whether the NAL unit in progress (or one just dropped)
    /// begins a new access unit, unless that was done already. False while it cannot tell.
    @discardableResult
    private mutating func settle(head: ArraySlice<UInt8>, isWhole: Bool, emit: (AccessUnit) -> Void) -> Bool {
        defer {
            // A dropped NAL unit is over: the next one is looked at afresh.
            if isWhole {
                headSettled = false
                headBytesSeen = 0
            }
        }
        guard !headSettled else { return true }
        guard let begins = assembler.beginsAccessUnit(head: head, isWhole: isWhole) else { return false }
        headSettled = true
        if begins, let unit = assembler.endAccessUnit() { emit(unit) }
        return true
    }

    /// After a chunk: the NAL unit in progress, if it is new or grew and is not settled yet.
    private mutating func lookAtPending(emit: (AccessUnit) -> Void) {
        let known = scanner.pendingBodyCount
        guard !headSettled, known > 0, known != headBytesSeen else { return }
        headBytesSeen = known
        settle(head: scanner.pendingHead(), isWhole: false, emit: emit)
    }
}
