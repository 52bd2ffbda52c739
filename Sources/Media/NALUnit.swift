/// One NAL unit of an Annex-B byte stream (H.264 and H.265 frame their NAL units alike),
/// as it travelled on the wire, sharing (not copying) the bytes it
/// was cut from. What its header means is the codec's (`VideoCodec`).
///
/// `wire` holds everything from the first zero byte of the start code up to the next start
/// code: leading zero bytes, `00 00 01`, the header, the payload, and any trailing zero bytes
/// at the end of a stream. Concatenating the `wire` of every NAL unit gives back the stream
/// byte for byte (less anything skipped before the first start code).
public struct NALUnit: Sendable {
    /// The bytes as received, start code included.
    public let wire: ArraySlice<UInt8>
    /// Index into `wire` of the NAL header byte (just past the start code).
    public let headerIndex: Int
    /// Index into `wire` one past the last payload byte (trailing zero bytes excluded).
    public let payloadEnd: Int

    /// Wraps bytes known to start with a start code (`00 00 01`, after any number of zeros).
    /// Returns nil when there is no start code or no header byte after it.
    public init?(wire: ArraySlice<UInt8>) {
        var i = wire.startIndex
        while i < wire.endIndex && wire[i] == 0 { i += 1 }
        guard i < wire.endIndex, wire[i] == 1, i - wire.startIndex >= 2, i + 1 < wire.endIndex else { return nil }
        var end = wire.endIndex
        while end > i + 2 && wire[end - 1] == 0 { end -= 1 }
        self.init(wire: wire, headerIndex: i + 1, payloadEnd: end)
    }

    /// Wraps bytes whose layout the caller already knows (the scanner does).
    public init(wire: ArraySlice<UInt8>, headerIndex: Int, payloadEnd: Int) {
        precondition(headerIndex < payloadEnd && payloadEnd <= wire.endIndex && headerIndex >= wire.startIndex + 3)
        self.wire = wire
        self.headerIndex = headerIndex
        self.payloadEnd = payloadEnd
    }

    /// Builds a NAL unit from its header and escaped payload, with a 4-byte start code.
    public init(escapedBody body: some Collection<UInt8>) {
        var bytes: [UInt8] = [0, 0, 0, 1]
        bytes.append(contentsOf: body)
        self.init(wire: bytes[...], headerIndex: 4, payloadEnd: bytes.count)
    }

    /// The same NAL unit in storage of its own: for one kept long after the bytes around it
    /// are gone (a parameter set), so that it does not keep alive the buffer it was cut from.
    public func detached() -> NALUnit {
        let bytes = Array(wire)
        let base = wire.startIndex
        return NALUnit(wire: bytes[...], headerIndex: headerIndex - base, payloadEnd: payloadEnd - base)
    }

    /// Header and payload, still escaped (emulation prevention bytes in place).
    public var body: ArraySlice<UInt8> { wire[headerIndex..<payloadEnd] }
}
