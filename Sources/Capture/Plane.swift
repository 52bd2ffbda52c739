/// Where one plane sits in a frame's buffer.
public struct Plane: Sendable, Hashable {
    /// Byte offset of the first row from the start of the buffer.
    public let offset: Int
    /// Bytes from one row to the next.
    public let stride: Int
    /// Number of rows.
    public let rows: Int

    public init(offset: Int, stride: Int, rows: Int) {
        self.offset = offset
        self.stride = stride
        self.rows = rows
    }
}
