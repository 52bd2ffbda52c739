/// The SEI message splitter and the timestamp reader, on raw RBSP and through a NAL unit
/// (emulation prevention); a timestamp that parses must encode back to the same payload (less
/// the reserved flag bits).
func fuzzSEI(_ bytes: [UInt8]) {
    for message in SEI.messages(rbsp: bytes) {
        precondition(message.payload.startIndex >= 0 && message.payload.endIndex <= bytes.count)
        if let t = StreamTimestamp(payload: message.payload) {
            // Flag bits other than bit 0 (keyframe) are reserved: the reader ignores them.
            var expected = Array(message.payload.prefix(StreamTimestamp.payloadSize))
            expected[17] &= 1
            precondition(Array(t.payload) == expected, "timestamp did not round-trip")
        }
    }
    _ = StreamTimestamp(payload: bytes)
    let nal = NALUnit(escapedBody: [0x06] + RBSP.escape(bytes))
    _ = StreamTimestamp(sei: nal)
    _ = NALUnit(wire: bytes[...])
}
