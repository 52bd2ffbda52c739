import Foundation

/// The command lines whose output `CLIContractTests` keeps: help, `--dry-run` of every
/// source kind, listener, output and forward form, and bad invocations with their exit code.
/// Paths are relative to the test's directory (`ContractInputs`).
enum ContractCases {
    static let commands = ["produce", "probe", "inspect", "consume"]

    static var help: [ContractCase] {
        ["--help", "-h", "help"].map { ContractCase($0) }
            + ["--version", "-V", "version"].map { words in
                // The libraries' versions are the machine's: their names and columns are kept.
                var c = ContractCase(words)
                c.libraryVersionsMasked = true
                return c
            }
            + commands.flatMap { c in ["help \(c)", "\(c) --help", "\(c) -h"].map { ContractCase($0) } }
    }

    static var produceDryRuns: [ContractCase] {
        [
            ContractCase("produce --dry-run"),
            ContractCase("produce --dry-run --size 640x360 --fps 29.97 --keyint 60 --bitrate 2M --vbv-ms 1000 --preset ultrafast --tune none --profile baseline --threads 2 --max-size 320 --frames 100 --duration 10s --flash -o out.h264"),
            ContractCase("produce --dry-run --profile main --tune film,fastdecode --keyint 500ms --fps 12.5 --no-realtime -o out.ts"),
            ContractCase("produce --dry-run --source y4m:in.y4m --no-realtime --keyint 1s -o out.mp4"),
            ContractCase("produce --dry-run --source y4m:- --realtime -o -"),
            ContractCase("produce --dry-run --source raw:in.yuv --input-size 160x120 --pix-fmt nv12 --input-fps 30000/1001 -o out.mkv"),
            ContractCase("produce --dry-run --source raw:- --input-size 1920x1080 --pix-fmt bgra --max-size 640 --format ts -o -"),
            ContractCase("produce --dry-run --source x11"),
            ContractCase("produce --dry-run --source x11:77.1 --region 0,0,640x480 --no-cursor --capture fixed --idle-fps 2"),
            ContractCase("produce --dry-run --source x11:host:0.0 --idle-fps 0 --max-size 1280 --size 640x360"),
            ContractCase("produce --dry-run --source y4m:in.y4m --size 640x360 --input-size 64x48 --region 0,0,2x2 -o out.flv"),
            ContractCase("produce --dry-run --source pipewire:42 --idle-fps 5 --portal-token none"),
            ContractCase("produce --dry-run --source pipewire:nalcast-camera --idle-fps 0 --region 0,0,64x64"),
            ContractCase("produce --dry-run --source portal"),
            ContractCase("produce --dry-run --source portal --portal-token state/token --portal-sources any --no-cursor --idle-fps 2 --capture fixed"),
            ContractCase("produce --dry-run --source wlr --no-cursor --idle-fps 0.5 --portal-token none"),
            ContractCase("produce --dry-run --source wlr:HDMI-A-1"),
            ContractCase("produce --dry-run --source screen"),
            ContractCase("produce --dry-run --source screen --portal-token none", env: ["WAYLAND_DISPLAY": "wayland-1", "DISPLAY": ":77"]),
            ContractCase("produce --dry-run --source screen --region 0,0,640x480 --portal-token none", env: ["DISPLAY": ":77"]),
            ContractCase("produce --dry-run --listen tcp://127.0.0.1:7265 --listen ts:tcp://127.0.0.1:7266 --listen unix:live.sock --listen ts:unix:live-ts.sock --web tcp://127.0.0.1:8080 --join gop --idr-min-interval 1s --reader-lag 1s --reader-max-bytes 4M --reader-timeout 5s --max-readers 4 --metrics tcp://127.0.0.1:9100 --events events.jsonl"),
            ContractCase("produce --dry-run --listen tcp://0.0.0.0:7264 --web tcp://0.0.0.0:8080 --metrics tcp://0.0.0.0:9100 --allow-remote --join next"),
            ContractCase("produce --dry-run --web tcp://127.0.0.1:8080"),
            ContractCase("produce --dry-run --web unix:page.sock --listen tcp://127.0.0.1:0 --listen ts:tcp://127.0.0.1:0"),
            ContractCase(["produce", "--dry-run", "--forward", "rtmp://user:secret@media.example/live/streamkey", "--forward", "rtmps://media.example:443/app/key2",
                          "--forward", "srt://media.example:9000?streamid=publish:cam&passphrase=topsecret", "--forward", "rtsp://user:pw@media.example:8554/cam",
                          "--forward", "udp://239.0.0.1:5000", "--forward", "tcp://127.0.0.1:7300", "--forward", "unix:fwd.sock"]),
            ContractCase("produce --dry-run --forward srt://media.example:9000 --listen tcp://127.0.0.1:7264 -o out.flv"),
            ContractCase("produce --dry-run --forward whip://media.example:8889/cam/whip --forward http://127.0.0.1:8080/whip?key=k --whip-token tok-secret"),
            ContractCase("produce --dry-run --forward whip://media.example/cam/whip", env: ["NALCAST_WHIP_TOKEN": "tok-secret"]),
            ContractCase("produce --dry-run --forward https://media.example/cam/whip"),
            ContractCase("produce --dry-run --audio tone"),
            ContractCase("produce --dry-run --source y4m:in.y4m --audio monitor --audio mic --audio-bitrate 96k -o out.mp4"),
            ContractCase("produce --dry-run --audio pulse:alsa_input.usb-mic --audio wav:in.wav -o out.ts"),
            ContractCase("produce --dry-run --audio raw:in.pcm --audio-format f32le:44100:1 --audio wav:- --listen ts:tcp://127.0.0.1:7265"),
            ContractCase("produce --dry-run", env: ["NALCAST_LISTEN": "ts:tcp://127.0.0.1:7270", "NALCAST_KEYINT": "1s", "NALCAST_AUDIO": "tone",
                                                    "NALCAST_REALTIME": "0", "NALCAST_SOURCE": "y4m:in.y4m"]),
            ContractCase("produce --fps 50 --dry-run -o -", env: ["NALCAST_FPS": "25", "NALCAST_SIZE": "320x240", "NALCAST_FLASH": "1"]),
            ContractCase("produce --dry-run -o -", env: ["NALCAST_LISTN": "tcp://127.0.0.1:7265", "NALCAST_SEGMENTS": "seg", "NALCAST_SEGMENT_PATH": "x"]),
            ContractCase("produce --dry-run -q -o -", env: ["NALCAST_LISTN": "tcp://127.0.0.1:7265"]),
            ContractCase("produce --listen tcp://0.0.0.0:7264 --dry-run", env: ["NALCAST_ALLOW_REMOTE": "1"]),
        ]
    }

    static var consumeDryRuns: [ContractCase] {
        let forwards = ["--forward", "tcp://127.0.0.1:7300", "--forward", "unix:fwd.sock", "--forward", "rtmp://user:secret@media.example/live/key",
                        "--forward", "srt://media.example:9000?streamid=publish:cam&passphrase=topsecret", "--forward", "rtsp://user:pw@media.example:8554/cam",
                        "--forward", "udp://239.0.0.1:5000", "--forward", "whip://media.example:8889/cam/whip", "--whip-token", "tok-secret"]
        return [
            ContractCase("consume --dry-run -o -"),
            ContractCase("consume --dry-run --from in.h264 -o out.mp4"),
            ContractCase("consume --dry-run --from a.mp4 -o out.mkv"),
            ContractCase("consume --dry-run --from a.ts -o out.ts"),
            ContractCase("consume --dry-run --from a.mkv -o -"),
            ContractCase("consume --dry-run --from a.flv --format flv -o out.bin"),
            ContractCase("consume --dry-run --from - --segments seg"),
            ContractCase(["consume", "--dry-run", "--from", "unix:live.sock", "--segments", "seg", "--segment-duration", "4s", "--segment-max-bytes", "10M",
                          "--segment-name", "cam-%n.ts", "--keep", "10", "--on-segment", "upload --fast", "--no-fsync"]),
            ContractCase("consume --dry-run --segments seg --segment-name day-%Y%m%d-%n.mkv"),
            ContractCase("consume --dry-run --segments seg --segment-name raw-%n.h264 --segment-max-bytes 64k"),
            ContractCase("consume --dry-run --segments seg --segment-name cam-%n.flv --keep 2"),
            ContractCase("consume --dry-run --from rtsp://viewer:secret@camera.local:554/stream1 --rtsp-transport udp --web tcp://127.0.0.1:8080"),
            ContractCase(["consume", "--dry-run", "--from", "srt://0.0.0.0:9998?mode=listener", "--listen", "tcp://0.0.0.0:7265", "--allow-remote"]),
            ContractCase("consume --dry-run --from rtmp://media.example/live/key -o out.flv --stall-timeout 2s"),
            ContractCase("consume --dry-run --from whip-listen://127.0.0.1:8090/ingest/studio --web tcp://127.0.0.1:8080 --reconnect-timeout 1m"),
            ContractCase(["consume", "--dry-run", "--from", "whip-listen://0.0.0.0:8090", "-o", "out.ts", "--allow-remote"]),
            ContractCase("consume --dry-run --from udp://239.0.0.1:5000 -o -"),
            ContractCase("consume --dry-run --from ts:tcp://127.0.0.1:7265 -o out.ts --listen ts:tcp://127.0.0.1:7266"),
            ContractCase("consume --dry-run --from ts:unix:live-ts.sock -o out.mp4"),
            ContractCase("consume --dry-run --from http://media.example/live.ts -o -"),
            ContractCase("consume --dry-run --from https://user:pw@media.example/cam.flv --segments seg --segment-name c-%n.mp4"),
            ContractCase(["consume", "--dry-run", "--from", "tcp://127.0.0.1:7264"] + forwards + ["--reconnect-timeout", "30s"]),
            ContractCase("consume --dry-run --from in.h264 --reconnect-timeout 0 --forward tcp://127.0.0.1:7300"),
            ContractCase("consume --dry-run --from in.h264 --listen tcp://127.0.0.1:7265 --listen ts:tcp://127.0.0.1:7266 --web tcp://127.0.0.1:8080 --join next --reader-lag 1s --reader-max-bytes 1M --reader-timeout 3s --max-readers 2 --no-realtime"),
            ContractCase("consume --dry-run --from in.h264 --realtime -o - --sink-queue 16M --frame-rate 25 --max-nal-size 4M --stop-timeout 3s --stats --metrics tcp://127.0.0.1:9100 --events events.jsonl"),
            ContractCase("consume --dry-run", env: ["NALCAST_FROM": "tcp://127.0.0.1:7264", "NALCAST_SEGMENTS": "seg", "NALCAST_SEGMENT_DURATION": "1m",
                                                    "NALCAST_SEGMENT_NAME": "cam-%n.mp4", "NALCAST_FSYNC": "0"]),
            ContractCase("consume --dry-run -o -", env: ["NALCAST_SEGMENT_DURATON": "1m", "NALCAST_SEGMENT_PATH": "x", "NALCAST_KEYINT": "2s"]),
            ContractCase("probe --dry-run"),
            ContractCase("probe --dry-run --json --seconds 2 --timeout 3s unix:live.sock"),
            ContractCase("probe --dry-run -q --seconds 0.5 tcp://127.0.0.1:7265"),
            ContractCase("probe --dry-run", env: ["NALCAST_TIMEOUT": "2s", "NALCAST_JSON": "1"]),
        ]
    }

    /// What `inspect` says of a conformance stream (two IDRs, end of sequence and of stream).
    static var inspect: [ContractCase] {
        [ContractCase("inspect conf.264"), ContractCase("inspect --summary conf.264"), ContractCase("inspect --json --summary conf.264"),
         ContractCase("inspect --json in.h264")]
    }

    /// Bad invocations: usage (64), bad data (65), missing input (66), something not there
    /// (69: a port in use, `busy`; a port that refuses, `refused`; no sound server, no X
    /// server) and I/O (74). Each says one line (`nalcast` alone prints the help).
    static func errors(busy: Int, refused: Int) -> [ContractCase] {
        let ports = [("127.0.0.1:\(busy)", "127.0.0.1:BUSY"), ("127.0.0.1:\(refused)", "127.0.0.1:REFUSED")]
        func c(_ words: String, env: [String: String] = [:]) -> ContractCase { ContractCase(words, env: env, masks: ports) }
        return usageErrors.map { c($0) } + [
            c("produce --dry-run", env: ["NALCAST_FPS": "abc"]),
            ContractCase(["consume", "--segments", "seg", "--segment-name", ""]),
            c("consume --dry-run -o -", env: ["NALCAST_JOIN": "idr", "NALCAST_LISTEN": "tcp://127.0.0.1:7265"]),
            // Bad input data (65).
            c("produce -q --source y4m:bad.y4m -o out.h264"),
            c("produce -q --source y4m:trunc.y4m -o out.h264"),
            c("produce -q --source raw:short.yuv --input-size 160x120 -o out.h264"),
            c("produce -q --frames 1 --audio wav:notwav.wav -o out.ts"),
            c("consume --from in.y4m -o -"),
            c("inspect a.mp4"),
            c("inspect in.y4m"),
            // Missing input (66).
            c("produce -q --source y4m:missing.y4m -o out.h264"),
            c("produce -q --source raw:missing.yuv --input-size 160x120 -o out.h264"),
            c("produce -q --source y4m:seg -o out.h264"),
            c("produce -q --frames 1 --audio wav:missing.wav -o out.ts"),
            c("consume --from missing.h264 -o -"),
            c("inspect missing.h264"),
            // Not there (69).
            c("produce -q --frames 1 --audio monitor -o out.ts"),
            c("produce -q --frames 1 --audio pulse:alsa_input.usb-mic -o out.ts"),
            {
                var x11 = c("produce -q --source x11:9876 -o out.h264")
                x11.machineDependentAfter = "no X server there"
                return x11
            }(),
            c("produce -q --source pipewire:42 -o out.h264"),
            c("produce -q --source portal --portal-token none -o out.h264"),
            c("produce -q --source wlr -o out.h264"),
            c("produce -q --listen tcp://127.0.0.1:\(busy)"),
            c("produce -q --listen ts:tcp://127.0.0.1:\(busy)"),
            c("produce -q --web tcp://127.0.0.1:\(busy)"),
            c("produce -q --metrics tcp://127.0.0.1:\(busy) -o out.h264 --frames 1"),
            c("consume -q --from in.h264 --listen tcp://127.0.0.1:\(busy)"),
            c("consume -q --from in.h264 --web tcp://127.0.0.1:\(busy)"),
            c("probe --timeout 1s tcp://127.0.0.1:\(refused)"),
            c("consume --from tcp://127.0.0.1:\(refused) --reconnect-timeout 0 -o out.h264"),
            // I/O (74).
            c("produce -q --frames 1 -o nodir/out.h264"),
            c("produce -q --frames 1 --events nodir/events.jsonl -o out.h264"),
            c("consume -q --from in.h264 -o nodir/out.h264"),
        ]
    }

    static let usageErrors = [
        "", "frobnicate", "help frobnicate", "man extra", "completions", "completions tcsh", "completions bash zsh",
        "produce --nope", "produce --fps", "produce extra", "produce --duration 10 -o -", "produce --fps 0 -o -",
        "produce --source nope", "produce --source raw:in.yuv", "produce --source y4m:", "produce --source x11:screen -o -",
        "produce --source pipewire: -o -", "produce --source wlr: -o -", "produce --source portal --portal-sources screen -o -", "produce --source portal --idle-fps 0.001 -o -",
        "produce --size 641x480 -o -", "produce -q --size 64x48 --frames 1 -o out.h264",
        "produce --preset warp -o -", "produce --profile high10 -o -", "produce --tune nope -o -", "produce --keyint 0 -o -",
        "produce --bitrate 5k -o -", "produce --idr-min-interval soon", "produce --reader-max-bytes 1k", "produce --max-readers 0",
        "produce -o - --events -", "produce --format mp4 -o -", "produce --format avi -o out.avi", "produce --format ts",
        "produce --listen tcp://0.0.0.0:7264", "produce --listen tcp://127.0.0.1:7265 --listen tcp://127.0.0.1:7265",
        "produce --listen http://127.0.0.1:7265", "produce --web tcp://0.0.0.0:8080", "produce --metrics tcp://0.0.0.0:9100 -o -",
        "produce --forward ftp://media.example/x", "produce --forward https://media.example/whip --whip-ca missing-ca.pem", "produce --forward whip://tok@media.example/whip",
        "produce --forward whip://media.example:99999/whip", "produce --forward whip:///whip", "produce --forward rtmp://user:secret@", "produce --forward tcp://127.0.0.1",
        "produce --audio nope", "produce --audio tone --audio tone", "produce --audio tone --audio mic --audio monitor",
        "produce --audio tone --audio-bitrate 1k", "produce --audio-format s16le:48000:2", "produce --audio raw:in.pcm --audio-format s8:48000:2",
        "produce --source y4m:- --audio wav:-",
        "consume", "consume extra -o -", "consume --from tcp://127.0.0.1:7264 --listen tcp://127.0.0.1:7265 --join idr",
        "consume --from ftp://media.example/x -o -", "consume --from rtsp:///x -o -", "consume --from ts:udp://127.0.0.1:5000 -o -",
        "consume --rtsp-transport sctp -o -", "consume --keep 3 -o -",
        "consume --from whip-listen://127.0.0.1:8090/whip/ -o -", "consume --from whip-listen://127.0.0.1/whip -o -", "consume --from whip-listen://0.0.0.0:8090/whip -o -",
        "consume --format mp4 -o -", "consume -o - --events -", "consume --segment-duration 0s --segments seg",
        "consume --listen tcp://0.0.0.0:7265", "consume --sink-queue lots -o -",
        "probe a b", "probe --timeout 0s", "probe http://127.0.0.1:7264", "inspect", "inspect a b", "inspect --json",
    ]
}
