import CommandOptions

/// `--whip-token TOKEN` (or `NALCAST_WHIP_TOKEN`, as every option, which keeps it off the
/// command line `ps` shows): the bearer token of every `--forward whip://` target, sent as
/// `Authorization: Bearer TOKEN` with the POST and the DELETE; never printed.
enum WHIPChoice {
    static let environmentName = "NALCAST_WHIP_TOKEN"

    static let specs = [
        OptionSpec(name: "whip-token", value: "TOKEN", help: "the bearer token of --forward whip:// (Authorization: Bearer), or \(environmentName) to keep it off the command line; never printed"),
    ]

    /// The forwards, each WHIP one with the token; one line (64) for an empty token.
    static func apply(_ o: ParsedOptions, to forwards: [ForwardChoice], prefix: String) throws -> [ForwardChoice] {
        guard let token = o.string("whip-token") else { return forwards }
        guard !token.isEmpty, !token.contains(where: { $0 == "\r" || $0 == "\n" }) else {
            throw CommandError.usage("\(prefix)--whip-token: expected a token on one line")
        }
        return forwards.map { forward in
            guard case .whip(let whip, _) = forward else { return forward }
            return .whip(whip, token: token)
        }
    }
}
