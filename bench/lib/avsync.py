"""avsync: A/V sync of a recording with sound, and what sound costs, beside FFmpeg.

Sync. A recording is made of a scene that flashes and beeps at the same instants, each
whole second of CLOCK_REALTIME:
- nalcast's own: `produce --source testsrc --flash --audio tone` (the white frame is the
  one captured at the second, the beep's first sample is the second);
- the screen: an Xvfb whose root `c/flasher.c` paints white at each second while it starts
  a beep playing at that instant into a private PulseAudio's null sink, recorded by
  `ffmpeg -f x11grab ... -f pulse -i SINK.monitor` and by `nalcast produce --source x11
  --audio monitor`.
The analysis (`analyse`, also `python3 bench/lib/avsync.py FILE`) decodes the file with
ffmpeg: the video's mean luma per frame (signalstats) gives the flash frames (first frame
of each bright run) with their presentation times; the audio (mono 48 kHz, gaps filled
from the timestamps by aresample=async) gives the beep onsets (the first sample reaching
half of the beep's peak after 0.5 s of quiet: within 0.1 ms of the tone's start, AAC's
pre-echo stays below it). Each beep is paired with the flash within 0.5 s of it; the
offset is beep minus flash (positive: sound late). Reported: pairs, max |offset|, mean,
and the drift, the slope of a least-squares line through the offsets (ms per minute).
A screen grab sees a paint at the first grab after it: the x11 rows' flashes are late by
0 to 1 frame interval (mean half of one), so their offsets read about -17 ms lower at
30 fps with perfect sync; the testsrc row has no such term (its flash is the frame of
the second).

Length: 10 s; --quick 2 s at 320x240 (without the second FFmpeg row); NALCAST_AVSYNC_SECONDS=600 for the 10-minute run of issue 17.

Cost: the 1080p ultrafast producer with and without sound (testsrc with and without
`--audio tone`, the Xvfb screen with and without `--audio monitor` while the flasher
plays), and FFmpeg x11grab+libx264 with and without `-f pulse` + AAC, each for 10 s
(--quick: 2 s at 320x240, one row of each kind) into a Matroska file, under the rusage launcher: CPU s, peak
RSS. The notes give what sound adds: CPU % of a core and MiB (issue 17: <= 2 %, <= 3 MiB,
the producer with sound under 50 MB).
"""

from __future__ import annotations

import array
import atexit
import bisect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import live

NAME = "avsync"
ABOUT = "A/V sync (flash + beep) of nalcast and FFmpeg recordings; CPU and RSS that sound adds"

RATE = 48000
FPS = 30
SETTLE_S = 5

# ---------------------------------------------------------------------------
# analysis


def _run(argv: list) -> bytes:
    p = subprocess.run([str(a) for a in argv], capture_output=True)
    if p.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed ({p.returncode}): {p.stderr.decode(errors='replace').strip()[-300:]}")
    return p.stdout


def flash_times(path: Path) -> tuple:
    """(flash times in s, frames, luma levels): the first frame of each run of bright frames."""
    out = _run(["ffmpeg", "-hide_banner", "-v", "error", "-copyts", "-i", path, "-map", "0:v:0", "-an", "-vf",
                "scale=64:-2,signalstats,metadata=print:key=lavfi.signalstats.YAVG:file=-", "-f", "null", "-"])
    frames, t = [], None
    for line in out.decode().splitlines():
        m = re.search(r"pts_time:(-?[\d.]+)", line)
        if m:
            t = float(m.group(1))
            continue
        m = re.search(r"YAVG=([\d.]+)", line)
        if m and t is not None:
            frames.append((t, float(m.group(1))))
            t = None
    if not frames:
        return [], 0, (0, 0)
    levels = sorted(y for _, y in frames)
    low, high = levels[len(levels) // 2], levels[-1]
    if high - low < 40:  # no flash at all
        return [], len(frames), (low, high)
    threshold = low + (high - low) / 2
    flashes, bright = [], False
    for t, y in frames:
        if y >= threshold and not bright and (not flashes or t - flashes[-1] > 0.5):
            flashes.append(t)
        bright = y >= threshold
    return flashes, len(frames), (low, high)


def beep_onsets(path: Path) -> tuple:
    """(onset times in s, seconds of audio): the first sample at half of each beep's peak."""
    raw = _run(["ffmpeg", "-hide_banner", "-v", "error", "-copyts", "-i", path, "-map", "0:a:0", "-vn", "-af",
                "aresample=async=1:first_pts=0", "-ac", "1", "-ar", RATE, "-f", "s16le", "-"])
    pcm = array.array("h")
    pcm.frombytes(raw[: len(raw) // 2 * 2])
    if sys.byteorder != "little":
        pcm.byteswap()
    block = RATE // 1000  # 1 ms
    peaks = [max(max(pcm[i:i + block]), -min(pcm[i:i + block])) for i in range(0, len(pcm) - block + 1, block)]
    if not peaks or max(peaks) < 1000:
        return [], len(pcm) / RATE
    coarse = max(peaks) / 4
    onsets, last_loud = [], None
    for b, p in enumerate(peaks):
        if p < coarse:
            continue
        if last_loud is None or b - last_loud > 500:
            # refine: the beep's own peak over its first 50 ms, then the first sample at half of it
            start = max(0, (b - 30) * block)
            end = min(len(pcm), (b + 50) * block)
            local = max(abs(v) for v in pcm[b * block:end])
            i = next((k for k in range(start, end) if abs(pcm[k]) >= local / 2), b * block)
            onsets.append(i / RATE)
        last_loud = b
    return onsets, len(pcm) / RATE


def analyse(path: Path) -> dict:
    """Flashes, beeps and their offsets (ms, beep minus flash) in a recording."""
    flashes, frames, levels = flash_times(path)
    beeps, audio_s = beep_onsets(path)
    pairs = []
    for b in beeps:
        i = bisect.bisect_left(flashes, b)
        near = [f for f in flashes[max(0, i - 1):i + 1] if abs(b - f) < 0.5]
        if near:
            f = min(near, key=lambda f: abs(b - f))
            pairs.append((f, (b - f) * 1000))
    result = {"file": str(path), "frames": frames, "flashes": len(flashes), "beeps": len(beeps),
              "pairs": len(pairs), "audio_s": round(audio_s, 3), "luma": levels,
              "offsets_ms": [round(o, 2) for _, o in pairs],
              "flash_s": flashes, "pair_flash_s": [f for f, _ in pairs]}
    if pairs:
        offs = [o for _, o in pairs]
        result.update(max_abs_ms=max(abs(o) for o in offs), mean_ms=sum(offs) / len(offs),
                      min_ms=min(offs), max_ms=max(offs))
        # After the first SETTLE seconds: what a start-up correction leaves out.
        settled = [abs(o) for f, o in pairs if f >= pairs[0][0] + SETTLE_S]
        if settled:
            result["settled_max_abs_ms"] = max(settled)
        if len(pairs) >= 3:
            xs = [f for f, _ in pairs]
            mx, my = sum(xs) / len(xs), sum(offs) / len(offs)
            sxx = sum((x - mx) ** 2 for x in xs)
            slope = sum((x - mx) * (y - my) for x, y in pairs) / sxx if sxx else 0.0
            result["drift_ms_per_min"] = slope * 60
    return result


def against_paints(r: dict, flasher_log: Path) -> None:
    """Adds the offsets against what the flasher did (`paint_offsets_ms`, ...): its log says
    how late each paint was (a loaded machine delays it by tens of ms), which the recording
    shows as a later flash although the recorder is right. Each flash of the recording is
    one paint, in order, when their counts agree; otherwise nothing is added."""
    try:
        paints = sorted((int(p[1]), int(p[2])) for p in (line.split() for line in flasher_log.read_text().splitlines())
                        if len(p) == 3 and p[0] == "paint")
    except OSError:
        return
    flashes = r.get("flash_s") or []
    if not r.get("pairs") or len(paints) != len(flashes):
        return
    late_ms = {f: late / 1e6 for f, (_, late) in zip(flashes, paints)}
    offs = [o + late_ms[f] for f, o in zip(r["pair_flash_s"], r["offsets_ms"])]
    r["paint_late_max_ms"] = max(late / 1e6 for _, late in paints)
    r["paint_offsets_ms"] = [round(o, 2) for o in offs]
    r["paint_max_abs_ms"] = max(abs(o) for o in offs)


def describe(r: dict) -> str:
    if not r.get("pairs"):
        return f"no flash/beep pairs (flashes {r['flashes']}, beeps {r['beeps']}, frames {r['frames']})"
    text = (f"{r['pairs']} pairs of {r['flashes']} flashes / {r['beeps']} beeps: max |offset| {r['max_abs_ms']:.1f} ms, "
            f"mean {r['mean_ms']:+.1f} ms, range {r['min_ms']:+.1f} .. {r['max_ms']:+.1f} ms")
    if "settled_max_abs_ms" in r:
        text += f", max |offset| after the first {SETTLE_S} s {r['settled_max_abs_ms']:.1f} ms"
    if "drift_ms_per_min" in r:
        text += f", drift {r['drift_ms_per_min']:+.2f} ms/min"
    if "paint_max_abs_ms" in r:
        text += (f"; against the paints (up to {r['paint_late_max_ms']:.1f} ms late): "
                 f"max |offset| {r['paint_max_abs_ms']:.1f} ms")
    return text


# ---------------------------------------------------------------------------
# the scene: Xvfb, a private PulseAudio, the flasher

_state: dict = {}


def _cleanup() -> None:
    for key in ["flasher", "holder", "pulse"] + [k for k in _state if k.startswith("xvfb ")]:
        p = _state.get(key)
        if p:
            live.Procs.stop(p, grace=3)  # each started in a session of its own
    d = _state.get("dir")
    if d:
        shutil.rmtree(d, ignore_errors=True)


def _tmp() -> Path:
    if "dir" not in _state:
        _state["dir"] = Path(tempfile.mkdtemp(prefix="nalcast-avsync-"))
        atexit.register(_cleanup)
    return _state["dir"]


def xvfb(w: int, h: int) -> str:
    """An Xvfb of its own of that size on a free display (-displayfd); returns ':N'."""
    if f"display {w}x{h}" in _state:
        return _state[f"display {w}x{h}"]
    p, display = live.start_xvfb(w, h)
    _state[f"xvfb {w}x{h}"] = p
    _tmp()
    _state[f"display {w}x{h}"] = display
    return _state[f"display {w}x{h}"]


def pulse() -> dict:
    """A private PulseAudio (its own runtime directory, a null sink `avsync` as the default
    sink, a unix socket): the environment its clients need."""
    if "pulse_env" in _state:
        return _state["pulse_env"]
    d = _tmp() / "pulse"
    d.mkdir()
    sock = d / "native"
    env = dict(os.environ, XDG_RUNTIME_DIR=str(d), HOME=str(d), PULSE_SERVER=f"unix:{sock}")
    env.pop("PULSE_SINK", None)
    env.pop("PULSE_SOURCE", None)
    p = subprocess.Popen(["pulseaudio", "-n", "--daemonize=no", "--exit-idle-time=-1", "--use-pid-file=no",
                          "--load=module-null-sink sink_name=avsync rate=48000 channels=2",
                          f"--load=module-native-protocol-unix socket={sock} auth-anonymous=1"],
                         env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=open(d / "log", "wb"), start_new_session=True)
    _state["pulse"] = p
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if p.poll() is not None:
            raise RuntimeError(f"pulseaudio exited {p.returncode}")
        if subprocess.run(["pactl", "info"], env=env, capture_output=True).returncode == 0:
            # A null sink runs in an idle timing (0.1 to 0.5 s blocks) until a reader asks
            # for low latency, and takes a second or two to change: the flasher's first beeps
            # would play late and one is lost in the change. This reader of the monitor asks
            # for what the recorders will (10 ms) from the start, so the scene is steady
            # before anyone records it.
            _state["holder"] = subprocess.Popen(["parec", "--latency-msec=10", "--raw", "-d", "avsync.monitor"], env=env,
                                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                stderr=subprocess.DEVNULL, start_new_session=True)
            time.sleep(2)
            _state["pulse_env"] = env
            return env
        time.sleep(0.1)
    raise RuntimeError("pulseaudio did not answer in 10 s")


def start_flasher(ctx, display: str, seconds: int) -> subprocess.Popen:
    """c/flasher.c on `display` for `seconds` beeps, from 2 s from now on."""
    exe = ctx.tool("flasher", ("-lxcb", "-lpulse-simple", "-lpulse", "-lpthread", "-lm"))
    log = ctx.dir("logs") / f"avsync-flasher-{os.getpid()}.out"
    p = subprocess.Popen([str(exe), display, str(seconds)], env=pulse(), stdin=subprocess.DEVNULL,
                         stdout=open(log, "wb"), stderr=subprocess.STDOUT, start_new_session=True)
    _state["flasher"] = p
    _state["flasher_log"] = log
    return p


def stop(p: Optional[subprocess.Popen]) -> None:
    if p and p.poll() is None:
        p.terminate()
        try:
            p.wait(timeout=3)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


# ---------------------------------------------------------------------------
# the cases

def _measure_sync(kind: str, seconds: int, size: tuple, argv_of, scene: bool):
    """A measure function: record `seconds` (+ the flasher's 2 s lead) with the argv that
    argv_of(ctx, out, display, seconds) returns, then analyse the file."""
    from harness import Sample
    from live import BenchError

    def measure(ctx) -> Sample:
        # runs of other lengths write apart: a 10 s table can be made beside a 10-minute run
        home = "avsync-quick" if ctx.quick else f"avsync-{seconds}s"
        out = ctx.dir(home, "streams") / f"{kind}.mkv"
        if out.exists():
            out.unlink()
        log = ctx.dir("logs") / f"{home}-{kind}.stderr"
        flasher = None
        try:
            env = dict(os.environ)
            display = None
            if scene:
                display = xvfb(*size)
                env = pulse()
                flasher = start_flasher(ctx, display, seconds + 1)
            argv = argv_of(ctx, out, display, seconds + 3)
            t0 = time.monotonic()
            with open(log, "wb") as err:
                p = subprocess.run([str(a) for a in argv], env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=err, timeout=seconds + 60)
            wall = time.monotonic() - t0
            if p.returncode != 0:
                tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["?"]
                return Sample(0, 0, 0, status=p.returncode, extra={"error": tail[0][:200]})
            r = analyse(out)
        except (RuntimeError, BenchError, subprocess.TimeoutExpired) as e:
            return Sample(0, 0, 0, status=1, extra={"error": str(e)})
        finally:
            stop(flasher)
        if scene:
            against_paints(r, _state["flasher_log"])
        (ctx.dir(home) / f"{kind}.json").write_text(json.dumps(r, indent=1) + "\n")
        if not r.get("pairs"):
            return Sample(0, 0, 0, status=1, extra={"error": describe(r)})
        extra = {k: r[k] for k in ("pairs", "max_abs_ms", "settled_max_abs_ms", "paint_max_abs_ms", "mean_ms",
                                   "drift_ms_per_min") if k in r}
        extra["missing"] = max(r["flashes"], r["beeps"]) - r["pairs"]
        return Sample(wall, 0, 0, extra=extra)
    return measure


def cases(ctx) -> list:
    from harness import Case, Contender, has_program

    seconds = int(os.environ.get("NALCAST_AVSYNC_SECONDS") or (2 if ctx.quick else 10))
    size = (320, 240) if ctx.quick else (1280, 720)
    cost_s = 2 if ctx.quick else 10
    cost_size = (320, 240) if ctx.quick else (1920, 1080)
    missing = [t for t in ("ffmpeg", "Xvfb", "pulseaudio", "pactl") if not has_program(t)]
    no_scene = f"skipped ({', '.join(missing)} not installed)" if missing else None
    help_text = ctx.nalcast.help("produce") or ""
    skip_n = ctx.nalcast.unavailable("produce")
    if skip_n is None and "--audio" not in help_text:
        skip_n = "skipped (nalcast produce has no --audio)"
    skip_flash = skip_n or (None if "--flash" in help_text else "skipped (nalcast produce has no --flash)")
    w, h = size
    x264_ff = ["-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-bf", 0, "-g", 2 * FPS]

    def ffmpeg_rec(fragment: Optional[int]):
        def argv(ctx, out, display, t):
            pulse_opts = ["-fragment_size", fragment] if fragment else []
            return ["ffmpeg", "-hide_banner", "-v", "error", "-f", "x11grab", "-thread_queue_size", 1024, "-framerate", FPS,
                    "-video_size", f"{w}x{h}", "-i", display, "-f", "pulse", "-thread_queue_size", 1024, *pulse_opts,
                    "-i", "avsync.monitor", "-t", t, *x264_ff, "-c:a", "aac", "-b:a", "128k", "-y", out]
        return argv

    def nalcast_x11(ctx, out, display, t):
        return [ctx.nalcast.path, "produce", "--source", f"x11:{display}", "--audio", "monitor", "--fps", FPS,
                "--preset", "ultrafast", "--duration", f"{t}s", "-o", out, "--quiet"]

    def nalcast_tone(ctx, out, display, t):
        return [ctx.nalcast.path, "produce", "--source", "testsrc", "--size", f"{w}x{h}", "--flash", "--audio", "tone",
                "--fps", FPS, "--preset", "ultrafast", "--duration", f"{t}s", "-o", out, "--quiet"]

    def nalcast_ts(ctx, out, display, t):
        # the ts: listener read by FFmpeg as a player would: the TS's PTS from the producer
        sock = out.with_suffix(".sock")
        script = (f"rm -f '{sock}'; '{ctx.nalcast.path}' produce --source testsrc --size {w}x{h} --audio tone --fps {FPS} "
                  f"--preset ultrafast --duration {t + 3}s --listen 'ts:unix:{sock}' --quiet & "
                  f"until [ -S '{sock}' ]; do sleep 0.05; done; "
                  f"ffmpeg -hide_banner -nostdin -v error -analyzeduration 500000 -i 'unix:{sock}' -t {t} -c copy -y '{out}'; "
                  "s=$?; wait; exit $s")
        return ["sh", "-c", script]

    figures = [("max_abs_ms", "max |offset|", "{:.1f} ms"), ("settled_max_abs_ms", f"after {SETTLE_S} s", "{:.1f} ms"),
               ("paint_max_abs_ms", "against the paints", "{:.1f} ms"),
               ("mean_ms", "mean", "{:+.1f} ms"),
               ("drift_ms_per_min", "drift", "{:+.2f} ms/min"), ("pairs", "pairs", "{:.0f}"),
               ("missing", "unpaired", "{:.0f}")]
    sync = Case(NAME, f"avsync {w}x{h} {seconds} s", "", seconds, [
        Contender("ffmpeg x11grab + pulse", measure=_measure_sync("ffmpeg-x11-pulse", seconds, size, ffmpeg_rec(None), True),
                  role="ffmpeg", skip=no_scene),
        # PulseAudio's default fragments for a recording stream are large (FFmpeg asks none):
        # the same with 20 ms ones, as one would set for a live capture.
        Contender("ffmpeg x11grab + pulse -fragment_size 3840",
                  measure=_measure_sync("ffmpeg-x11-pulse-frag", seconds, size, ffmpeg_rec(3840), True),
                  skip=no_scene or ("not in --quick (the row above checks the same script)" if ctx.quick else None)),
        Contender("nalcast x11 + --audio monitor", measure=_measure_sync("nalcast-x11-monitor", seconds, size, nalcast_x11, True),
                  skip=no_scene or skip_n, usage_error_skips=True),
        Contender("nalcast testsrc --flash + --audio tone", measure=_measure_sync("nalcast-testsrc-tone", seconds, size, nalcast_tone, False),
                  skip=skip_flash, usage_error_skips=True),
        Contender("nalcast testsrc + tone, ts: listener -> ffmpeg -c copy",
                  measure=_measure_sync("nalcast-testsrc-tone-ts", seconds, size, nalcast_ts, False),
                  skip=skip_flash or (None if "ts:tcp" in help_text else "skipped (nalcast produce has no ts: listener)"),
                  usage_error_skips=True),
    ], runs=1, figures=figures)
    sync.notes.append(f"{sync.label}: offset = beep onset - flash frame time in the recording (positive: sound late); "
                      f"the x11 rows' flashes are seen at the first grab after the paint, 0 to {1000 / FPS:.0f} ms late")

    # cost
    cw, ch = cost_size
    outs = ctx.dir("avsync-quick" if ctx.quick else "avsync", "cost")
    x264_n = ["--fps", FPS, "--preset", "ultrafast", "--duration", f"{cost_s}s", "--quiet"]

    def grab(audio: bool) -> list:
        argv = ["ffmpeg", "-hide_banner", "-v", "error", "-f", "x11grab", "-thread_queue_size", 1024, "-framerate", FPS,
                "-video_size", f"{cw}x{ch}", "-i", "DISPLAY"]
        if audio:
            argv += ["-f", "pulse", "-thread_queue_size", 1024, "-i", "avsync.monitor"]
        argv += ["-t", cost_s, *x264_ff] + (["-c:a", "aac", "-b:a", "128k"] if audio else []) + ["-y", outs / f"ffmpeg-{int(audio)}.mkv"]
        return argv

    def nalcast_cost(source: str, audio: Optional[str], name: str, container: bool = True) -> list:
        argv = [ctx.nalcast.path, "produce", "--source", source, *x264_n]
        if source == "testsrc":
            argv[4:4] = ["--size", f"{cw}x{ch}"]
        if audio:
            argv += ["--audio", audio]
        return argv + ["-o", outs / f"{name}.mkv" if container else "/dev/null"]

    cost_rows = [
        ("ffmpeg x11grab", grab(False), no_scene, True),
        ("ffmpeg x11grab + pulse aac", grab(True), no_scene, True),
        ("nalcast x11", nalcast_cost("x11:DISPLAY", None, "x11"), no_scene or skip_n, True),
        ("nalcast x11 --audio monitor", nalcast_cost("x11:DISPLAY", "monitor", "x11-monitor"), no_scene or skip_n, True),
        ("nalcast testsrc", nalcast_cost("testsrc", None, "testsrc"), skip_n, False),
        ("nalcast testsrc --audio tone", nalcast_cost("testsrc", "tone", "testsrc-tone"), skip_n, False),
        # Annex-B to /dev/null: no container library loaded (the produce benchmark's setting,
        # the one of the 50 MB line); the AAC packets are encoded and counted, not written.
        ("nalcast testsrc -o /dev/null", nalcast_cost("testsrc", None, "", container=False), skip_n, False),
        ("nalcast testsrc --audio tone -o /dev/null", nalcast_cost("testsrc", "tone", "", container=False), skip_n, False),
        # The floor: the same tone encoded by libavcodec's AAC encoder in real time, nothing else
        # (no video, no capture, no output): what any user of Debian's libavcodec pays for sound.
        ("C aactone (libavcodec AAC alone)", ["TOOL:aactone", cost_s], None, False),
    ]
    if ctx.quick:  # a smoke test: one row of each kind
        cost_rows = [r for r in cost_rows if r[0] in ("ffmpeg x11grab + pulse aac", "nalcast x11 --audio monitor",
                                                      "nalcast testsrc --audio tone -o /dev/null",
                                                      "C aactone (libavcodec AAC alone)")]
    contenders = [Contender(name, measure=_measure_cost(argv, scene, cost_s, cost_size, ctx.quick), skip=skip,
                            role="ffmpeg" if name.startswith("ffmpeg") else "", usage_error_skips=True)
                  for name, argv, skip, scene in cost_rows]
    cost = Case(NAME, f"avsync cost {cw}x{ch} ultrafast {cost_s} s", "", cost_s, contenders,
                runs=ctx.runs_for(3), figures=[("cpu_pct", "CPU", "{:.1f} %"), ("rss_mib", "peak RSS", "{:.1f} MiB")],
                after=_cost_notes)
    return [sync, cost]


def _measure_cost(argv: list, scene: bool, seconds: int, size: tuple, quick: bool):
    """One run under the rusage launcher while the flasher paints and beeps (x11 rows)."""
    from harness import Sample, launch, Contender

    def measure(ctx) -> Sample:
        flasher = None
        env_saved = dict(os.environ)
        try:
            real = list(argv)
            if str(real[0]).startswith("TOOL:"):  # bench/c/NAME.c, compiled on first use
                real[0] = ctx.tool(str(real[0])[5:], ("-lavcodec", "-lavutil", "-lm"))
            if scene:
                display = xvfb(*size)
                real = [display if a == "DISPLAY" else (f"x11:{display}" if a == "x11:DISPLAY" else a) for a in real]
                os.environ.update(pulse())
                flasher = start_flasher(ctx, display, seconds + 4)
                time.sleep(0.3 if quick else 2)  # the first paint and beep (--quick: the sound stream is enough)
            c = Contender("cost", real)
            log = ctx.dir("logs") / f"avsync-cost-{Path(str(real[-1])).stem}{'-tone' if 'tone' in real else ''}.stderr"
            s = launch(ctx, c, log)
            if s.status != 0 and not s.extra.get("error"):
                lines = [l for l in log.read_text(errors="replace").splitlines() if l.strip()]
                s.extra["error"] = lines[-1][:200] if lines else ""
        except RuntimeError as e:
            return Sample(0, 0, 0, status=1, extra={"error": str(e)})
        finally:
            stop(flasher)
            os.environ.clear()
            os.environ.update(env_saved)
        if s.status == 0 and s.wall_s > 0:
            s.extra.update(cpu_pct=s.cpu_s / s.wall_s * 100, rss_mib=s.rss_kib / 1024)
        return s
    return measure


def _cost_notes(case) -> list:
    import statistics
    med = {}
    for c in case.contenders:
        if c.samples and not c.skip and not c.failed:
            med[c.name] = (statistics.median(s.extra["cpu_pct"] for s in c.samples),
                           statistics.median(s.rss_kib for s in c.samples) / 1024)
    notes = []
    for base, with_audio in (("ffmpeg x11grab", "ffmpeg x11grab + pulse aac"), ("nalcast x11", "nalcast x11 --audio monitor"),
                             ("nalcast testsrc", "nalcast testsrc --audio tone"),
                             ("nalcast testsrc -o /dev/null", "nalcast testsrc --audio tone -o /dev/null")):
        if base in med and with_audio in med:
            (c0, r0), (c1, r1) = med[base], med[with_audio]
            notes.append(f"{case.label}: sound adds to {base}: {c1 - c0:+.1f} % of a core, {r1 - r0:+.1f} MiB peak RSS "
                         f"({r1:.1f} MiB with sound)")
    if "C aactone (libavcodec AAC alone)" in med:
        c, r = med["C aactone (libavcodec AAC alone)"]
        notes.append(f"{case.label}: the floor, libavcodec's AAC encoder alone in a C program: {c:.1f} % of a core, "
                     f"{r:.1f} MiB peak RSS")
    return notes


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description="A/V offsets of a recording of the flash and the beep")
    ap.add_argument("file", type=Path)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--flasher-log", type=Path, help="c/flasher.c's output: offsets against its paints too")
    a = ap.parse_args()
    res = analyse(a.file)
    if a.flasher_log:
        against_paints(res, a.flasher_log)
    print(json.dumps(res, indent=1) if a.json else describe(res))
