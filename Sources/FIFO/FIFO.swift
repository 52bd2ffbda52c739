/// A first-in first-out queue over an array: elements go on at the back and come off the
/// front in O(1) (amortised). Taking from the front moves a head index instead of shifting
/// the array; the taken slots are given back when the queue empties, and when they are at
/// least 64 and half the array (so each element is moved at most once on average).
///
/// Every queue in nalcast that takes from the front is one of these: the audio waiting for
/// the video in a container, the access units waiting for their presentation time, the
/// pictures a segment holds for their sound, a reader's skip queue.
public struct FIFO<Element> {
    // Inlinable (and so its storage usable from inlinable code) so that a queue of a
    // concrete type is specialized where it is used: generic code called across modules
    // would look its element's layout up at run time on every call.
    @usableFromInline var storage: [Element] = []
    @usableFromInline var head = 0

    @inlinable public init() {}

    /// Elements queued.
    @inlinable public var count: Int { storage.count - head }
    @inlinable public var isEmpty: Bool { head == storage.count }
    /// The element that comes off next.
    @inlinable public var first: Element? { isEmpty ? nil : storage[head] }
    /// The element added last.
    @inlinable public var last: Element? { isEmpty ? nil : storage[storage.count - 1] }

    /// The element `index` places behind the front (0: `first`).
    @inlinable public subscript(index: Int) -> Element {
        get {
            precondition(index >= 0 && index < count, "FIFO index out of range")
            return storage[head + index]
        }
        set {
            precondition(index >= 0 && index < count, "FIFO index out of range")
            storage[head + index] = newValue
        }
    }

    /// The queued elements, front first.
    @inlinable public var elements: ArraySlice<Element> { storage[head...] }

    @inlinable public mutating func append(_ element: Element) {
        storage.append(element)
    }

    /// Takes the front element; nil when empty.
    @inlinable public mutating func popFirst() -> Element? {
        guard !isEmpty else { return nil }
        // The only element (a reader's queue at the live edge, popped once an access unit):
        // moved out as the array's last, which keeps the capacity with no generic
        // `removeAll(keepingCapacity:)` (its `replaceSubrange` cost more than the rest of the pop).
        if head == 0 && storage.count == 1 { return storage.removeLast() }
        let element = storage[head]
        head += 1
        compact()
        return element
    }

    /// Takes the first `n` elements (at most `count`) and returns them, front first.
    @inlinable @discardableResult
    public mutating func removeFirst(_ n: Int) -> ArraySlice<Element> {
        let n = Swift.min(Swift.max(0, n), count)
        let taken = storage[head..<(head + n)]
        head += n
        compact()
        return taken
    }

    /// Removes the elements at `range`, counted in places behind the front (0: `first`):
    /// what a queue drops from its middle when it skips.
    @inlinable public mutating func removeSubrange(_ range: Range<Int>) {
        precondition(range.lowerBound >= 0 && range.upperBound <= count, "FIFO range out of range")
        storage.removeSubrange((head + range.lowerBound)..<(head + range.upperBound))
        compact()
    }

    @inlinable public mutating func removeAll() {
        storage.removeAll(keepingCapacity: true)
        head = 0
    }

    @inlinable mutating func compact() {
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64 && head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
    }
}

extension FIFO: Sendable where Element: Sendable {}
