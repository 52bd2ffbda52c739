/// What a bearer token lets its holder do on the HTTP side (`--web`, `--metrics`).
public struct Permission: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The page and its stream (`GET /`, the `/ws` upgrade).
    public static let watch = Permission(rawValue: 1)
    /// Sending a stream in (for publishing routes; none is served yet).
    public static let publish = Permission(rawValue: 2)
    /// `GET /metrics`.
    public static let metrics = Permission(rawValue: 4)
    /// What changes the run: `POST /bitrate`.
    public static let control = Permission(rawValue: 8)
    public static let all: Permission = [.watch, .publish, .metrics, .control]

    /// The words of a token file, in order.
    public static let words: [(String, Permission)] = [("watch", .watch), ("publish", .publish), ("metrics", .metrics), ("control", .control), ("all", .all)]

    public var description: String {
        Permission.words.filter { $0.1 != .all && contains($0.1) }.map(\.0).joined(separator: ",")
    }
}

/// The tokens of `--token-file` (or the one made for a run), each with its permissions.
///
/// The file has one token a line, then its permissions, comma-separated (`watch`, `publish`,
/// `metrics`, `control`, or `all`); `#` starts a comment, blank lines are skipped:
///
///     # the colleague who watches
///     6f1c0e2b9a7d4c3e8b5a1f0d2c4e6a8b  watch
///     8d2e4f6a0b1c3d5e7f9a2b4c6d8e0f1a  watch,metrics,control
///
/// A token is 16 to 256 printable ASCII characters without spaces; it is compared in constant
/// time (`permissions(of:)`) and never written anywhere.
public struct TokenTable: Sendable {
    public struct Entry: Sendable {
        let token: [UInt8]
        public let permissions: Permission
    }

    public let entries: [Entry]
    public static let minimumLength = 16
    public static let maximumLength = 256

    public init(token: String, permissions: Permission) {
        entries = [Entry(token: Array(token.utf8), permissions: permissions)]
    }

    /// Reads a token file's text; the error names the line (never the token).
    public init(parsing text: String) throws(TokenFileError) {
        var entries: [Entry] = []
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            guard let token = fields.first else { continue }
            let number = index + 1
            guard fields.count == 2 else { throw TokenFileError(line: number, reason: "expected a token and its permissions (watch, publish, metrics, control, all)") }
            let bytes = Array(token.utf8)
            guard bytes.count >= Self.minimumLength, bytes.count <= Self.maximumLength, bytes.allSatisfy({ $0 > 32 && $0 < 127 }) else {
                throw TokenFileError(line: number, reason: "a token is \(Self.minimumLength) to \(Self.maximumLength) printable characters")
            }
            var permissions: Permission = []
            for word in fields[1].split(separator: ",") {
                guard let known = Permission.words.first(where: { $0.0 == word.lowercased() }) else {
                    throw TokenFileError(line: number, reason: "unknown permission '\(word.prefix(20))': expected watch, publish, metrics, control or all")
                }
                permissions.formUnion(known.1)
            }
            guard !permissions.isEmpty else { throw TokenFileError(line: number, reason: "no permission given") }
            entries.append(Entry(token: bytes, permissions: permissions))
        }
        guard !entries.isEmpty else { throw TokenFileError(line: 0, reason: "no token in the file") }
        self.entries = entries
    }

    /// The permissions of `presented`, or nil when it is no token of the table. Every entry
    /// is compared, every byte of each, whatever matched: the time taken says nothing of how
    /// much of a token was right, nor which entry it was.
    public func permissions(of presented: some Collection<UInt8>) -> Permission? {
        let given = Array(presented.prefix(Self.maximumLength + 1))
        var found: UInt8 = 0
        for entry in entries {
            let match = Self.constantTimeEqual(given, entry.token)
            found |= match & entry.permissions.rawValue | match & 0x80
        }
        return found & 0x80 != 0 ? Permission(rawValue: found & 0x7F) : nil
    }

    /// 0xFF when equal, else 0, in a time that depends on the lengths alone.
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> UInt8 {
        var difference = UInt(bitPattern: a.count ^ b.count)
        let length = max(a.count, b.count)
        for i in 0..<length {
            let x = i < a.count ? a[i] : 0
            let y = i < b.count ? b[i] : 0
            difference |= UInt(x ^ y)
        }
        // 0 → 0xFF, anything else → 0, without a branch on the value.
        let isZero = (difference | (0 &- difference)) >> (UInt.bitWidth - 1) ^ 1
        return UInt8(truncatingIfNeeded: 0 &- isZero)
    }

    /// A random token for a run (`--web` remote without `--token-file`): 24 bytes from the
    /// system's cryptographic generator, as 48 hex digits.
    public static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        let hex = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for _ in 0..<24 {
            let byte = UInt8.random(in: 0...255, using: &generator)
            out.append(hex[Int(byte >> 4)])
            out.append(hex[Int(byte & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// A token file that cannot be used: the line and why (never the token itself).
public struct TokenFileError: Error, Sendable, CustomStringConvertible {
    public let line: Int
    public let reason: String
    public var description: String { line > 0 ? "line \(line): \(reason)" : reason }
}

extension HTTPRequest {
    /// The token a request presents: `Authorization: Bearer TOKEN`, else the query's
    /// `token=TOKEN` (what a browser's WebSocket can carry). Nil without either.
    public var presentedToken: Substring? {
        if let authorization = header("authorization") {
            let parts = authorization.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "bearer" { return parts[1].drop { $0 == " " } }
        }
        for pair in (query ?? "").split(separator: "&") where pair.hasPrefix("token=") {
            return Substring(percentDecoded(pair.dropFirst("token=".count)))
        }
        return nil
    }

    /// The request without the query's `token=`: what a route's handler reads (`POST
    /// /bitrate?6M`) is what it was before tokens.
    public func removingToken() -> HTTPRequest {
        guard let query else { return self }
        var copy = self
        let rest = query.split(separator: "&").filter { !$0.hasPrefix("token=") }
        copy.query = rest.isEmpty ? nil : rest.joined(separator: "&")
        return copy
    }

    private func percentDecoded(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%"), utf8.count >= 2, let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16) {
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
