/// Cross-origin requests (CORS, the Fetch standard) to the WHEP endpoint, for players served
/// from another origin than the `--web` page (a WHEP player page elsewhere, as RFC 9725 §4.9
/// and MediaMTX's `webrtcAllowOrigins` have it): the `OPTIONS` preflight and the headers of
/// the answers themselves.
///
/// Only the origins given (`--web-origin`, repeatable; `*` for any) are let in; none by
/// default. Any origin by default, as MediaMTX does, would let every web site a user of this
/// machine opens watch a loopback listener that needs no token (`produce --source screen
/// --web tcp://127.0.0.1:8080`: the screen): the browser would send the page's offer and hand
/// it the answer. With a token file, `*` lets any player in that is given a token: it sends
/// `Authorization: Bearer` itself (no cookies: no credentials mode, so `*` is valid). Pure.
public struct CrossOrigin: Sendable, Equatable {
    /// Origins allowed, as given (`https://player.example:8443`), or `*`.
    public let allowed: [String]

    public init(allowed: [String] = []) { self.allowed = allowed }

    /// What the preflight allows: the headers a player sends (the methods are the URL's:
    /// POST on the endpoint, DELETE on a session).
    public static let requestHeaders = "Authorization, Content-Type, If-Match"
    /// What a player on another origin may read of an answer: the session's URL and the
    /// ICE servers' links (RFC 9725 §4.4, §4.6).
    public static let exposedHeaders = "Location, Link, ETag"

    /// Why an `--web-origin` value is not an origin; nil when it is one (`*`, or
    /// `http(s)://host[:port]` with no path).
    public static func problem(_ origin: String) -> String? {
        if origin == "*" { return nil }
        let lower = origin.lowercased()
        guard let scheme = ["http://", "https://"].first(where: lower.hasPrefix) else {
            return "\(origin) is not an origin: expected http://HOST[:PORT], https://HOST[:PORT] or *"
        }
        let rest = lower.dropFirst(scheme.count)
        guard !rest.isEmpty, !rest.contains("/"), !rest.contains("?"), !rest.contains("#"), !rest.contains("@") else {
            return "\(origin) is not an origin: no path, query or user part (https://player.example:8443)"
        }
        return nil
    }

    /// The `Access-Control-Allow-Origin` value for `origin` (the request's `Origin`): `*`
    /// when any is allowed, the origin itself when listed, else nil.
    public func allowOrigin(_ origin: String?) -> String? {
        guard let origin else { return nil }
        if allowed.contains("*") { return "*" }
        return allowed.contains { $0.lowercased() == origin.lowercased() } ? origin : nil
    }

    /// The headers of an answer to `request` (a POST's 201 or error, a DELETE's, a 401, and
    /// the first of a preflight's grant): none unless its origin is allowed.
    public func headers(_ request: HTTPRequest) -> [(String, String)] {
        guard let value = allowOrigin(request.header("origin")) else { return [] }
        var out = [("Access-Control-Allow-Origin", value), ("Access-Control-Expose-Headers", Self.exposedHeaders)]
        if value != "*" { out.append(("Vary", "Origin")) }
        return out
    }

    /// The answer to an `OPTIONS` on the endpoint (`acceptsPost`) or on a session (a
    /// preflight, or a client asking what is accepted): 204 with `Allow` (and `Accept-Post`)
    /// always, and the CORS grant when the origin is allowed (a browser fails the request
    /// otherwise, which is the refusal).
    public func preflight(_ request: HTTPRequest, acceptsPost: Bool) -> HTTPResponse {
        let methods = acceptsPost ? "POST, OPTIONS" : "DELETE, OPTIONS"
        var response = HTTPResponse(status: 204, body: "")
        response.headers.append(("Allow", methods))
        if acceptsPost { response.headers.append(("Accept-Post", "application/sdp")) }
        let grant = headers(request)
        guard !grant.isEmpty else { return response }
        response.headers += grant + [("Access-Control-Allow-Methods", methods), ("Access-Control-Allow-Headers", Self.requestHeaders),
                                     ("Access-Control-Max-Age", "600")]
        return response
    }
}
