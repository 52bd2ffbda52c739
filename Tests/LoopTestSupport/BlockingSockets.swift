import IO
import Glibc

// Blocking client sockets for test threads that talk to a server running on an event loop
// (the EventLoop, Serving and Producer tests).

/// A blocking client socket connected to `endpoint`. With a `receiveTimeout` (seconds, 20
/// unless told) a read that waits longer fails as would-block, so that a broken server fails
/// the test instead of hanging it; `nil` waits as long as it takes. A `receiveBuffer` (bytes)
/// is set before the connection, so that the server's side fills while this one reads nothing.
public func blockingClient(to endpoint: Endpoint, receiveTimeout: Int? = 20, receiveBuffer: Int? = nil) throws -> Socket {
    let address = try SocketAddress.resolve(endpoint)[0]
    let socket = try Socket(family: address.family)
    if let receiveBuffer { try socket.setOption(level: SOL_SOCKET, name: SO_RCVBUF, value: Int32(receiveBuffer)) }
    try socket.setBlocking(true)
    if let receiveTimeout {
        var timeout = timeval(tv_sec: receiveTimeout, tv_usec: 0)
        setsockopt(socket.fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }
    _ = try socket.connect(to: address)
    return socket
}

/// Writes all of `bytes` to a blocking socket.
public func writeAll(_ socket: Socket, _ bytes: [UInt8]) throws {
    var offset = 0
    while offset < bytes.count {
        let n = try bytes[offset...].withUnsafeBytes { try socket.write($0) } ?? 0
        offset += n
    }
}

/// Reads until end of stream (or a reset after data, as for a server that closes with unread input).
public func readToEnd(_ socket: Socket) -> [UInt8] {
    var out: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 64 << 10)
    while true {
        // nil: an error, or the receive timeout (reported as would block).
        let n: Int?? = try? buffer.withUnsafeMutableBytes { try socket.read(into: $0) }
        guard let n, let count = n, count > 0 else { return out }
        out += buffer[0..<count]
    }
}
