import EventLoop
import Glibc

/// A blocking client socket for the test thread, with a receive timeout so a broken server
/// fails the test instead of hanging it.
func blockingClient(to endpoint: Endpoint) throws -> Socket {
    let address = try SocketAddress.resolve(endpoint)[0]
    let socket = try Socket(family: address.family)
    try socket.setBlocking(true)
    var timeout = timeval(tv_sec: 20, tv_usec: 0)
    setsockopt(socket.fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    _ = try socket.connect(to: address)
    return socket
}

func writeAll(_ socket: Socket, _ bytes: [UInt8]) throws {
    var offset = 0
    while offset < bytes.count {
        let n = try bytes[offset...].withUnsafeBytes { try socket.write($0) } ?? 0
        offset += n
    }
}

/// Reads until end of stream (or a reset after data, as for a server that closes with unread input).
func readToEnd(_ socket: Socket) -> [UInt8] {
    var out: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 64 << 10)
    while true {
        // nil: an error, or the receive timeout (reported as would block).
        let n: Int?? = try? buffer.withUnsafeMutableBytes { try socket.read(into: $0) }
        guard let n, let count = n, count > 0 else { return out }
        out += buffer[0..<count]
    }
}
