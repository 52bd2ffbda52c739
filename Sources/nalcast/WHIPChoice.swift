import CommandOptions

#if canImport(Glibc)
import Glibc
#endif

/// `--whip-token TOKEN` (or `NALCAST_WHIP_TOKEN`, as every option, which keeps it off the
/// command line `ps` shows): the bearer token of every `--forward whip://` target, sent as
/// `Authorization: Bearer TOKEN` with the POST and the DELETE; never printed. `--whip-ca FILE`:
/// a private CA for `https://` targets (66 when it cannot be read).
enum WHIPChoice {
    static let environmentName = "NALCAST_WHIP_TOKEN"

    static let specs = [
        OptionSpec(name: "whip-token", value: "TOKEN", help: "the bearer token of --forward whip:// (Authorization: Bearer), or \(environmentName) to keep it off the command line; never printed"),
        OptionSpec(name: "whip-ca", value: "FILE", help: "the CA certificates (PEM) that an https:// WHIP server's certificate is checked against, instead of the system's"),
    ]

    /// The forwards, each WHIP one with the token; one line (64) for an empty token.
    static func apply(_ o: ParsedOptions, to forwards: [ForwardChoice], prefix: String) throws -> [ForwardChoice] {
        let token = o.string("whip-token")
        if let token, token.isEmpty || token.contains(where: { $0 == "\r" || $0 == "\n" }) {
            throw CommandError.usage("\(prefix)--whip-token: expected a token on one line")
        }
        let ca = o.string("whip-ca")
        if let ca, access(ca, R_OK) != 0 { throw CommandError.noInput("\(prefix)--whip-ca \(ca): \(describeOpenError(errno))") }
        return forwards.map { forward in
            guard case .whip(let whip, _, _) = forward else { return forward }
            return .whip(whip, token: token, ca: ca)
        }
    }
}
