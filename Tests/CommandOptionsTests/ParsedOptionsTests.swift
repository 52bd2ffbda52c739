import Capture
import CaptureSources
import CommandOptions
import Testing

/// The command line's parser: arguments against an option table, the environment under them.
@Suite struct ParsedOptionsTests {
    static let specs = [
        OptionSpec(name: "listen", value: "ADDR", help: "serve on ADDR"),
        OptionSpec(name: "forward", value: "URL", help: "push to URL", repeatable: true),
        OptionSpec(name: "output", value: "FILE", help: "write to FILE", short: "o"),
        OptionSpec(name: "stall-timeout", value: "DURATION", help: "stalled after", defaultText: "5s"),
        OptionSpec(name: "realtime", value: nil, help: "pace a file"),
        OptionSpec(name: "quiet", value: nil, help: "errors only", short: "q"),
    ]

    func parse(_ arguments: [String], _ environment: [String: String] = [:]) throws -> ParsedOptions {
        try ParsedOptions.parse(arguments, specs: Self.specs, environment: environment, command: "consume")
    }

    func usageMessage(_ arguments: [String], _ environment: [String: String] = [:]) -> String? {
        do {
            _ = try parse(arguments, environment)
            return nil
        } catch let error as CommandError {
            #expect(error.code == .usage)
            return error.message
        } catch {
            return "\(error)"
        }
    }

    @Test func theCommandLineWinsOverTheEnvironmentWhichFillsTheRest() throws {
        let o = try parse(["--listen=tcp://127.0.0.1:1", "-oout.ts", "-q", "in"],
                          ["NALCAST_LISTEN": "tcp://127.0.0.1:2", "NALCAST_STALL_TIMEOUT": "2s", "NALCAST_REALTIME": "1"])
        #expect(o.string("listen") == "tcp://127.0.0.1:1")
        #expect(o.string("output") == "out.ts")
        #expect(o.has("quiet") && o.has("realtime"))
        #expect(o.positionals == ["in"])
        #expect(o.label("listen") == "--listen tcp://127.0.0.1:1")
        #expect(o.label("stall-timeout") == "NALCAST_STALL_TIMEOUT=2s")
        #expect(try o.duration("stall-timeout") == 2)
    }

    @Test func aFlagTurnedOffOnTheCommandLineStaysOffWhateverTheEnvironmentSays() throws {
        let off = try parse(["--no-realtime"], ["NALCAST_REALTIME": "1"])
        #expect(!off.has("realtime") && off.isOff("realtime"))
        let offByValue = try parse(["--realtime=off"])
        #expect(!offByValue.has("realtime") && offByValue.isOff("realtime"))
        let offByEnvironment = try parse([], ["NALCAST_REALTIME": "0"])
        #expect(!offByEnvironment.has("realtime") && offByEnvironment.isOff("realtime"))
    }

    @Test func aRepeatableOptionKeepsEveryValueInOrder() throws {
        let o = try parse(["--forward", "rtmp://a/live/x", "--", "--forward", "-"], ["NALCAST_FORWARD": "srt://c:1"])
        #expect(o.strings("forward") == ["rtmp://a/live/x"])
        #expect(o.positionals == ["--forward", "-"])
        #expect(try parse([], ["NALCAST_FORWARD": "srt://c:1"]).strings("forward") == ["srt://c:1"])
        #expect(try parse(["--forward", "a", "--forward", "b"]).strings("forward") == ["a", "b"])
    }

    @Test func badInvocationsAreOneUsageLineNamingTheOption() {
        #expect(usageMessage(["--lisen", "x"]) == "consume: unknown option '--lisen' (see 'nalcast consume --help')")
        #expect(usageMessage(["-x"]) == "consume: unknown option '-x' (see 'nalcast consume --help')")
        #expect(usageMessage(["--listen"]) == "consume: option '--listen' needs a value (ADDR)")
        #expect(usageMessage(["--quiet=maybe"]) == "consume: option '--quiet' takes no value")
        #expect(usageMessage([], ["NALCAST_QUIET": "maybe"]) == "invalid value 'maybe' for NALCAST_QUIET (expected 1 or 0)")
    }

    @Test func durationsNeedAUnitAndNameTheOptionWhenWrong() throws {
        func message(_ text: String, minimum: Double = 0, above: Bool = false) -> String? {
            do {
                _ = try parse(["--stall-timeout", text]).duration("stall-timeout", minimum: minimum, above: above)
                return nil
            } catch let error as CommandError { return error.message } catch { return "\(error)" }
        }
        #expect(try parse(["--stall-timeout", "1.5s"]).duration("stall-timeout") == 1.5)
        #expect(try parse(["--stall-timeout", "250ms"]).duration("stall-timeout") == 0.25)
        #expect(try parse(["--stall-timeout", "2m"]).duration("stall-timeout") == 120)
        #expect(try parse(["--stall-timeout", "0"]).duration("stall-timeout") == 0)
        #expect(message("10") == "--stall-timeout 10: add a unit: 10s, 500ms, 2m")
        #expect(message("soon") == "--stall-timeout soon: expected a duration such as 500ms, 10s, 2m or 1h")
        #expect(message("0", above: true) == "--stall-timeout 0: must be more than 0 s")
        #expect(message("100ms", minimum: 0.5) == "--stall-timeout 100ms: must be at least 0.5 s")
        #expect(try parse(["--stall-timeout", "3"]).duration("stall-timeout", bareUnit: 1) == 3)
    }

    @Test func valueFormats() {
        #expect(ValueFormat.quantity("6M") == 6_000_000)
        #expect(ValueFormat.quantity("6000k") == 6_000_000)
        #expect(ValueFormat.quantity("-1") == nil)
        #expect(ValueFormat.byteSize("8M") == 8 << 20)
        #expect(ValueFormat.frameSize("1280x720").map { [$0.width, $0.height] } == [1280, 720])
        #expect(ValueFormat.frameSize("0x720") == nil)
        #expect(ValueFormat.duration("12") == .bare(12))
    }

    /// What a man page or a shell completion reads from the table.
    @Test func eachOptionIsDataItsEnvironmentNameAndValueKindIncluded() {
        let table = Dictionary(uniqueKeysWithValues: Self.specs.map { ($0.name, $0) })
        #expect(table["stall-timeout"]?.environmentName == "NALCAST_STALL_TIMEOUT")
        #expect(table["stall-timeout"]?.valueKind == .duration)
        #expect(table["output"]?.valueKind == .file)
        #expect(table["listen"]?.valueKind == .address)
        #expect(table["quiet"]?.valueKind == .flag)
        #expect(OptionSpec(name: "rtsp-transport", value: "tcp|udp", help: "").valueKind == .choice(["tcp", "udp"]))
    }

    /// The words a shell completes: the row's own, else a choice's; a table assembled from
    /// parts gets them by name.
    @Test func valueWordsAreTheRowsOwnOrTheChoices() {
        #expect(OptionSpec(name: "join", value: "POLICY", help: "", values: ["gop", "next"]).completionValues == ["gop", "next"])
        #expect(OptionSpec(name: "rtsp-transport", value: "tcp|udp", help: "").completionValues == ["tcp", "udp"])
        #expect(OptionSpec(name: "listen", value: "ADDR", help: "").completionValues.isEmpty)
        let table = Self.specs.withValues(["output": ["-"], "nope": ["x"]])
        #expect(table.map(\.name) == Self.specs.map(\.name))
        #expect(table.first { $0.name == "output" }?.values == ["-"])
        #expect(table.filter { !$0.values.isEmpty }.count == 1)
    }
}

/// `--source`: the kinds of capture source, walked as a list.
@Suite struct SourceKindsTests {
    func plan(_ arguments: [String]) throws -> (source: any PlannedSource, warnings: [String]) {
        let specs = [SourceKinds.sourceSpec, OptionSpec(name: "realtime", value: nil, help: "")] + SourceKinds.specs
        let o = try ParsedOptions.parse(arguments, specs: specs, environment: [:], command: "produce")
        return try SourceKinds.plan(o.string("source") ?? "testsrc", o, fps: FrameRate(30))
    }

    @Test func anotherKindsOptionIsWarnedAboutAndTheKindReadsItsOwn() throws {
        let (source, warnings) = try plan(["--source", "raw:-", "--input-size", "320x240", "--region", "0,0,64x64"])
        #expect(source.readsStdin)
        #expect(source.frame.map { [$0.width, $0.height] } == [320, 240])
        #expect(warnings == ["produce: warning: --region 0,0,64x64 is ignored: it is for --source x11, not raw:-"])
    }

    @Test func aKindReadsTheOptionsItSharesWithAnotherWithoutAWarning() throws {
        // --idle-fps and --cursor are X11's options, and mean the same for PipeWire and the portal.
        let pipewire = try plan(["--source", "pipewire:42", "--idle-fps", "5", "--region", "0,0,64x64"])
        #expect(pipewire.source.dryRunLines == ["pipewire: node=42 cursor=from metadata capture: on change idle-fps=5"])
        #expect(pipewire.warnings == ["produce: warning: --region 0,0,64x64 is ignored: it is for --source x11, not pipewire:42"])
        let portal = try plan(["--source", "portal", "--no-cursor", "--portal-token", "none", "--portal-sources", "window"])
        #expect(portal.warnings.isEmpty)
        #expect(portal.source.dryRunLines.first == "portal: sources=window cursor=hidden token=none (ask every time)")
        #expect((try? plan(["--source", "pipewire:"])) == nil, "pipewire: needs a node")
        let named = try plan(["--source", "wlr:HEADLESS-2", "--idle-fps", "0"])
        #expect(named.source.dryRunLines == ["wlr: display=$WAYLAND_DISPLAY output=HEADLESS-2 cursor=on capture: on change idle-fps=0 (no keep-alive)"])
        #expect((try? plan(["--source", "wlr:"])) == nil, "wlr: needs an output name")
    }

    @Test func anUnknownSourceListsEveryForm() {
        #expect(throws: CommandError.self) { try plan(["--source", "v4l2"]) }
        do {
            _ = try plan(["--source", "v4l2"])
        } catch let error as CommandError {
            #expect(error.message == "--source v4l2: expected testsrc, y4m:PATH, raw:PATH, x11, x11:DISPLAY (e.g. x11:0), pipewire:NODE (e.g. pipewire:42), portal, wlr, wlr:NAME (e.g. wlr:HDMI-A-1) or screen")
        } catch {}
        #expect((try? plan(["--source", "raw:-"])) == nil, "raw: needs --input-size")
    }
}
