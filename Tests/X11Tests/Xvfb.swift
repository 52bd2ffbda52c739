import TestSupport
import Foundation
import Glibc

/// An Xvfb server of its own for one test: a free display number chosen by the server
/// (`-displayfd`), `-noreset` (or it forgets the painted root whenever its last client
/// leaves), no TCP. Stopped by `stop()` (and at deinit).
///
/// Started with `posix_spawn` and an empty signal mask: the test runner's threads block
/// SIGTERM, and a child started through `Process` inherits that and cannot be stopped.
final class Xvfb {
    let display: String
    private var pid: pid_t

    init(width: Int, height: Int) throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw XvfbError.system("pipe", errno) }
        // Not inherited by other tests' children (the dup2 below gives Xvfb its own copy).
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        defer { close(fds[0]) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        // -displayfd 1: the server writes its display number to our pipe once it is ready.
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGPIPE, SIGHUP] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let arguments = ["Xvfb", "-displayfd", "1", "-screen", "0", "\(width)x\(height)x24", "-noreset", "-nolisten", "tcp"]
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var child: pid_t = 0
        let rc = posix_spawnp(&child, "Xvfb", &actions, &attributes, &argv, environ)
        close(fds[1])
        guard rc == 0 else { throw XvfbError.system("posix_spawnp(Xvfb)", rc) }
        pid = child

        var text = ""
        var byte: UInt8 = 0
        while !text.hasSuffix("\n") {
            let n = read(fds[0], &byte, 1)
            if n == 1 { text.append(Character(UnicodeScalar(byte))); continue }
            if n < 0 && errno == EINTR { continue }
            break
        }
        guard let number = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            display = ""
            stop()
            throw XvfbError.didNotStart(output: text)
        }
        display = ":\(number)"
    }

    /// SIGTERM, then SIGKILL if it has not gone after 3 s; reaps it.
    func stop() {
        guard pid > 0 else { return }
        kill(pid, SIGTERM)
        var status: Int32 = 0
        for _ in 0..<300 {
            if waitpid(pid, &status, WNOHANG) == pid { pid = 0; return }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        waitpid(pid, &status, 0)
        pid = 0
    }

    deinit { stop() }

    /// Runs an X client tool (xrandr, ...) against this display.
    func run(_ arguments: [String]) throws -> Tool.Result {
        try Tool.run(["DISPLAY=\(display)"] + arguments)
    }
}

enum XvfbError: Error {
    case didNotStart(output: String)
    case system(String, Int32)
}
