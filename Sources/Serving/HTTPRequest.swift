/// One HTTP/1.x request: the request line, the header fields and (for `.respond` routes) the body.
public struct HTTPRequest: Sendable {
    public let method: String
    /// The request target as sent (`/bitrate?4M`).
    public let target: String
    /// The target up to `?`.
    public let path: String
    /// The target after `?`, if any (without its `token=` once `removingToken()` took it).
    public internal(set) var query: String?
    public let version: String
    /// Header fields in order, names lowercased.
    public let headers: [(name: String, value: String)]
    public var body: [UInt8] = []

    /// The first value of header `name` (any case).
    public func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.first { $0.name == lower }?.value
    }

    /// The media type of its Content-Type, lowercased, without parameters or blanks
    /// (`Application/SDP; charset=x`: `application/sdp`); nil without one.
    public var mediaType: String? {
        header("content-type")?.split(separator: ";").first.map { String($0.filter { $0 != " " && $0 != "\t" }).lowercased() }
    }

    /// Parses a head (request line and header fields, up to the blank line); nil when malformed.
    public init?(head: ArraySlice<UInt8>) {
        var lines = head.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            .map { String(decoding: $0, as: UTF8.self).trimmingCarriageReturn }
        while lines.last?.isEmpty == true { lines.removeLast() }
        guard let first = lines.first else { return nil }
        let parts = first.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1.") else { return nil }
        method = parts[0]
        target = parts[1]
        version = parts[2]
        let split = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        path = String(split[0])
        query = split.count > 1 ? String(split[1]) : nil
        var fields: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else { return nil }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingSpaces
            fields.append((name, value))
        }
        headers = fields
    }

    /// The length of the body the head announces, within `maxBody`; else the status to
    /// answer: 411 for `Transfer-Encoding` (chunked bodies are not read), 400 for a
    /// `Content-Length` that is no number, 413 for one past `maxBody`.
    public func bodyLength(maxBody: Int) -> Result<Int, HTTPStatus> {
        if header("transfer-encoding") != nil { return .failure(HTTPStatus(411)) }
        guard let length = Int(header("content-length") ?? "0"), length >= 0 else { return .failure(HTTPStatus(400)) }
        guard length <= maxBody else { return .failure(HTTPStatus(413)) }
        return .success(length)
    }
}

/// A status a request is answered with instead of its route's response.
public struct HTTPStatus: Error, Sendable, Equatable {
    public let code: Int
    public init(_ code: Int) { self.code = code }
}

/// Collects one request from a connection's bytes as they arrive, in any chunking: the head
/// up to its blank line (`\r\n\r\n`, or `\n\n`), bounded by `headerLimit`; then, once the
/// caller has looked the head's route up and called `expectBody(maxBody:)`, the body of its
/// `Content-Length`. Pure (no socket): `HTTPServer`'s connections use it, and the `http` fuzz
/// target drives it alone. The head is scanned once, however it is cut, so a client sending
/// a byte at a time costs no more than one sending it whole.
public struct HTTPRequestReader {
    public enum Step {
        /// Nothing to do until more bytes come.
        case more
        /// Answer with this status and close (431 head too large, 400 malformed head; from
        /// `expectBody`, 411, 400 or 413).
        case refuse(HTTPStatus)
        /// The head is complete: route it, then `expectBody` or take the connection over
        /// (`bytesAfterHead`).
        case head(HTTPRequest)
        /// Head and body are complete.
        case complete(HTTPRequest)
    }

    public let headerLimit: Int
    private var buffer: [UInt8] = []
    /// Bytes of `buffer` looked at for the end of the head, and newlines in a row at their
    /// end (a `\r` does not break the row).
    private var scanned = 0
    private var newlines = 0
    private var head: (request: HTTPRequest, end: Int)?
    private var bodyLength: Int?
    /// A refusal or a complete request was handed out: later bytes are ignored.
    public private(set) var isFinished = false

    public init(headerLimit: Int) { self.headerLimit = headerLimit }

    /// The bytes after the head read so far (for a route that takes the connection over).
    public var bytesAfterHead: [UInt8] { head.map { Array(buffer[$0.end...]) } ?? [] }

    /// Takes the next bytes of the connection.
    public mutating func push<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Step {
        guard !isFinished else { return .more }
        buffer.append(contentsOf: bytes)
        guard head == nil else { return bodyStep() }
        // A head may take `headerLimit` bytes and its blank line (4 more): once that many
        // have come without the end, it is too large however the rest is cut.
        guard let end = scanForEndOfHead() else {
            return buffer.count >= headerLimit + 4 ? finish(.refuse(HTTPStatus(431))) : .more
        }
        guard end <= headerLimit + 4 else { return finish(.refuse(HTTPStatus(431))) }
        guard let request = HTTPRequest(head: buffer[..<end]) else { return finish(.refuse(HTTPStatus(400))) }
        head = (request, end)
        return .head(request)
    }

    /// After `.head`: read the body the head announces, up to `maxBody` bytes (0: none).
    public mutating func expectBody(maxBody: Int) -> Step {
        guard let head, bodyLength == nil, !isFinished else { return .more }
        switch head.request.bodyLength(maxBody: maxBody) {
        case .failure(let status): return finish(.refuse(status))
        case .success(let length):
            bodyLength = length
            return bodyStep()
        }
    }

    private mutating func bodyStep() -> Step {
        guard let head, let bodyLength, buffer.count - head.end >= bodyLength else { return .more }
        var complete = head.request
        complete.body = Array(buffer[head.end..<(head.end + bodyLength)])
        return finish(.complete(complete))
    }

    private mutating func finish(_ step: Step) -> Step {
        isFinished = true
        return step
    }

    /// The index just past the blank line ending the head, looking only at the bytes not
    /// looked at before.
    private mutating func scanForEndOfHead() -> Int? {
        while scanned < buffer.count {
            let byte = buffer[scanned]
            scanned += 1
            if byte == UInt8(ascii: "\n") {
                newlines += 1
                if newlines == 2 { return scanned }
            } else if byte != UInt8(ascii: "\r") {
                newlines = 0
            }
        }
        return nil
    }
}

/// One complete HTTP/1.1 response with `Connection: close`.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var contentType: String
    public var body: String
    /// Extra header fields (`Allow`).
    public var headers: [(String, String)] = []

    /// A response; without a body, the reason phrase in lower case (`not found`).
    public init(status: Int, contentType: String = "text/plain; charset=utf-8", body: String? = nil) {
        self.status = status
        self.contentType = contentType
        self.body = body ?? "\(HTTPResponse.reason(status).lowercased())\n"
    }

    public static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 415: "Unsupported Media Type"
        case 426: "Upgrade Required"
        case 431: "Request Header Fields Too Large"
        case 503: "Service Unavailable"
        default: "Error"
        }
    }

    public var bytes: [UInt8] {
        let body = Array(self.body.utf8)
        var head = "HTTP/1.1 \(status) \(HTTPResponse.reason(status))\r\n"
        // A 204 has neither body nor its length (RFC 9110 §8.6).
        if status != 204 {
            head += "Content-Type: \(contentType)\r\n"
            head += "Content-Length: \(body.count)\r\n"
        }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "Connection: close\r\n\r\n"
        return Array(head.utf8) + (status == 204 ? [] : body)
    }
}

extension String {
    fileprivate var trimmingCarriageReturn: String {
        hasSuffix("\r") ? String(dropLast()) : self
    }
}

extension Substring {
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
