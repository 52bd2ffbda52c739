/// The WebSocket opening handshake of `/ws` (`WebSocketHandshake.validate`, the loopback
/// `Host` check, `Base64`, `SHA1`), on an upgrade request parsed from the input (a blank line
/// added when it has none). Checks: no trap; an accepted upgrade is a GET over HTTP/1.1 with
/// a Host, `Upgrade: websocket`, version 13 and one key that is canonical base64 of 16
/// bytes, answered by a 101 whose accept value is base64 of 20 bytes; a refusal's response
/// carries its status and its body's length; a page's own origin (`http://` + Host) is
/// never foreign; a loopback Host names localhost, 127.x.y.z or [::1]; base64 round-trips.
func fuzzHandshake(_ bytes: [UInt8]) {
    var reader = HTTPRequestReader(headerLimit: 1 << 20)
    var step = reader.push(bytes)
    if case .more = step { step = reader.push([0x0d, 0x0a, 0x0d, 0x0a]) }
    guard case .head(let request) = step else { return }
    switch WebSocketHandshake.validate(request) {
    case .success(let handshake):
        precondition(request.method == "GET" && request.version == "HTTP/1.1" && request.header("host") != nil)
        precondition(WebSocketHandshake.tokens(request, "upgrade").contains("websocket"))
        precondition(request.header("sec-websocket-version") == "13")
        guard let key = Base64.decode(handshake.key) else { preconditionFailure("an accepted key that is not base64") }
        precondition(key.count == 16 && Base64.encode(key) == handshake.key, "an accepted key that is not canonical base64 of 16 bytes")
        let accept = WebSocketHandshake.accept(key: handshake.key)
        precondition(Base64.decode(accept)?.count == 20, "accept is not base64 of a SHA-1")
        let response = String(decoding: handshake.response, as: UTF8.self)
        precondition(response.hasPrefix("HTTP/1.1 101 ") && response.hasSuffix("Sec-WebSocket-Accept: \(accept)\r\n\r\n"))
    case .failure(let failure):
        checkResponse(failure.response.bytes, status: failure.status)
    }
    if let host = request.header("host") {
        precondition(WebSocketHandshake.sameOrigin("http://" + host, host: host), "the page's own origin is foreign")
        precondition(WebSocketHandshake.sameOrigin("https://" + host, host: host, scheme: "https"), "the proxied page's own origin is foreign")
        if WebSocketHandshake.isLoopbackHost(host) {
            let name = host.lowercased()
            precondition(name.hasPrefix("localhost") || name.hasPrefix("127.") || name.hasPrefix("[::1]"), "a loopback Host that is not")
        }
    }
    for field in request.headers where field.name == "sec-websocket-key" {
        if let decoded = Base64.decode(field.value) { precondition(Base64.decode(Base64.encode(decoded)) == decoded) }
    }
    precondition(Base64.decode(Base64.encode(Array(bytes.prefix(64)))) == Array(bytes.prefix(64)), "base64 does not round-trip")
}
