import CaptureSources
import Capture
import Muxing
import Delivery
import X11Capture

/// The value words of options whose rows are written in modules that do not list them
/// (the kinds of source, the serving options), set on the command's table where it is
/// assembled; each read from the type that parses the value, so that the completions and
/// the man page cannot offer a word the parser refuses.
enum OptionValues {
    /// `--source`'s forms (`testsrc`, `x11:DISPLAY`, `y4m:PATH`...), and the words of the
    /// kinds' own options.
    static var sources: [String: [String]] {
        [
            "source": SourceKinds.all.flatMap { kind in kind.forms.map { $0.text } },
            "capture": X11CaptureMode.allCases.map(\.rawValue),
            "pix-fmt": PixelFormat.allCases.map(\.rawValue),
        ]
    }

    /// `--join`: what the role allows.
    static func serving(_ role: ServingChoice.Role) -> [String: [String]] {
        ["join": role.joinPolicies.map(\.rawValue)]
    }

    /// `--format`: the containers `-o` writes.
    static var formats: [String] { ContainerFormat.allCases.map(\.rawValue) }
}
