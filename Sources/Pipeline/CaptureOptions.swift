import Capture
import Encoder

/// Settings of a capture pipeline.
public struct CaptureOptions: Sendable {
    /// Encode at most this many frames a second (the pacer drops the rest); nil keeps
    /// every frame. The encoder's nominal rate is the lower of this and the source's.
    public var targetFrameRate: FrameRate? = FrameRate(30)
    /// Scale down so that the larger side is at most this many pixels.
    public var maxSize: Int?
    /// Stop after encoding this many frames.
    public var frameLimit: Int?
    /// Stop at this much media time, in seconds.
    public var durationLimit: Double?
    /// Encoder settings; width, height and frame rate are taken from the frames.
    public var encoder = H264Encoder.Parameters(width: 0, height: 0, frameRate: FrameRate(30))

    public init() {}
}
