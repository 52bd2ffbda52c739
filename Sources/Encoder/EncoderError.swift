import Capture

/// What can go wrong in `H264Encoder`; each names the x264 call or parameter at fault.
public enum EncoderError: Error, Hashable, CustomStringConvertible {
    /// `x264_param_default_preset` refused the preset or tune.
    case badPresetOrTune(preset: String, tune: String?)
    /// `x264_param_apply_profile` refused the profile (or it cannot carry the settings).
    case badProfile(String)
    /// A parameter out of range (name and value).
    case badParameter(name: String, value: String)
    /// `x264_encoder_open` returned NULL (x264 logs why when a logger is set).
    case openFailed(width: Int, height: Int)
    /// `x264_encoder_encode` returned a negative value.
    case encodeFailed(code: Int32)
    /// `x264_encoder_reconfig` refused the new parameters.
    case reconfigFailed(code: Int32)
    /// The encoder takes I420 frames only (convert with `ColorConverter` first).
    case notI420(PixelFormat)

    public var description: String {
        switch self {
        case .badPresetOrTune(let preset, let tune): "x264_param_default_preset: bad preset '\(preset)' or tune '\(tune ?? "")'"
        case .badProfile(let p): "x264_param_apply_profile: bad profile '\(p)'"
        case .badParameter(let name, let value): "encoder: bad \(name) '\(value)'"
        case .openFailed(let w, let h): "x264_encoder_open failed for \(w)x\(h)"
        case .encodeFailed(let code): "x264_encoder_encode failed (\(code))"
        case .reconfigFailed(let code): "x264_encoder_reconfig failed (\(code))"
        case .notI420(let format): "encoder: input must be i420, got \(format)"
        }
    }
}
