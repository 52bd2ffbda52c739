#if canImport(Glibc)
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

/// The funnel every system call goes through: retries on `EINTR`, traps on `EBADF` (a
/// descriptor nalcast closed or never had is a bug, not a runtime condition), and throws the
/// rest as `Errno` naming `function`.
@inline(__always)
func systemCall<T: FixedWidthInteger>(_ function: String, _ call: () -> T) throws(Errno) -> T {
    while true {
        let result = call()
        if result != -1 { return result }
        let code = errno
        if code == EINTR { continue }
        if code == EBADF { fatalError("\(function): bad file descriptor") }
        throw Errno(code: code, function: function)
    }
}

/// `systemCall` for non-blocking descriptors: `EAGAIN` becomes `.wouldBlock`.
@inline(__always)
func nonBlockingCall<T: FixedWidthInteger & Sendable>(_ function: String, _ call: () -> T) throws(Errno) -> IOResult<T> {
    do {
        return .done(try systemCall(function, call))
    } catch where error.code == EAGAIN || error.code == EWOULDBLOCK {
        return .wouldBlock
    }
}
