/// AnnexBScanner + AccessUnitAssembler (through AnnexBParser), fed the input in chunks whose
/// sizes come from the input's first byte, with a small NAL size limit to reach the
/// oversize path. Checks what can be checked without a reference: every byte the scanner
/// keeps belongs to the input, and chunking does not change the result.
func fuzzAnnexB(_ bytes: [UInt8]) {
    guard let first = bytes.first else { return }
    let body = Array(bytes.dropFirst())
    let chunk = Int(first & 0x3f) + 1
    let limit = first & 0x40 != 0 ? 256 : AnnexBScanner.defaultMaxNALUnitSize

    var whole = AnnexBParser(maxNALUnitSize: limit)
    var unitsWhole = whole.push(body)
    unitsWhole += whole.finish()

    var pieces = AnnexBParser(maxNALUnitSize: limit)
    var unitsPieces: [AccessUnit] = []
    var offset = 0
    var out = 0
    while offset < body.count {
        let end = min(body.count, offset + chunk)
        let units = pieces.push(Array(body[offset..<end]))
        unitsPieces += units
        offset = end
        // Every byte is out, in progress (the access unit still arriving), skipped, or in an
        // access unit with nothing but delimiters (a delimited stream's tail: not handed out).
        out += units.reduce(0) { $0 + $1.byteCount }
        precondition(out + pieces.bytesInProgress + pieces.scanner.skippedBytes + pieces.assembler.delimiterOnlyBytes == offset,
                     "bytes unaccounted for")
    }
    unitsPieces += pieces.finish()

    // The same access units whatever the chunking. Known exception, not checked: when a NAL
    // unit near the size limit is followed by a run of zeros longer than a start code, how
    // much of the run counts against the limit depends on where reads end (the scanner does
    // not keep unbounded zero runs), so one chunking may drop it as oversized and another
    // not. See docs/reliability.md.
    if whole.scanner.oversizedNALUnits > 0 || pieces.scanner.oversizedNALUnits > 0 { return }
    precondition(unitsWhole.count == unitsPieces.count, "chunking changed the access-unit count")
    for (a, b) in zip(unitsWhole, unitsPieces) {
        precondition(a.nalUnits.count == b.nalUnits.count, "chunking changed an access unit")
        precondition(a.isIDR == b.isIDR)
        // Bodies, not wires: how many zeros of a long zero run lead the next NAL unit may
        // differ after a resync, and those zeros are not part of any NAL unit.
        for (x, y) in zip(a.nalUnits, b.nalUnits) { precondition(x.body == y.body, "chunking changed a NAL unit") }
    }
    // Touch everything an access unit offers, the way inspect and the sinks do.
    var total = 0
    for unit in unitsWhole {
        total += unit.byteCount
        _ = unit.nalUnitsForEntry
        _ = unit.resolution
        _ = unit.timestamp
        for nal in unit.nalUnits {
            _ = nal.rbsp(limit: 64)
            _ = nal.rbspPrefix(32)
        }
    }
    precondition(total <= body.count, "access units hold more bytes than came in")
}
