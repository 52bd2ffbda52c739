import Audio
import CaptureSources
import CommandOptions
import IO

/// `nalcast man`: nalcast.1 in roff (man(7) macros), from the tables `--help` reads: each
/// command's usage, options, defaults and value words, the kinds of source, the audio
/// sources, the exit codes, the environment names.
enum ManPage {
    static func main(_ arguments: [String]) -> Int32 {
        guard arguments.isEmpty else {
            printError("man: unexpected argument '\(printable(arguments[0]))' (nalcast man prints the whole page: nalcast man | man -l -)")
            return ExitCode.usage.rawValue
        }
        printOut(page())
        return 0
    }

    /// An example of the EXAMPLES section; the tests run each one's nalcast commands.
    struct Example {
        let text: String
        let command: String
    }

    static let examples = [
        Example(text: "Ten seconds of the test pattern, encoded and piped into ffprobe:",
                command: "nalcast produce --duration 10s -o - | ffprobe -v error -f h264 -show_entries stream=codec_name,width,height -"),
        Example(text: "Serve the X11 screen on 127.0.0.1:7264 and watch it with the least delay:",
                command: "nalcast produce --source x11 &\nffplay -flags low_delay -probesize 32 -analyzeduration 0 -framerate 30 -f h264 tcp://127.0.0.1:7264"),
        Example(text: "The screen with the desktop's sound, as MPEG-TS, which players open with no options:",
                command: "nalcast produce --source x11 --audio monitor --listen ts:tcp://127.0.0.1:7265 &\nffplay tcp://127.0.0.1:7265"),
        Example(text: "The screen in a browser (open http://127.0.0.1:8080/):",
                command: "nalcast produce --source x11 --web tcp://127.0.0.1:8080"),
        Example(text: "Record the local stream into 5-minute MP4 segments, keeping the newest 288 (a day):",
                command: "nalcast consume --segments recordings --segment-duration 5m --keep 288"),
        Example(text: "Relay an IP camera to browsers, without re-encoding:",
                command: "nalcast consume --from rtsp://viewer:secret@camera.local:554/stream1 --web tcp://127.0.0.1:8080"),
        Example(text: "Is a stream there? (exit 69 when nothing decodable comes):",
                command: "nalcast probe --json tcp://127.0.0.1:7264"),
        Example(text: "One line per access unit of a second of the test pattern:",
                command: "nalcast produce --frames 30 -o - | nalcast inspect -"),
        Example(text: "Set options in the environment, as a service's environment file does:",
                command: "NALCAST_LISTEN=unix:/run/nalcast/live.sock NALCAST_FPS=25 nalcast produce --source x11"),
    ]

    static func page() -> String {
        var r = Roff()
        r.macro("TH", "NALCAST", "1", "", "nalcast \(Nalcast.version)", "User Commands")
        // No hyphenation (option and variable names must not break) and a ragged right edge.
        r.raw(".nh")
        r.raw(".ad l")
        r.section("NAME")
        r.raw("nalcast \\- move live H.264 video between processes: capture, encode, serve, relay and record it")
        r.section("SYNOPSIS")
        for (i, command) in Nalcast.commands.enumerated() {
            if i > 0 { r.raw(".br") }
            let head = "nalcast \(command.name)"
            // `\:` after each `|`: a place to break consume's long list of inputs.
            let rest = Roff.escaped(String(command.usage.dropFirst(command.usage.hasPrefix(head) ? head.count : 0)))
            r.raw("\\fB" + head + "\\fR" + rest.replacing("|", with: "|\\:"))
        }
        r.raw(".br")
        r.raw("\\fBnalcast help\\fR [\\fICOMMAND\\fR] | \\fBnalcast man\\fR | \\fBnalcast completions\\fR \\fBbash\\fR|\\fBzsh\\fR|\\fBfish\\fR | \\fBnalcast \\-\\-version\\fR")
        r.section("DESCRIPTION")
        r.text(description)
        r.section("COMMANDS")
        for command in Nalcast.commands { self.command(command, into: &r) }
        r.subsection("nalcast man")
        r.text("Prints this page (roff): nalcast man | man -l -")
        r.subsection("nalcast completions bash|zsh|fish")
        r.text("Prints the completions of the shell, made from the same option tables: commands, options, presets, profiles, formats, the kinds of --source (with the X displays of the machine) and --audio (with PulseAudio's sources, by pactl), file names where a value is a file.")
        sources(into: &r)
        r.section("ADDRESSES")
        r.text("Where nalcast listens (--listen, --web, --metrics) or what it connects to (--from, --forward, probe):")
        r.preformatted(addresses)
        r.text("Listening beyond loopback needs --allow-remote: the stream may show your screen.")
        r.section("EXIT STATUS")
        for code in ExitCode.allCases {
            r.tagged("\\fB\(code.rawValue)\\fR", code.meaning)
        }
        environment(into: &r)
        r.section("FILES")
        for (path, text) in files { r.tagged("\\fI" + Roff.escaped(path) + "\\fR", text) }
        r.section("EXAMPLES")
        for example in examples {
            r.text(example.text)
            r.preformatted(example.command.split(separator: "\n").map(String.init))
        }
        r.section("SEE ALSO")
        r.raw("\\fBffmpeg\\fR(1), \\fBffplay\\fR(1), \\fBffprobe\\fR(1), \\fBsystemd.exec\\fR(5); /usr/share/doc/nalcast/ (usage, operations and protocol notes).")
        return r.text
    }

    static let description = [
        "nalcast produce captures frames (the X11 screen, a built-in test pattern, raw or Y4M frames), encodes them with libx264 for low latency and serves a plain Annex-B H.264 stream on a local socket to any number of readers, a page that plays it in a browser, a file, or a media server (RTMP, SRT, RTSP, UDP); with --audio it adds an AAC track.",
        "nalcast consume reads such a stream, or any H.264 source libavformat reads (an RTSP camera, SRT, RTMP, UDP or TCP MPEG-TS, HTTP, MP4, MPEG-TS, Matroska or FLV files), without re-encoding, and writes it to a file or stdout, to crash-safe segment files, to remote endpoints, or serves it again to many readers (a relay).",
        "nalcast probe waits for the first decodable picture of a stream and reports it; nalcast inspect describes an Annex-B stream access unit by access unit.",
        "Every option can also be given in the environment as NALCAST_<OPTION> (see ENVIRONMENT). Durations take a unit: 500ms, 10s, 2m, 1h.",
    ]

    static let addresses = [
        "tcp://HOST:PORT        TCP (IPv6 as tcp://[::1]:PORT); produce listens on tcp://127.0.0.1:7264",
        "unix:PATH              a Unix socket",
        "ts:tcp://HOST:PORT     MPEG-TS instead of Annex-B (--listen; video and sound)",
        "ts:unix:PATH           the same on a Unix socket",
        "rtmp://HOST/APP/KEY    --forward: an RTMP push (rtmps:// too); --from: played",
        "srt://HOST:PORT        SRT (caller; ?mode=listener for --from, ?streamid=ID)",
        "rtsp://HOST/PATH       RTSP (push for --forward, play for --from; rtsps:// too)",
        "udp://HOST:PORT        MPEG-TS over UDP",
        "http(s)://...          --from: a stream or a file over HTTP",
        "whip-listen://HOST:PORT/PATH  --from: WebRTC publishers POST their WHIP offer there, one at a time",
        "FILE, -                --from, -o, inspect: a file, or stdin/stdout",
    ]

    static let files = [
        ("/usr/lib/systemd/user/nalcast-screen.service", "A user unit: serves the X11 screen of the session on 127.0.0.1:7264 (systemctl --user enable --now nalcast-screen.service)."),
        ("/usr/lib/systemd/user/nalcast-record.service", "A user unit: records what nalcast-screen.service serves into ~/Videos/nalcast, 5-minute segments, the newest 288 kept."),
        ("/usr/lib/systemd/system/nalcast.service", "A system unit, not enabled when installed: nalcast consume as the nalcast system user, every option from /etc/default/nalcast; as shipped it records the stream on 127.0.0.1:7264 into /var/lib/nalcast/segments (systemctl enable --now nalcast.service)."),
        ("/etc/default/nalcast", "The NALCAST_* options of nalcast.service, one a line."),
        ("/var/lib/nalcast", "The nalcast system user's home; its segments directory holds what nalcast.service records."),
    ]

    /// The options of one command, its notes and its environment example.
    static func command(_ command: any Command.Type, into r: inout Roff) {
        r.subsection("nalcast \(command.name)")
        r.text(command.summary)
        for spec in command.allSpecs {
            var tag = spec.short.map { "\\fB\\-\($0)\\fR, " } ?? ""
            tag += "\\fB" + Roff.escaped("--\(spec.name)") + "\\fR"
            if let value = spec.value { tag += " \\fI" + Roff.escaped(value) + "\\fR" }
            var text = spec.help
            if let d = spec.defaultText { text += " (default: \(d))" }
            if !spec.values.isEmpty && spec.values.count <= 12 && !spec.values.allSatisfy({ spec.help.contains($0) }) {
                text += ". Values: " + spec.values.joined(separator: ", ")
            }
            if spec.name != "help" { text += ". Environment: \(spec.environmentName)" }
            if spec.repeatable { text += "; repeatable" }
            r.tagged(tag, text + ".")
        }
        let notes = command.manNotes
        if !notes.isEmpty { r.preformatted(notes) }
    }

    /// SOURCES (--source) and AUDIO SOURCES (--audio), from the kinds' own notes.
    static func sources(into r: inout Roff) {
        r.section("SOURCES")
        r.text("What nalcast produce --source captures (default testsrc):")
        r.preformatted(SourceKinds.all.flatMap { $0.notes })
        for kind in SourceKinds.all where !kind.paragraph.isEmpty {
            r.text(kind.paragraph.joined(separator: " "))
        }
        r.section("AUDIO SOURCES")
        let notes = AudioPlan.notes
        // "audio sources (--audio, up to two, mixed into one 48 kHz stereo AAC-LC track):"
        let heading = notes.first ?? ""
        let inner = heading.firstRange(of: "(--audio, ").map { heading[$0.upperBound...].prefix { $0 != ")" } } ?? ""
        r.text("What nalcast produce --audio captures, " + inner + ":")
        r.preformatted(Array(notes.dropFirst()))
    }

    static func environment(into r: inout Roff) {
        r.section("ENVIRONMENT")
        r.text("Every option can also be given as NALCAST_ and its name in capitals, dashes as underscores (--segment-duration is NALCAST_SEGMENT_DURATION; 1 or 0 for a flag). Options on the command line win; a NALCAST_ name that is no option of any command gets a warning. For example:")
        r.preformatted(Nalcast.commands.map { $0.environmentExample })
        for command in Nalcast.commands {
            let names = command.specs.map(\.environmentName)
            r.tagged("\\fBnalcast \(command.name)\\fR", names.joined(separator: ", "))
        }
        r.tagged("\\fB\(SRTSecretChoice.environmentName)\\fR", "The SRT passphrase of --forward srt:// and --from srt:// (10 to 79 characters), when --srt-passphrase-file is not given: kept out of the command line, which ps shows.")
        r.tagged("\\fB\(WHIPChoice.environmentName)\\fR", "The bearer token of --forward whip:// (as --whip-token, which it is): kept out of the command line, which ps shows; never printed.")
        r.tagged("\\fBNALCAST_SEGMENT_PATH\\fR, \\fBNALCAST_SEGMENT_FRAMES\\fR, \\fBNALCAST_SEGMENT_BYTES\\fR", "Set by consume --on-segment for its command: the finished segment, its pictures and bytes.")
        r.tagged("\\fBDISPLAY\\fR", "The X display of --source x11.")
        r.tagged("\\fBPULSE_SERVER\\fR", "The sound server of --audio monitor, mic and pulse:NAME (PulseAudio or PipeWire's pulse server).")
    }
}
