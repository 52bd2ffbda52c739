/// A field of the YUV4MPEG2 stream header.
public enum Y4MField: String, Sendable, Hashable {
    case width, height
    case frameRate = "frame rate"
    case interlacing
    case aspect = "pixel aspect"
    case colourspace
}
