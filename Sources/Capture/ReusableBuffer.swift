/// One frame buffer kept for reuse: handed out again only when the previous frame that
/// used it has been released (the holder's reference is the only one left).
public struct ReusableBuffer {
    private var buffer: FrameBuffer?

    public init() {}

    /// A buffer of at least `capacity` bytes: the kept one when nobody else holds it.
    public mutating func obtain(capacity: Int) -> FrameBuffer {
        if buffer != nil, isKnownUniquelyReferenced(&buffer), let kept = buffer, kept.capacity >= capacity {
            return kept
        }
        let fresh = FrameBuffer(capacity: capacity)
        buffer = fresh
        return fresh
    }
}

extension ReusableBuffer {
    /// The kept buffer whenever it is large enough, even while a frame still holds it: for a
    /// holder that only ever reads the latest picture written into it (`ColorConverter.inPlace`).
    public mutating func obtainShared(capacity: Int) -> FrameBuffer {
        if let kept = buffer, kept.capacity >= capacity { return kept }
        let fresh = FrameBuffer(capacity: capacity)
        buffer = fresh
        return fresh
    }
}
