import CommandOptions
import Muxing
import Consumer

#if canImport(Glibc)
import Glibc
#endif

/// `--srt-passphrase-file FILE` or `NALCAST_SRT_PASSPHRASE` (never a command-line value,
/// which `ps` shows), and `--srt-pbkeylen`: SRT's encryption for every `--forward srt://` and
/// a `--from srt://`. A passphrase the peer refuses ends the run with one line and exit 77.
enum SRTSecretChoice {
    /// The variable that may hold the passphrase itself (no option of its own).
    static let environmentName = "NALCAST_SRT_PASSPHRASE"

    static func specs(_ command: String) -> [OptionSpec] {
        let what = command == "produce" ? "--forward srt://" : "--forward srt:// and --from srt://"
        return [
            OptionSpec(name: "srt-passphrase-file", value: "FILE", help: "encrypt \(what) with the passphrase in FILE (its first line, 10 to 79 characters), or \(environmentName); never on the command line"),
            OptionSpec(name: "srt-pbkeylen", value: "BYTES", help: "the SRT key length with a passphrase: 16, 24 or 32 (AES-128, -192, -256)", defaultText: "16", values: ["16", "24", "32"]),
        ]
    }

    /// The secret, or nil without a passphrase; errors as one line (64, 65, 66).
    static func parse(_ o: ParsedOptions, prefix: String, usedBySRT: Bool) throws -> SRTSecret? {
        let passphrase: String
        var from: String
        if let path = o.string("srt-passphrase-file") {
            passphrase = try firstLine(path, prefix: prefix)
            from = "--srt-passphrase-file \(path)"
        } else if let text = processEnvironment()[environmentName] {
            passphrase = text
            from = environmentName
        } else {
            if o.string("srt-pbkeylen") != nil { throw CommandError.usage("\(prefix)--srt-pbkeylen needs a passphrase: --srt-passphrase-file FILE or \(environmentName)") }
            return nil
        }
        guard usedBySRT else {
            if from == environmentName { return nil }  // one environment may serve several runs
            throw CommandError.usage("\(prefix)\(from): no srt:// --forward or --from to encrypt")
        }
        let keyLength = try o.value("srt-pbkeylen", expected: "expected 16, 24 or 32") { Int($0).flatMap { SRTSecret.keyLengths.contains($0) ? $0 : nil } }
        do {
            let secret = try SRTSecret(passphrase: passphrase, keyLength: keyLength)
            SRTSecret.quietRefusals()
            return secret
        } catch {
            throw CommandError(code: .dataError, message: "\(prefix)\(from): \(error)")
        }
    }

    private static func firstLine(_ path: String, prefix: String) throws -> String {
        guard let file = fopen(path, "r") else {
            throw CommandError.noInput("\(prefix)--srt-passphrase-file \(path): \(describeOpenError(errno))")
        }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 256)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return "" }
        let line = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return String(line.drop { $0 == "\n" || $0 == "\r" }.reversed().drop { $0 == "\n" || $0 == "\r" }.reversed())
    }

    /// The forwards, each SRT one with the secret.
    static func apply(_ secret: SRTSecret?, to forwards: [ForwardChoice]) -> [ForwardChoice] {
        guard let secret else { return forwards }
        return forwards.map { forward in
            guard case .push(var push) = forward, push.kind == .srt else { return forward }
            push.secret = secret
            return .push(push)
        }
    }

    /// An `srt://` input with the secret.
    static func apply(_ secret: SRTSecret?, to input: ConsumeCommand.Input) -> ConsumeCommand.Input {
        guard let secret, case .demux(var source) = input, source.url.lowercased().hasPrefix("srt://") else { return input }
        source.options += secret.libavformatOptions.map { DemuxReader.Source.Option($0.0, $0.1) }
        return .demux(source)
    }

    /// One warning per `srt://` URL that carries its passphrase (`?passphrase=`): taken, and
    /// masked in every line nalcast writes, but on the command line `ps` and the shell's
    /// history show it.
    static func urlPassphraseWarnings(_ urls: [String], prefix: String) -> [String] {
        urls.filter { $0.lowercased().hasPrefix("srt://") && $0.lowercased().contains("passphrase=") }.map {
            "\(prefix)warning: \(PushTarget.masked($0)) has its passphrase on the command line, where ps shows it: "
                + "--srt-passphrase-file FILE or \(environmentName) keep it out"
        }
    }

    static func usesSRT(_ forwards: [ForwardChoice], _ input: ConsumeCommand.Input? = nil) -> Bool {
        let forward = forwards.contains { if case .push(let push) = $0 { push.kind == .srt } else { false } }
        if case .demux(let source)? = input, source.url.lowercased().hasPrefix("srt://") { return true }
        return forward
    }
}
