/// An RTSP message as it comes off the connection (RFC 2326 §6, §7): a response to one of our
/// requests, or a request of the server's (some send GET_PARAMETER or ANNOUNCE), with its
/// headers and body.
public struct RTSPMessage: Sendable {
    /// The first line: `RTSP/1.0 200 OK`, or `METHOD URL RTSP/1.0`.
    public let startLine: String
    /// Headers in order, names as sent.
    public let headers: [(name: String, value: String)]
    public let body: [UInt8]

    /// The status code of a response; nil for a request.
    public var status: Int? {
        let parts = startLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("RTSP/") else { return nil }
        return Int(parts[1])
    }

    /// The reason phrase of a response (`Not Found`).
    public var reason: String {
        let parts = startLine.split(separator: " ", maxSplits: 2)
        return parts.count == 3 ? String(parts[2]) : ""
    }

    /// The first header of that name (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// Every header of that name, in order (a server may offer several authentication schemes).
    public func headers(_ name: String) -> [String] {
        headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }
}

/// The bytes of an RTSP connection cut into what they carry: messages and, between them,
/// interleaved binary frames (`$`, channel, 16-bit length: RTP and RTCP over TCP, RFC 2326
/// §10.12). Feed it what was read; take items until it has none whole.
public struct RTSPStreamParser: Sendable {
    public enum Item: Sendable {
        case message(RTSPMessage)
        case interleaved(channel: UInt8, bytes: [UInt8])
    }

    public struct ParseError: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// Headers longer than this are not RTSP.
    static let maxHeaderBytes = 64 << 10

    private var buffer: [UInt8] = []
    private var start = 0

    public init() {}

    public var bufferedBytes: Int { buffer.count - start }

    public mutating func feed(_ bytes: UnsafeRawBufferPointer) {
        if start > 0 && start >= buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole item, nil when more bytes are needed.
    public mutating func next() throws(ParseError) -> Item? {
        guard start < buffer.count else { return nil }
        if buffer[start] == 0x24 {
            guard buffer.count - start >= 4 else { return nil }
            let length = Int(buffer[start + 2]) << 8 | Int(buffer[start + 3])
            guard buffer.count - start >= 4 + length else { return nil }
            let item = Item.interleaved(channel: buffer[start + 1], bytes: Array(buffer[(start + 4)..<(start + 4 + length)]))
            start += 4 + length
            return item
        }
        guard let headerEnd = findHeaderEnd() else {
            if buffer.count - start > Self.maxHeaderBytes { throw ParseError(description: "no end of headers in \(Self.maxHeaderBytes) bytes") }
            return nil
        }
        let text = String(decoding: buffer[start..<headerEnd], as: UTF8.self)
        var lines = text.split(omittingEmptySubsequences: true) { $0 == "\r\n" || $0 == "\n" }.map(String.init)
        guard !lines.isEmpty else { throw ParseError(description: "an empty message") }
        let startLine = lines.removeFirst()
        guard startLine.hasPrefix("RTSP/") || startLine.hasSuffix("RTSP/1.0") else {
            throw ParseError(description: "not RTSP: \"\(startLine.prefix(60))\"")
        }
        let headers: [(name: String, value: String)] = lines.compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (line[..<colon].strippingSpaces(), line[line.index(after: colon)...].strippingSpaces())
        }
        let bodyLength = headers.first { $0.name.lowercased() == "content-length" }.flatMap { Int($0.value) } ?? 0
        let bodyStart = headerEnd + 4
        guard bodyLength >= 0, buffer.count - bodyStart >= bodyLength else { return nil }
        let body = Array(buffer[bodyStart..<(bodyStart + bodyLength)])
        start = bodyStart + bodyLength
        return .message(RTSPMessage(startLine: startLine, headers: headers, body: body))
    }

    /// Where `\r\n\r\n` begins, from `start`.
    private func findHeaderEnd() -> Int? {
        var i = start
        while i + 3 < buffer.count {
            if buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 { return i }
            i += 1
        }
        return nil
    }
}
