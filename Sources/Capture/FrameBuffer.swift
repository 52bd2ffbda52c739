/// Heap memory holding the planes of one frame. Sources and the converter keep one and
/// reuse it for the next frame once nobody else holds it (`ReusableBuffer`), so frames
/// cost no allocation in the steady state.
///
/// Not `Sendable`: frame memory lives and dies on the capture thread.
public final class FrameBuffer {
    public let base: UnsafeMutablePointer<UInt8>
    public let capacity: Int

    public init(capacity: Int) {
        self.capacity = capacity
        self.base = .allocate(capacity: Swift.max(capacity, 1))
    }

    deinit { base.deallocate() }
}
