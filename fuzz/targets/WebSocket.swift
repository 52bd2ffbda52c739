/// WebSocketReader (the parser of a viewer's frames), fed the input at once and in chunks.
/// The first byte chooses: bits 0–3 the chunk size (1–16), bit 4 the mode (deliver or
/// reject data messages), bits 5–7 the message limit (0–896 bytes in steps of 128). Checks:
/// no trap; the same events in both chunkings; at most one close, and last; every reply a
/// well-formed unmasked server frame; delivered messages within the limit, text ones UTF-8,
/// none in reject mode.
func fuzzWebSocket(_ bytes: [UInt8]) {
    guard let first = bytes.first else { return }
    let body = Array(bytes.dropFirst())
    let chunk = Int(first & 0x0f) + 1
    let mode: WebSocketReader.DataMessages = first & 0x10 != 0 ? .reject : .deliver
    let limit = Int(first >> 5) * 128

    var whole = WebSocketReader(maxMessageSize: limit, dataMessages: mode)
    let expected = whole.push(body)

    var pieces = WebSocketReader(maxMessageSize: limit, dataMessages: mode)
    var events: [WebSocketEvent] = []
    var offset = 0
    while offset < body.count {
        let end = min(body.count, offset + chunk)
        events += pieces.push(Array(body[offset..<end]))
        offset = end
    }
    precondition(events == expected, "chunking changed the events")
    precondition(whole.isClosed == pieces.isClosed && whole.bytesAfterClose == pieces.bytesAfterClose)

    for (k, event) in expected.enumerated() {
        switch event {
        case .close(let code, let reply, let failure):
            precondition(k == expected.count - 1, "an event after the close")
            precondition(reply.count >= 2 && reply[0] == 0x88 && reply.count == 2 + Int(reply[1]), "bad close frame")
            precondition(failure == nil || code == nil)
            if let failure { precondition(reply.count >= 4 && UInt16(reply[2]) << 8 | UInt16(reply[3]) == failure.code.rawValue) }
        case .send(let reply):
            precondition(reply.count >= 2 && reply[0] == 0x8A && reply.count == 2 + Int(reply[1]) && reply[1] <= 125, "bad pong")
        case .message(let opcode, let payload):
            precondition(mode == .deliver && payload.count <= limit, "message past the limit or in reject mode")
            if opcode == .text { precondition(String(validating: payload, as: UTF8.self) != nil, "text not UTF-8") }
        }
    }
}
