/// The Y4M stream header: any bytes up to the first newline, as `Y4MSource` reads it.
func fuzzY4M(_ bytes: [UInt8]) {
    let line = bytes.prefix { $0 != 0x0a }
    guard let header = try? Y4MHeader(line: String(decoding: line, as: UTF8.self)) else { return }
    precondition(header.width > 0 && header.height > 0, "a header without a size parsed")
    _ = header.frameByteCount
    _ = header.frameRate.nanoseconds(ofFrame: 1000)
}
