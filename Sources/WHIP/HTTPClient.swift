import Clocks
import IO
import TLS

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One HTTP/1.1 request and its response over a fresh connection (`Connection: close`), for
/// WHIP's POST and DELETE: blocking, on the calling thread (a forward's), every step bounded
/// by `timeout` (the connect, then `SO_SNDTIMEO`/`SO_RCVTIMEO` on each call, and the whole
/// exchange by a deadline). Over TLS (`tls`: https) with `TLSClient`: the system's CAs or
/// `caFile`, SNI, the host name checked. A response body is read up to its
/// `Content-Length`, or to the end of the connection; at most `maxBody` bytes.
struct HTTPClient {
    struct Response {
        let status: Int
        /// Header names lowercased.
        let headers: [(String, String)]
        let body: [UInt8]
        func header(_ name: String) -> String? { headers.first { $0.0 == name }?.1 }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let host: String
    let port: UInt16
    var timeout = 5.0
    var tls = false
    /// A private CA's PEM file for `tls`, instead of the system's CAs.
    var caFile: String?
    static let maxBody = 256 << 10

    /// `method` `path` with `headers` and `body`; throws one line when there is no response.
    func send(_ method: String, _ path: String, headers: [(String, String)], body: [UInt8] = []) throws(Failure) -> Response {
        let socket: Socket
        do {
            socket = try Connector.connect(to: .tcp(host: host, port: port), timeout: timeout)
            try socket.setBlocking(true)
        } catch {
            throw Failure(description: "connect: \(error)")
        }
        defer { socket.close() }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1e6))
        setsockopt(socket.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(socket.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        let hostHeader = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(hostHeader)\r\nUser-Agent: nalcast\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "Content-Length: \(body.count)\r\n\r\n"
        var secure: TLSClient?
        if tls {
            do { secure = try TLSClient(fd: socket.fd, host: host, caFile: caFile) } catch { throw Failure(description: error.description) }
        }
        defer { secure?.close() }
        try write(socket, secure, Array(head.utf8) + body)
        return try read(socket, secure, deadline: MonotonicClock.seconds + timeout)
    }

    private func write(_ socket: Socket, _ secure: TLSClient?, _ bytes: [UInt8]) throws(Failure) {
        if let secure {
            guard secure.write(bytes) else { throw Failure(description: "TLS: the request could not be sent") }
            return
        }
        var sent = 0
        while sent < bytes.count {
            let n: Int?
            do { n = try bytes[sent...].withUnsafeBytes { try socket.write($0) } } catch { throw Failure(description: "\(error)") }
            guard let n else { throw Failure(description: "the request could not be sent within \(Int(timeout)) s") }
            sent += n
        }
    }

    private func read(_ socket: Socket, _ secure: TLSClient?, deadline: Double) throws(Failure) -> Response {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        var parsed: (status: Int, headers: [(String, String)], bodyStart: Int)?
        while MonotonicClock.seconds < deadline {
            let n = try receive(socket, secure, into: &buffer)
            data += buffer[0..<n]
            if parsed == nil { parsed = try Self.head(data) }
            if let (status, headers, start) = parsed {
                let length = headers.first { $0.0 == "content-length" }.flatMap { Int($0.1) }
                if n == 0 || (length != nil && data.count - start >= length!) || data.count - start > Self.maxBody {
                    let end = min(data.count, start + min(length ?? Self.maxBody, Self.maxBody))
                    return Response(status: status, headers: headers, body: Array(data[start..<end]))
                }
            }
            if n == 0 { throw Failure(description: "the server closed the connection before its response's head") }
        }
        throw Failure(description: "no whole response within \(Int(timeout)) s")
    }

    /// The bytes read into `buffer` (0 at the end of the connection), within the socket's
    /// receive timeout.
    private func receive(_ socket: Socket, _ secure: TLSClient?, into buffer: inout [UInt8]) throws(Failure) -> Int {
        if let secure {
            let n = secure.read(into: &buffer)
            guard n >= 0 else { throw Failure(description: "TLS: no whole response within \(Int(timeout)) s") }
            return n
        }
        let n: Int?
        do { n = try buffer.withUnsafeMutableBytes { try socket.read(into: $0) } } catch { throw Failure(description: "\(error)") }
        guard let n else { throw Failure(description: "no response within \(Int(timeout)) s") }
        return n
    }

    /// The status and headers once the head is whole (nil before).
    static func head(_ data: [UInt8]) throws(Failure) -> (Int, [(String, String)], Int)? {
        let end: [UInt8] = [13, 10, 13, 10]
        guard data.count >= 4, let at = (0...(data.count - 4)).first(where: { data[$0..<($0 + 4)].elementsEqual(end) }) else {
            if data.count > 64 << 10 { throw Failure(description: "a response head over 64 kB") }
            return nil
        }
        let lines = String(decoding: data[0..<at], as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
        let status = lines.first.flatMap { $0.split(separator: " ").dropFirst().first }.flatMap { Int($0) }
        guard let first = lines.first, first.hasPrefix("HTTP/1."), let status else {
            throw Failure(description: "not an HTTP response: \(String(lines.first ?? "").prefix(60))")
        }
        let headers = lines.dropFirst().compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (line[..<colon].lowercased(), trimmed(line[line.index(after: colon)...]))
        }
        return (status, headers, at + 4)
    }

    /// A header's value without the spaces and tabs around it.
    private static func trimmed(_ value: Substring) -> String {
        var s = value
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return String(s)
    }
}
