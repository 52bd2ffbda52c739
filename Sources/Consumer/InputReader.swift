/// A reader of `consume`'s input on a thread of its own (`DemuxReader`, `RTSPReader`): what
/// the end of a run needs of it.
public protocol InputReader: AnyObject, Sendable {
    /// Ends any wait at once; the reader's thread finishes.
    func stop()
    /// Waits for the reader's thread to end.
    func join()
}

extension DemuxReader: InputReader {}
extension RTSPReader: InputReader {}
