/// A C library's handle that a source shares with the frames pointing into memory behind it
/// (a compositor's shared buffers, PipeWire's): a frame's release gives its buffer back
/// through the handle, so it is closed only once the source and every such frame are gone.
///
/// Not `Sendable`: it lives and dies on the capture thread with its source and frames.
public final class SharedHandle {
    public let pointer: OpaquePointer
    private let close: (OpaquePointer) -> Void

    public init(_ pointer: OpaquePointer, close: @escaping (OpaquePointer) -> Void) {
        self.pointer = pointer
        self.close = close
    }

    deinit { close(pointer) }
}
