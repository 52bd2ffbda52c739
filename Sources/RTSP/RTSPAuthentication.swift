/// The Authorization header for an RTSP request after a 401 (RFC 2326 §D.2, RFC 2617): Basic,
/// or Digest (MD5, with or without `qop=auth`), whichever the server's WWW-Authenticate
/// challenges offer (Digest first: it never sends the password).
public struct RTSPAuthentication: Sendable {
    public enum Scheme: Sendable, Equatable {
        case basic
        case digest(realm: String, nonce: String, opaque: String?, qop: Bool)
    }

    public let scheme: Scheme
    private let user: String
    private let password: String
    private var nonceCount = 0

    /// Picks a scheme from the challenges (each a WWW-Authenticate header's value); nil when
    /// none is one nalcast speaks (or Digest with another algorithm than MD5).
    public init?(challenges: [String], user: String, password: String) {
        self.user = user
        self.password = password
        let parsed = challenges.map(Self.parse)
        if let digest = parsed.first(where: { $0.name == "digest" }), let realm = digest.fields["realm"], let nonce = digest.fields["nonce"],
           (digest.fields["algorithm"] ?? "MD5").uppercased() == "MD5" {
            let qop = (digest.fields["qop"] ?? "").split(separator: ",").contains { $0.strippingSpaces() == "auth" }
            scheme = .digest(realm: realm, nonce: nonce, opaque: digest.fields["opaque"], qop: qop)
        } else if parsed.contains(where: { $0.name == "basic" }) {
            scheme = .basic
        } else {
            return nil
        }
    }

    /// The header's value for one request.
    public mutating func header(method: String, uri: String) -> String {
        switch scheme {
        case .basic:
            return "Basic " + Self.base64(Array("\(user):\(password)".utf8))
        case .digest(let realm, let nonce, let opaque, let qop):
            let ha1 = MD5.hex("\(user):\(realm):\(password)")
            let ha2 = MD5.hex("\(method):\(uri)")
            var fields = ["username=\"\(user)\"", "realm=\"\(realm)\"", "nonce=\"\(nonce)\"", "uri=\"\(uri)\""]
            if qop {
                nonceCount += 1
                let hex = String(nonceCount, radix: 16)
                let count = String(repeating: "0", count: max(0, 8 - hex.count)) + hex
                let cnonce = MD5.hex("\(nonce):\(nonceCount):\(user)").prefix(16)
                fields.append("response=\"\(MD5.hex("\(ha1):\(nonce):\(count):\(cnonce):auth:\(ha2)"))\"")
                fields += ["qop=auth", "nc=\(count)", "cnonce=\"\(cnonce)\""]
            } else {
                fields.append("response=\"\(MD5.hex("\(ha1):\(nonce):\(ha2)"))\"")
            }
            if let opaque { fields.append("opaque=\"\(opaque)\"") }
            fields.append("algorithm=MD5")
            return "Digest " + fields.joined(separator: ", ")
        }
    }

    /// `Digest realm="x", nonce="y"` → ("digest", [realm: x, nonce: y]).
    static func parse(_ challenge: String) -> (name: String, fields: [String: String]) {
        let trimmed = challenge.strippingSpaces()
        let space = trimmed.firstIndex(of: " ") ?? trimmed.endIndex
        var fields: [String: String] = [:]
        var rest = trimmed[space...]
        while true {
            rest = rest.drop { $0 == " " || $0 == "," }
            guard let eq = rest.firstIndex(of: "=") else { break }
            let key = rest[..<eq].strippingSpaces().lowercased()
            rest = rest[rest.index(after: eq)...]
            var value: Substring
            if rest.hasPrefix("\"") {
                rest = rest.dropFirst()
                let close = rest.firstIndex(of: "\"") ?? rest.endIndex
                value = rest[..<close]
                rest = close < rest.endIndex ? rest[rest.index(after: close)...] : rest[close...]
            } else {
                let end = rest.firstIndex(of: ",") ?? rest.endIndex
                value = rest[..<end]
                rest = rest[end...]
            }
            fields[key] = value.strippingSpaces()
        }
        return (trimmed[..<space].lowercased(), fields)
    }

    static func base64(_ bytes: [UInt8]) -> String {
        let table = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        var out = ""
        for at in stride(from: 0, to: bytes.count, by: 3) {
            let n = min(3, bytes.count - at)
            let v = UInt32(bytes[at]) << 16 | (n > 1 ? UInt32(bytes[at + 1]) << 8 : 0) | (n > 2 ? UInt32(bytes[at + 2]) : 0)
            for i in 0..<4 { out.append(i <= n ? table[Int(v >> (18 - 6 * UInt32(i)) & 63)] : "=") }
        }
        return out
    }
}

extension StringProtocol {
    /// Without the spaces and tabs at either end.
    func strippingSpaces() -> String {
        String(String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }).reversed())
    }
}
