/// Heap memory holding the planes of one frame. Sources and the converter keep one and
/// reuse it for the next frame once nobody else holds it (`ReusableBuffer`), so frames
/// cost no allocation in the steady state.
///
/// It can also stand for memory someone else owns (a shared memory segment the X server
/// writes into, an X reply): frames then point straight into it, without a copy, and
/// the owner's `release` runs when the last frame lets go.
///
/// Not `Sendable`: frame memory lives and dies on the capture thread.
public final class FrameBuffer {
    public let base: UnsafeMutablePointer<UInt8>
    public let capacity: Int
    private let release: (() -> Void)?

    public init(capacity: Int) {
        self.capacity = capacity
        // 64-byte aligned, like FFmpeg's frame pools: the SIMD loads of libyuv and of
        // x264's input copy start on a cache line.
        self.base = UnsafeMutableRawPointer.allocate(byteCount: Swift.max(capacity, 1), alignment: 64)
            .bindMemory(to: UInt8.self, capacity: Swift.max(capacity, 1))
        self.release = nil
    }

    /// `capacity` bytes at `base` that this buffer does not own: `release` runs at
    /// deinit instead of a deallocation (e.g. `shmdt`, `free` of a reply).
    public init(wrapping base: UnsafeMutablePointer<UInt8>, capacity: Int, release: @escaping () -> Void) {
        self.base = base
        self.capacity = capacity
        self.release = release
    }

    deinit {
        if let release { release() } else { UnsafeMutableRawPointer(base).deallocate() }  // allocated raw, 64-byte aligned
    }
}
