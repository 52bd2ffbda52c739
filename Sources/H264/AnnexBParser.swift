/// `AnnexBScanner` and `AccessUnitAssembler` in one: bytes in, access units out.
/// `decode(chunk)` may return nothing (more bytes needed) or several access units.
public struct AnnexBParser {
    public private(set) var scanner: AnnexBScanner
    public private(set) var assembler = AccessUnitAssembler()
    /// NAL units seen, by type.
    public var nalUnitsByType: [NALType: Int] {
        var out: [NALType: Int] = [:]
        for (type, count) in counts.enumerated() where count > 0 { out[NALType(rawValue: UInt8(type))] = count }
        return out
    }
    private var counts = [Int](repeating: 0, count: 32)

    public init(maxNALUnitSize: Int = AnnexBScanner.defaultMaxNALUnitSize) {
        scanner = AnnexBScanner(maxNALUnitSize: maxNALUnitSize)
    }

    /// Pushes bytes; `emit` gets each access unit they completed.
    public mutating func push(_ chunk: [UInt8], emit: (AccessUnit) -> Void) {
        // The scanner is moved out while it calls back into `add`, which changes the rest.
        var scanning = AnnexBScanner(maxNALUnitSize: scanner.maxNALUnitSize)
        swap(&scanning, &scanner)
        scanning.push(chunk) { add($0, emit: emit) }
        swap(&scanning, &scanner)
    }

    public mutating func push(_ chunk: [UInt8]) -> [AccessUnit] {
        var out: [AccessUnit] = []
        push(chunk) { out.append($0) }
        return out
    }

    /// Ends the stream: the last NAL unit and the last access unit come out.
    public mutating func finish(emit: (AccessUnit) -> Void) {
        if let nal = scanner.finish() { add(nal, emit: emit) }
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
    }

    private mutating func add(_ nal: NALUnit, emit: (AccessUnit) -> Void) {
        counts[Int(nal.type.rawValue)] += 1
        if let unit = assembler.push(nal) { emit(unit) }
    }
}
