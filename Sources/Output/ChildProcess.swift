import IO
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Runs a program without a shell (`posix_spawnp`) and reaps it on a thread of its own, so
/// the caller (a sink's worker) never waits for it.
public enum ChildProcess {
    struct SpawnError: Error, CustomStringConvertible {
        let program: String
        let code: Int32
        var description: String { "\(program): \(String(cString: strerror(code)))" }
    }

    /// Splits a command line into words at spaces; single and double quotes group words
    /// (no escapes, no variables: there is no shell).
    public static func split(_ command: String) -> [String] {
        var words: [String] = []
        var word = ""
        var inWord = false
        var quote: Character?
        for c in command {
            if let q = quote {
                if c == q { quote = nil } else { word.append(c) }
            } else if c == "'" || c == "\"" {
                quote = c
                inWord = true
            } else if c == " " || c == "\t" {
                if inWord { words.append(word) }
                word = ""
                inWord = false
            } else {
                word.append(c)
                inWord = true
            }
        }
        if inWord { words.append(word) }
        return words
    }

    static func spawn(_ argv: [String], environment: [String]) throws(SpawnError) {
        precondition(!argv.isEmpty)
        let cArgs = argv.map { strdup($0) } + [nil]
        let cEnv = environment.map { strdup($0) } + [nil]
        defer {
            for p in cArgs { free(p) }
            for p in cEnv { free(p) }
        }
        // nalcast ignores SIGPIPE and SIGXFSZ (errors come back as EPIPE and EFBIG); ignored
        // signals survive exec, so give the child the default dispositions back.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        sigaddset(&defaults, SIGXFSZ)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF))
        var pid: pid_t = 0
        let rc = posix_spawnp(&pid, argv[0], nil, &attributes, cArgs, cEnv)
        guard rc == 0 else { throw SpawnError(program: argv[0], code: rc) }
        let child = pid
        let thread = OSThread(name: "nalcast-childprocess") {
            var status: Int32 = 0
            while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        }
        thread.detach()
    }
}
