import IO
import Glibc
import Synchronization
import XCTest

/// A value shared between the test thread and the loop thread.
final class Shared<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
    func update<R: Sendable>(_ body: (inout Value) -> R) -> R { value.withLock { body(&$0) } }
    var current: Value { value.withLock { $0 } }
}

/// Holds loop-owned objects so that they live as long as the test; only touched on the loop's
/// owner thread (the test thread before start and after join, the loop thread in between).
final class Keep {
    var objects: [AnyObject] = []
}

func temporaryDirectory() -> String {
    var template = Array("/tmp/nalcast-test-XXXXXX".utf8CString)
    let path = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    return String(cString: path!)
}
