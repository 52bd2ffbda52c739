#if canImport(Glibc)
import Glibc
#endif

/// The libFuzzer entry point. One binary holds every target (the module is compiled once);
/// `NALCAST_FUZZ_TARGET` picks which one runs: annexb, paramsets, sei, y4m, websocket, http,
/// handshake, demux.
///
/// A target must not trap on any input: a trap, an out-of-bounds access (ASan) or a leak is a
/// finding. Thrown errors and nil results are the expected answer to bad bytes.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size))
    switch FuzzTarget.selected {
    case .annexb: fuzzAnnexB(bytes)
    case .paramsets: fuzzParameterSets(bytes)
    case .sei: fuzzSEI(bytes)
    case .y4m: fuzzY4M(bytes)
    case .websocket: fuzzWebSocket(bytes)
    case .http: fuzzHTTP(bytes)
    case .handshake: fuzzHandshake(bytes)
    case .demux: fuzzDemux(bytes)
    }
    return 0
}

enum FuzzTarget: String, CaseIterable {
    case annexb, paramsets, sei, y4m, websocket, http, handshake, demux

    static let selected: FuzzTarget = {
        guard let name = getenv("NALCAST_FUZZ_TARGET").map({ String(cString: $0) }), let target = FuzzTarget(rawValue: name) else {
            let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
            let message = Array("set NALCAST_FUZZ_TARGET to one of: \(names)\n".utf8)
            _ = message.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
            exit(2)
        }
        return target
    }()
}
