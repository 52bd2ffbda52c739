/// Emulation prevention (H.264 7.4.1): inside a NAL unit, any `00 00 0x` with x <= 3 is
/// written as `00 00 03 0x`, so `00 00 01` can only ever be a start code.
public enum RBSP {
    /// Removes emulation prevention bytes: `00 00 03` becomes `00 00`.
    /// Stops after `limit` output bytes (slice headers need only the first few dozen).
    public static func unescape(_ escaped: ArraySlice<UInt8>, limit: Int = .max) -> [UInt8] {
        escaped.withUnsafeBufferPointer { unescape($0, limit: limit) }
    }

    public static func unescape(_ escaped: [UInt8], limit: Int = .max) -> [UInt8] {
        escaped.withUnsafeBufferPointer { unescape($0, limit: limit) }
    }

    /// The first `limit` bytes of the RBSP: the escaped bytes themselves (no copy) when they
    /// hold no emulation prevention byte, else an unescaped copy. (Read for every slice: most
    /// have no two zeros in a row in their first bytes, which the pair search of
    /// `StartCodeSearch` tells 16 bytes at a time; only the others are looked at byte by byte.)
    public static func unescapedPrefix(_ escaped: ArraySlice<UInt8>, limit: Int) -> ArraySlice<UInt8> {
        let prefix = escaped.prefix(limit)
        let clean = prefix.withUnsafeBufferPointer { buf -> Bool in
            guard let base = buf.baseAddress, StartCodeSearch.hasZeroPair(base, count: buf.count) else { return true }
            var zeros = 0
            for byte in buf {
                if zeros >= 2 && byte == 3 { return false }
                zeros = byte == 0 ? zeros + 1 : 0
            }
            return true
        }
        if clean { return prefix }
        return unescape(escaped, limit: limit)[...]
    }

    static func unescape(_ input: UnsafeBufferPointer<UInt8>, limit: Int) -> [UInt8] {
        let capacity = Swift.min(input.count, limit)
        return [UInt8](unsafeUninitializedCapacity: capacity) { out, count in
            var zeros = 0
            var n = 0
            for byte in input {
                if n >= capacity { break }
                if zeros >= 2 && byte == 3 {
                    zeros = 0
                    continue
                }
                out[n] = byte
                n += 1
                zeros = byte == 0 ? zeros + 1 : 0
            }
            count = n
        }
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
