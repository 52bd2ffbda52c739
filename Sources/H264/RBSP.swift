/// Emulation prevention (H.264 7.4.1): inside a NAL unit, any `00 00 0x` with x <= 3 is
/// written as `00 00 03 0x`, so `00 00 01` can only ever be a start code.
public enum RBSP {
    /// Removes emulation prevention bytes: `00 00 03` becomes `00 00`.
    /// Stops after `limit` output bytes (slice headers need only the first few dozen).
    public static func unescape(_ escaped: some Collection<UInt8>, limit: Int = .max) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(Swift.min(escaped.count, limit))
        var zeros = 0
        for byte in escaped {
            if out.count >= limit { break }
            if zeros >= 2 && byte == 3 {
                zeros = 0
                continue
            }
            out.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        return out
    }

    /// Inserts emulation prevention bytes so that the result never contains `00 00 0x`
    /// with x <= 3. A trailing `00` gets a `03` after it as well: cabac_zero_words and the
    /// next start code must not merge with it.
    public static func escape(_ rbsp: some Collection<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(rbsp.count + rbsp.count / 64 + 1)
        var zeros = 0
        for byte in rbsp {
            if zeros >= 2 && byte <= 3 {
                out.append(3)
                zeros = 0
            }
            out.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        if let last = out.last, last == 0 { out.append(3) }
        return out
    }
}
