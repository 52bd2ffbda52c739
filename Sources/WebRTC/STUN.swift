import CWebRTC

/// STUN (RFC 8489) as ICE-lite needs it (RFC 8445 §2.5): a binding request read, its
/// integrity checked, and the success response written with XOR-MAPPED-ADDRESS,
/// MESSAGE-INTEGRITY (HMAC-SHA1, OpenSSL's) and FINGERPRINT; and as a WHIP push's
/// controlling agent needs it: its requests written, the responses read by the same
/// attribute reader as the requests. Pure, but for the HMAC.
public enum STUN {
    public static let magicCookie: UInt32 = 0x2112_A442
    static let bindingRequest: UInt16 = 0x0001
    static let bindingSuccess: UInt16 = 0x0101
    static let bindingError: UInt16 = 0x0111

    enum Attribute: UInt16 {
        case username = 0x0006
        case messageIntegrity = 0x0008
        case errorCode = 0x0009
        case xorMappedAddress = 0x0020
        case priority = 0x0024
        case useCandidate = 0x0025
        case fingerprint = 0x8028
        case iceControlled = 0x8029
        case iceControlling = 0x802A
    }

    /// Whether a datagram's first byte says STUN (RFC 7983: 0 to 3).
    public static func isSTUN(_ first: UInt8) -> Bool { first < 4 }

    /// A binding request, as read.
    public struct BindingRequest: Equatable, Sendable {
        public let transactionID: [UInt8]
        /// `USERNAME`: "our-ufrag:their-ufrag".
        public let username: String
        public let useCandidate: Bool
        let signature: Signature

        /// The ufrag this side gave (the part before the colon).
        public var localUfrag: Substring { username.split(separator: ":", maxSplits: 1).first ?? "" }

        /// True when MESSAGE-INTEGRITY is there and is the HMAC of the message with `password`.
        public func isAuthentic(password: String) -> Bool { signature.isAuthentic(password: password) }
    }

    /// A response to a binding request (a WHIP push's check), as read (RFC 8489: success
    /// 0x0101, error 0x0111).
    struct Response {
        let transactionID: [UInt8]
        let isSuccess: Bool
        let signature: Signature

        func isAuthentic(password: String) -> Bool { signature.isAuthentic(password: password) }
    }

    /// A message's MESSAGE-INTEGRITY: the bytes it signs and its HMAC (nil when there is none).
    struct Signature: Equatable, Sendable {
        var signedPart: [UInt8] = []
        var integrity: [UInt8]?

        func isAuthentic(password: String) -> Bool {
            guard let integrity else { return false }
            return STUN.hmac(key: Array(password.utf8), signedPart) == integrity
        }
    }

    /// Why a datagram is not a binding request we take.
    public enum ParseError: Error, Equatable {
        case tooShort, notSTUN, notBindingRequest, badLength, badFingerprint, malformedAttribute
    }

    /// Reads a binding request (other STUN messages, indications, responses: `.notBindingRequest`).
    public static func parseBindingRequest(_ bytes: [UInt8]) throws(ParseError) -> BindingRequest {
        guard try messageType(bytes) == bindingRequest else { throw .notBindingRequest }
        let read = try attributes(bytes)
        return BindingRequest(transactionID: Array(bytes[8..<20]), username: read.username, useCandidate: read.useCandidate, signature: read.signature)
    }

    /// Whether a datagram is a binding response (success or error).
    static func isResponse(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 20 && bytes[0] == 0x01 && (bytes[1] == 0x01 || bytes[1] == 0x11)
    }

    /// Reads a binding response; nil when it is malformed or its FINGERPRINT is wrong.
    static func parseResponse(_ bytes: [UInt8]) -> Response? {
        guard isResponse(bytes), let type = try? messageType(bytes), let read = try? attributes(bytes) else { return nil }
        return Response(transactionID: Array(bytes[8..<20]), isSuccess: type == bindingSuccess, signature: read.signature)
    }

    // MARK: - Reading

    /// The type of a STUN message whose header holds (the magic cookie, a length that is the
    /// rest of the datagram, in words).
    static func messageType(_ bytes: [UInt8]) throws(ParseError) -> UInt16 {
        guard bytes.count >= 20 else { throw .tooShort }
        guard bytes[0] & 0xC0 == 0, word(bytes, 4) == magicCookie else { throw .notSTUN }
        let length = Int(bytes[2]) << 8 | Int(bytes[3])
        guard length % 4 == 0, 20 + length == bytes.count else { throw .badLength }
        return UInt16(bytes[0]) << 8 | UInt16(bytes[1])
    }

    /// What ICE reads of a message's attributes, requests' and responses' alike: USERNAME,
    /// USE-CANDIDATE, the first MESSAGE-INTEGRITY with the bytes it signs; a FINGERPRINT
    /// checked. The header is `messageType`'s to check.
    static func attributes(_ bytes: [UInt8]) throws(ParseError) -> (username: String, useCandidate: Bool, signature: Signature) {
        var username = ""
        var useCandidate = false
        var signature = Signature()
        var at = 20
        while at + 4 <= bytes.count {
            let kind = UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1])
            let size = Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
            let value = at + 4
            guard value + size <= bytes.count else { throw .malformedAttribute }
            switch Attribute(rawValue: kind) {
            case .username: username = String(decoding: bytes[value..<(value + size)], as: UTF8.self)
            case .useCandidate: useCandidate = true
            case .messageIntegrity where signature.integrity == nil:
                guard size == 20 else { throw .malformedAttribute }
                signature.integrity = Array(bytes[value..<(value + 20)])
                // The HMAC covers the message up to this attribute, its length field counting
                // up to the end of MESSAGE-INTEGRITY (RFC 8489 §14.5).
                signature.signedPart = Array(bytes[0..<at])
                setLength(&signature.signedPart, at + 24 - 20)
            case .fingerprint:
                guard size == 4, word(bytes, value) == crc32(bytes[0..<at]) ^ 0x5354_554E else { throw .badFingerprint }
            default: break
            }
            at = value + (size + 3) / 4 * 4
        }
        return (username, useCandidate, signature)
    }

    /// The success response to `request` from `address` (the peer's address as seen here:
    /// XOR-MAPPED-ADDRESS), signed with `password` (this side's ice-pwd), with a FINGERPRINT.
    public static func bindingSuccess(to request: BindingRequest, mapped address: (ip: [UInt8], port: UInt16), password: String) -> [UInt8] {
        var out = header(type: bindingSuccess, transactionID: request.transactionID)
        var value: [UInt8] = [0, address.ip.count == 4 ? 0x01 : 0x02]
        let port = address.port ^ UInt16(magicCookie >> 16)
        value += [UInt8(port >> 8), UInt8(truncatingIfNeeded: port)]
        let mask = bytes(magicCookie) + request.transactionID
        for (i, byte) in address.ip.enumerated() { value.append(byte ^ mask[i]) }
        append(.xorMappedAddress, value, to: &out)
        sign(&out, password: password)
        return out
    }

    /// A 401 error response (a request whose integrity does not check), with a FINGERPRINT.
    public static func unauthorized(to request: BindingRequest) -> [UInt8] {
        var out = header(type: bindingError, transactionID: request.transactionID)
        append(.errorCode, [0, 0, 4, 1] + Array("Unauthorized".utf8), to: &out)
        addFingerprint(&out)
        return out
    }

    /// A binding request (for tests and the peers of the tests): USERNAME, PRIORITY,
    /// ICE-CONTROLLING, USE-CANDIDATE when asked, MESSAGE-INTEGRITY with `password`, FINGERPRINT.
    public static func bindingRequest(transactionID: [UInt8], username: String, password: String, useCandidate: Bool = true) -> [UInt8] {
        var out = header(type: bindingRequest, transactionID: transactionID)
        append(.username, Array(username.utf8), to: &out)
        append(.priority, bytes(0x6E00_01FF), to: &out)
        append(.iceControlling, [UInt8](repeating: 7, count: 8), to: &out)
        if useCandidate { append(.useCandidate, [], to: &out) }
        sign(&out, password: password)
        return out
    }

    // MARK: - Writing

    static func header(type: UInt16, transactionID: [UInt8]) -> [UInt8] {
        [UInt8(type >> 8), UInt8(truncatingIfNeeded: type), 0, 0] + bytes(magicCookie) + transactionID
    }

    static func append(_ attribute: Attribute, _ value: [UInt8], to out: inout [UInt8]) {
        out += [UInt8(attribute.rawValue >> 8), UInt8(truncatingIfNeeded: attribute.rawValue), UInt8(value.count >> 8), UInt8(truncatingIfNeeded: value.count)]
        out += value
        out += [UInt8](repeating: 0, count: (4 - value.count % 4) % 4)
        setLength(&out, out.count - 20)
    }

    /// MESSAGE-INTEGRITY, then FINGERPRINT.
    static func sign(_ out: inout [UInt8], password: String) {
        setLength(&out, out.count - 20 + 24)
        let mac = hmac(key: Array(password.utf8), out)
        append(.messageIntegrity, mac, to: &out)
        addFingerprint(&out)
    }

    static func addFingerprint(_ out: inout [UInt8]) {
        setLength(&out, out.count - 20 + 8)
        let crc = crc32(out[...]) ^ 0x5354_554E
        append(.fingerprint, bytes(crc), to: &out)
    }

    static func setLength(_ out: inout [UInt8], _ length: Int) {
        out[2] = UInt8(length >> 8)
        out[3] = UInt8(truncatingIfNeeded: length)
    }

    static func hmac(key: [UInt8], _ data: [UInt8]) -> [UInt8] {
        var mac = [UInt8](repeating: 0, count: 20)
        nc_hmac_sha1(key, key.count, data, data.count, &mac)
        return mac
    }

    static func word(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
    }

    static func bytes(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]
    }

    /// CRC-32 (ISO 3309, the one of zlib and Ethernet), for FINGERPRINT: a checksum, not a MAC.
    static func crc32(_ data: ArraySlice<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in data { crc = crcTable[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }

    private static let crcTable: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }
}
