/// HTTPRequestReader (how `HTTPServer` collects a request: `--metrics`, `--web`), fed the
/// input at once and in chunks. The first byte chooses: bits 0–3 the chunk size (1–16),
/// bits 4–5 the header limit (64, 256, 1024 or 8192 bytes), bits 6–7 the route's body limit
/// (0, 16, 64 or 1024 bytes). Checks: no trap; the same outcome in both chunkings (status,
/// or request and body, or bytes after the head); a request's fields as the parser promises
/// (three request-line words, lowercase header names, path and query making the target);
/// a parsed head written out again parses to the same request; every refusal a response
/// that says its status and the length of its body.
func fuzzHTTP(_ bytes: [UInt8]) {
    guard let first = bytes.first else { return }
    let body = Array(bytes.dropFirst())
    let chunk = Int(first & 0x0f) + 1
    let headerLimit = [64, 256, 1024, 8192][Int(first >> 4) & 3]
    let maxBody = [0, 16, 64, 1024][Int(first >> 6)]

    let whole = HTTPOutcome(body, chunk: body.count + 1, headerLimit: headerLimit, maxBody: maxBody)
    let pieces = HTTPOutcome(body, chunk: chunk, headerLimit: headerLimit, maxBody: maxBody)
    precondition(whole == pieces, "chunking changed the outcome: \(whole) vs \(pieces)")
    if case .refused(let code) = whole { checkResponse(HTTPResponse(status: code).bytes, status: code) }
}

/// What became of one input: a refusal, a request (its fields written out, and its body),
/// a head whose body has not all come (with the bytes after it), or nothing yet.
enum HTTPOutcome: Equatable {
    case refused(Int)
    case request(String, [UInt8])
    case head(String, [UInt8])
    case waiting

    init(_ bytes: [UInt8], chunk: Int, headerLimit: Int, maxBody: Int) {
        var reader = HTTPRequestReader(headerLimit: headerLimit)
        var offset = 0
        var seenHead: HTTPRequest?
        self = .waiting
        while offset < bytes.count {
            let end = min(bytes.count, offset + chunk)
            var step = reader.push(bytes[offset..<end])
            offset = end
            if case .head(let request) = step {
                precondition(seenHead == nil, "a second head")
                seenHead = request
                checkRequest(request)
                step = reader.expectBody(maxBody: maxBody)
            }
            switch step {
            case .more: continue
            case .head: preconditionFailure("a head from expectBody")
            case .refuse(let status):
                precondition([400, 411, 413, 431].contains(status.code), "unexpected status \(status.code)")
                precondition(seenHead == nil || status.code != 431, "431 after the head")
                self = .refused(status.code)
            case .complete(let request):
                precondition(seenHead != nil && request.body.count <= maxBody, "a body without a head or past the limit")
                self = .request(describe(request), request.body)
            }
            precondition(reader.isFinished)
            if case .more = reader.push([0x0a, 0x0a]) {} else { preconditionFailure("bytes after the end were read") }
            return
        }
        if let seenHead { self = .head(describe(seenHead), reader.bytesAfterHead) }
    }
}

/// The request written out as a head (request line, fields, blank line).
private func describe(_ request: HTTPRequest) -> String {
    var text = "\(request.method) \(request.target) \(request.version)\r\n"
    for field in request.headers { text += "\(field.name): \(field.value)\r\n" }
    return text + "\r\n"
}

private func checkRequest(_ request: HTTPRequest) {
    for word in [request.method, request.target, request.version] {
        precondition(!word.isEmpty && !word.contains(" ") && !word.contains("\n"), "a request-line word with a space or newline")
    }
    precondition(request.version.hasPrefix("HTTP/1."))
    precondition(!request.path.contains("?"))
    precondition(request.target == request.path + (request.query.map { "?" + $0 } ?? ""), "path and query do not make the target")
    for field in request.headers {
        precondition(!field.name.isEmpty && !field.name.contains(":") && field.name == field.name.lowercased(), "bad field name")
        precondition(!field.value.hasPrefix(" ") && !field.value.hasSuffix(" ") && !field.value.contains("\n"), "untrimmed value")
    }
    // Written out and parsed again: the same request.
    let text = describe(request)
    guard let again = HTTPRequest(head: Array(text.utf8)[...]) else { preconditionFailure("a parsed head does not parse again") }
    precondition(describe(again) == text, "a parsed head parses again differently")
}

/// A response nalcast writes: status line with `status`, `Content-Length` equal to the body.
func checkResponse(_ bytes: [UInt8], status: Int) {
    let text = String(decoding: bytes, as: UTF8.self)
    precondition(text.hasPrefix("HTTP/1.1 \(status) "), "status line")
    guard let range = text.firstRange(of: "\r\n\r\n") else { preconditionFailure("no end of head") }
    let bodyBytes = text[range.upperBound...].utf8.count
    precondition(text[..<range.lowerBound].contains("\r\nContent-Length: \(bodyBytes)\r\n"), "Content-Length is not the body's")
}
