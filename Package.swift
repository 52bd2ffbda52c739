// swift-tools-version:6.0
// nalcast: a local H.264 streaming relay. docs/architecture.md has the picture.
import PackageDescription

let package = Package(
    name: "nalcast",
    products: [
        .executable(name: "nalcast", targets: ["nalcast"]),
    ],
    targets: [
        // C libraries, each behind a module map and a header of static inline shims.
        .systemLibrary(
            name: "CLibEV",
            providers: [.apt(["libev-dev"])]  // libev ships no pkg-config file: the module map links `ev`
        ),
        .systemLibrary(
            name: "CX264",
            // No pkgConfig: x264.pc's only flag, -DX264_API_IMPORTS (Windows DLL imports), is
            // one SwiftPM refuses with a warning on every build. The module map links `x264`.
            providers: [.apt(["libx264-dev"])]
        ),
        .systemLibrary(
            name: "CLibYUV",
            providers: [.apt(["libyuv-dev"])]  // no pkg-config file on Debian: the module map links `yuv`
        ),
        .systemLibrary(
            name: "CXCBShm",
            pkgConfig: "xcb-shm",
            providers: [.apt(["libxcb-shm0-dev", "libxcb-xfixes0-dev", "libxcb-randr0-dev", "libxcb-damage0-dev", "libxcb-xinput-dev"])]
        ),

        // PipeWire (libpipewire-0.3): a video stream on a thread loop of its own, in C (the
        // pod-building macros and callbacks are C only) behind a small API of our own. The
        // library is opened with dlopen when a PipeWire source starts, never linked; its
        // headers (libpipewire-0.3-dev) are reached through system/, two links to Debian's
        // /usr/include/pipewire-0.3 and /usr/include/spa-0.2 (a pkgConfig would link it, and
        // its -D_REENTRANT is refused with a warning on every build).
        .target(name: "CPipeWire", cSettings: [.headerSearchPath("system")]),
        // The ScreenCast portal over sd-bus (libsystemd0, on every systemd machine: small, no
        // GLib main loop to run beside ours), opened with dlopen like libpipewire.
        .target(name: "CPortal"),
        // wlroots' screencopy over libwayland-client (opened with dlopen, like libpipewire).
        .target(name: "CWlr"),

        // XTest (fake pointer motion), linked by the X11 tests only.
        .systemLibrary(
            name: "CXCBXTest",
            pkgConfig: "xcb-xtest",
            providers: [.apt(["libxcb-xtest0-dev"])]
        ),

        // libpulse-simple for the audio tests' player of beeps at known instants.
        .systemLibrary(
            name: "CPulsePlayback",
            providers: [.apt(["libpulse-dev"])]
        ),

        .systemLibrary(
            name: "CMedia",
            // No pkgConfig: FFmpeg's libavformat, libavcodec, libavutil and libswresample, and
            // libpulse, are opened with dlopen by one loader (libraries.h) when a container,
            // a media URL or `--audio` first needs them, never linked.
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libavutil-dev", "libswresample-dev", "libpulse-dev"])]
        ),

        // OpenSSL for the built-in TLS of --web and --metrics (libssl3 at run time).
        .systemLibrary(
            name: "CTLS",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),

        // WebRTC's DTLS (OpenSSL, linked as for TLS) and SRTP (libsrtp2, opened with dlopen when
        // the first WebRTC viewer comes: its header, libsrtp2-dev, at build time only).
        .target(name: "CWebRTC", linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]),

        .systemLibrary(name: "CLinux"),  // glibc's <malloc.h> (mallopt) and <sys/eventfd.h>: no library to link

        // Pure Swift layers.
        // The system's clocks, read in one place (monotonic and wall clock, a clock tests drive).
        .target(name: "Clocks"),
        // The one first-in first-out queue every queue that takes from the front is built on.
        .target(name: "FIFO"),
        // The media vocabulary every part shares, codec-neutral: access units and NAL units,
        // media time, the timestamp, audio packets, and what each codec's NAL headers say.
        .target(name: "Media", dependencies: ["FIFO"]),
        .target(name: "H264", dependencies: ["FIFO", "Media"]),
        // RTP and RTCP (RFC 3550) and H.264's RTP payload format (RFC 6184): packets parsed and
        // written, access units cut into payloads and put back together. Pure: the RTSP
        // client and WebRTC carry them.
        .target(name: "RTP", dependencies: ["Media"]),
        // nalcast's own RTSP client (RFC 2326) for `consume --from rtsp://`: the session
        // (authentication, keep-alive, TEARDOWN), RTP interleaved or over UDP, the SDP. The
        // packets go to the RTP module's depacketizers; libavformat is never loaded for it.
        // Digest authentication's MD5 is OpenSSL's (CTLS, linked for TLS already).
        .target(name: "RTSP", dependencies: ["Clocks", "CTLS", "IO", "Media", "RTP"]),
        // WebRTC's sender: ICE-lite (STUN), SDP offers and answers, DTLS-SRTP, RTCP feedback,
        // one UDP socket on the loop for every peer (WHEP viewers of the --web listener).
        .target(name: "WebRTC", dependencies: ["CWebRTC", "IO", "RTP", "Media", "Clocks", "Metrics"]),
        // WHIP push: the offering side over the WebRTC module, a forward transport (Output).
        .target(name: "WHIP", dependencies: ["Audio", "CMedia", "Clocks", "IO", "Media", "Metrics", "Output", "TLS", "WebRTC"]),
        // Prometheus metrics: counters, gauges, histograms and sampled series in one registry.
        .target(name: "Metrics"),
        .target(name: "Delivery", dependencies: ["Media", "Clocks", "FIFO"]),

        // Swift over C.
        .target(name: "IO", dependencies: ["CLibEV", "Clocks"]),
        // TLS over IO's Connection (a ByteTransport): OpenSSL, non-blocking on the loop.
        .target(name: "TLS", dependencies: ["CTLS", "IO"]),
        .target(name: "Capture", dependencies: ["CLibYUV", "CLinux", "Clocks"]),
        // The X11 screen (xcb, MIT-SHM, DAMAGE, XFixes cursor): a capture source of its own, so
        // that only what captures the screen links xcb.
        .target(name: "X11Capture", dependencies: ["Capture", "CXCBShm", "Clocks"]),
        // PipeWire video nodes (a Wayland compositor's screen cast, a camera): the other
        // capture source of its own, the only one linking libpipewire.
        .target(name: "PipeWireCapture", dependencies: ["Capture", "CPipeWire", "CPortal", "Clocks"]),
        // wlroots compositors' outputs without a portal (sway, Hyprland, river).
        .target(name: "WlrCapture", dependencies: ["Capture", "CWlr", "Clocks"]),
        .target(name: "Encoder", dependencies: ["CX264", "Media", "H264", "Capture"]),
        // The command line's vocabulary: the option table (`OptionSpec`, as data), its parser
        // (`ParsedOptions`, `NALCAST_*`), value formats, exit codes. Pure.
        .target(name: "CommandOptions"),
        // The kinds of capture source `produce --source` names, each described once.
        .target(name: "CaptureSources", dependencies: ["Capture", "X11Capture", "PipeWireCapture", "WlrCapture", "CommandOptions"]),

        // Wiring. Serving (the stream server and the HTTP endpoint) links no capture or encoder
        // library, so that a consumer can serve too.
        // Its MPEG-TS listener muxes through Muxing (libavformat, opened only when one is asked for).
        .target(name: "Serving", dependencies: ["Clocks", "Media", "Delivery", "Metrics", "IO", "Output", "Muxing", "WebRTC", "RTP"]),
        .target(name: "Pipeline", dependencies: ["Clocks", "Media", "Delivery", "Metrics", "IO", "Capture", "Encoder"]),
        // Where access units go (files, stdout, segments, a forward endpoint), for produce and consume.
        .target(name: "Output", dependencies: ["Clocks", "FIFO", "Media", "Delivery", "Metrics", "IO"]),
        .target(name: "Consumer", dependencies: ["Clocks", "Media", "H264", "Delivery", "Metrics", "IO", "Output", "Muxing", "RTP", "RTSP", "WebRTC", "Serving", "Audio"]),
        // Container files (MP4, MPEG-TS, Matroska, FLV) through libavformat's muxers: one more
        // AccessUnitSink, packets copied, never re-encoded.
        // And the other way: any H.264 source libavformat reads (container files, RTSP, SRT,
        // RTMP, UDP, HTTP) as access units for consume (`Demuxer`, read by Consumer's DemuxReader).
        // And nalcast's own RTMP publisher for `--forward rtmp://` (IO's sockets; no libavformat).
        .target(name: "Muxing", dependencies: ["Clocks", "FIFO", "CMedia", "Media", "H264", "Output", "IO"]),
        // Sound for produce: PulseAudio, WAV/raw PCM and a test tone mixed into one 48 kHz
        // stereo track, encoded to AAC-LC (libavcodec), timed on the video's clock.
        .target(name: "Audio", dependencies: ["Clocks", "CMedia", "Media", "Output", "Delivery", "Metrics", "IO"]),
        .executableTarget(name: "nalcast", dependencies: ["Clocks", "CLinux", "CommandOptions", "CaptureSources", "Audio", "Media", "H264", "Delivery", "Metrics", "IO", "Capture", "X11Capture", "Encoder", "Serving", "Pipeline", "Consumer", "Output", "Muxing", "TLS", "WebRTC", "WHIP"]),

        // Helpers the tests share: running ffmpeg, ffprobe and friends; the conformance streams
        // (Tests/Fixtures/h264/) and their facts.
        // Optimised even in the debug build: its analyses of decoded sound and pictures
        // (millions of samples) take minutes unoptimised, seconds optimised.
        .target(name: "TestSupport", dependencies: ["Clocks"], path: "Tests/TestSupport", swiftSettings: [.unsafeFlags(["-O"])]),
        // Blocking client sockets for the tests that talk to a server on a real event loop.
        .target(name: "LoopTestSupport", dependencies: ["IO"], path: "Tests/LoopTestSupport"),
        .testTarget(name: "CommandOptionsTests", dependencies: ["CommandOptions", "CaptureSources", "Capture"]),
        .testTarget(name: "H264Tests", dependencies: ["Media", "H264", "TestSupport"]),
        .testTarget(name: "RTPTests", dependencies: ["RTP", "Media"]),
        .testTarget(name: "RTSPTests", dependencies: ["RTSP", "RTP"]),
        .testTarget(name: "WebRTCTests", dependencies: ["WebRTC", "RTP", "Media", "IO", "LoopTestSupport"]),
        .testTarget(name: "DeliveryTests", dependencies: ["Delivery", "Metrics", "Clocks", "FIFO", "Media", "H264"]),
        .testTarget(name: "IOTests", dependencies: ["IO", "Media", "H264", "LoopTestSupport", "TestSupport"]),
        .testTarget(name: "ServingTests", dependencies: ["Serving", "IO", "Media", "H264", "Output", "Delivery", "Metrics", "LoopTestSupport", "TestSupport"]),
        .testTarget(name: "ConsumerTests", dependencies: ["Consumer", "Media", "H264", "Delivery", "Metrics", "Output"]),
        .testTarget(name: "OutputTests", dependencies: ["Output", "Delivery", "Metrics", "Media", "H264", "TestSupport"]),
        .testTarget(name: "CaptureTests", dependencies: ["Capture", "TestSupport"]),
        // The capture thread's hand-off to a real loop thread and server.
        .testTarget(name: "PipelineTests", dependencies: ["Pipeline", "Serving", "IO", "Delivery", "Metrics", "Media", "H264", "Capture", "TestSupport", "LoopTestSupport"]),
        .testTarget(name: "EncoderTests", dependencies: ["Encoder", "Media", "H264", "Capture", "TestSupport"]),
        // Screen capture under a real X server: each test starts its own Xvfb.
        .testTarget(name: "X11Tests", dependencies: ["Clocks", "Capture", "X11Capture", "Encoder", "Pipeline", "Media", "H264", "CXCBShm", "CXCBXTest", "nalcast", "TestSupport"]),
        // Wayland capture against real compositors: headless mutter with PipeWire and the portal,
        // headless sway for wlroots' screencopy, each started once by its suite
        // (TestSupport's MutterSession, SwaySession), checked with FFmpeg.
        .testTarget(name: "WaylandTests", dependencies: ["TestSupport"]),
        // Fuzz findings replayed (inputs in fuzz/regressions/).
        .testTarget(name: "ReliabilityTests", dependencies: ["Media", "H264", "Capture"]),
        // End-to-end: runs the built `nalcast` binary against real peers (ffmpeg, ffprobe, ...).
        .testTarget(name: "MuxingTests", dependencies: ["Muxing", "Output", "Media", "H264", "TestSupport"]),
        .testTarget(name: "CLITests", dependencies: ["nalcast", "TestSupport"]),
        // The real media servers the push and relay tests start (nginx-rtmp, srt-live-transmit,
        // GStreamer's RTSP server; TestSupport runs them), proven with FFmpeg as the client.
        .testTarget(name: "MediaServerTests", dependencies: ["TestSupport"]),
        // Sound captured from a private PulseAudio daemon each test starts, checked with FFmpeg.
        .testTarget(name: "AudioTests", dependencies: ["Audio", "Output", "Delivery", "Metrics", "Media", "H264", "CPulsePlayback", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)

// Release builds leave out the run-time checks of exclusive access (a class's stored property
// or a global being modified while it is read or modified elsewhere), as the Swift standard
// library's own build does. The compiler still proves what it can at build time, and the
// debug build the tests run keeps every run-time check, so an overlapping access is caught
// there. In a release build the checks were 16 % of the relay's instructions (a lookup in a
// thread-local access set for every touch of a server's or a connection's state, per
// access unit and reader): bench/README.md, "relay to 16 readers".

// Release builds lay out the functions the relay runs for every access unit side by side, in
// the order it first runs them (Sources/hot-functions.order, written by
// `ORDER=Sources/hot-functions.order bench/relay-footprint`): each function in a section of
// its own, lld placing the listed ones first. Run once every 33 ms, that code is out of the
// caches each time; packed together, the processor fetches it ahead instead of missing line
// after line across a 28 MB binary (bench/README.md, "relay to 16 readers: the code's
// footprint"). Names no longer in the program are passed over; the writer leaves out the
// symbols the toolchain's static libraries keep in one shared section, which lld could only
// move whole.
let packageDirectory = String(#filePath.dropLast("Package.swift".count))
for target in package.targets where target.type == .regular || target.type == .executable {
    target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-enforce-exclusivity=unchecked", "-Xfrontend", "-function-sections"],
                                                                        .when(configuration: .release))]
    if target.type == .executable {
        target.linkerSettings = (target.linkerSettings ?? []) + [.unsafeFlags([
            "-use-ld=lld", "-Xlinker", "--symbol-ordering-file=\(packageDirectory)Sources/hot-functions.order",
            "-Xlinker", "--no-warn-symbol-ordering",
        ], .when(configuration: .release))]
    }
}
