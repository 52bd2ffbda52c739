#if canImport(Glibc)
import Clocks
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A failed system call: the C function and its `errno`. Reads as `bind: Address already in use`.
public struct Errno: Error, Hashable, CustomStringConvertible {
    public let code: Int32
    /// The C function that failed, e.g. `bind`.
    public let function: String

    public init(code: Int32, function: String) {
        self.code = code
        self.function = function
    }

    public var description: String { "\(function): \(String(cString: strerror(code)))" }
}

/// What a non-blocking call did: its result, or nothing because it would have blocked.
public enum IOResult<T: Sendable>: Sendable {
    case done(T)
    case wouldBlock
}

extension IOResult: Equatable where T: Equatable {}

/// The funnel every system call in nalcast goes through: runs `call` until it does not fail
/// with `EINTR`, and throws any other failure (`-1`) as `Errno` naming `function`, the C
/// function (`sendmsg: Broken pipe`).
///
/// `EBADF` traps by default: a descriptor nalcast closed or never had is a bug, not a runtime
/// condition. Pass `badDescriptorIsBug: false` for a descriptor nalcast was given (stdout,
/// which the parent may have closed): then it throws like any other failure.
@inline(__always)
public func systemCall<T: FixedWidthInteger>(_ function: String, badDescriptorIsBug: Bool = true, _ call: () -> T) throws(Errno) -> T {
    while true {
        let result = call()
        if result != -1 { return result }
        let code = errno
        if code == EINTR { continue }
        if code == EBADF && badDescriptorIsBug { fatalError("\(function): bad file descriptor") }
        throw Errno(code: code, function: function)
    }
}

/// `systemCall` for non-blocking descriptors: `EAGAIN` (and `EWOULDBLOCK`) becomes `.wouldBlock`.
@inline(__always)
public func nonBlockingCall<T: FixedWidthInteger & Sendable>(
    _ function: String, badDescriptorIsBug: Bool = true, _ call: () -> T
) throws(Errno) -> IOResult<T> {
    do {
        return .done(try systemCall(function, badDescriptorIsBug: badDescriptorIsBug, call))
    } catch where error.code == EAGAIN || error.code == EWOULDBLOCK {
        return .wouldBlock
    }
}

/// Waits until `fd` is ready for `events` (`POLLIN`, `POLLOUT`) or `timeout` seconds have
/// passed: true when it is ready (an error or hang-up pending on it counts as ready: the
/// next call on it reports it), false when the time ran out. `EINTR` waits again for the
/// time left. The corresponding C function is `poll`.
public func waitUntilReady(_ fd: Int32, for events: Int32, timeout: Double) throws(Errno) -> Bool {
    let deadline = MonotonicClock.seconds + Swift.max(0, timeout)
    while true {
        var pfd = pollfd(fd: fd, events: Int16(events), revents: 0)
        let left = Swift.max(0, deadline - MonotonicClock.seconds)
        // Rounded up: a wait of 0.4 ms must not become a busy poll of 0 ms.
        let rc = poll(&pfd, 1, Int32(Swift.min(Double(Int32.max), (left * 1000).rounded(.up))))
        if rc > 0 { return true }
        if rc == 0 { return false }
        if errno == EINTR { continue }
        throw Errno(code: errno, function: "poll")
    }
}
