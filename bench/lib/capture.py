"""capture: capture on change, side by side with FFmpeg x11grab and GStreamer ximagesrc.

The x11 benchmark's Xvfb screen (1920x1080x24, a static plaid; --quick 320x240), x264
ultrafast with the settings of ANCHORS.md everywhere (zerolatency, keyint 60, no
scenecut, 6000k CBR, 3600 kbit VBV), cursor drawn (every contender's default).

- still: 10 s of a screen where nothing moves. Every contender runs until the launcher
  (`c/rusage.c -t`) stops it with SIGINT, as Ctrl-C would: CPU s and peak RSS of the
  whole run, and its steady CPU (the sum of its threads' schedstat from 1 s on, per
  10 s: the start-up of the encoder left out). nalcast `--capture damage` (its default
  `--idle-fps`), nalcast `--capture fixed` (a grab every 1/30 s: what nalcast did before
  capture on change), FFmpeg `x11grab` + libx264, GStreamer `ximagesrc use-damage=true`
  + `x264enc`. `pictures`: the pictures each one wrote.
- typing: the same, while `c/painter.c` repaints a 200x40 box 5 times a second (a text
  field being typed into) and the rest of the screen stays still.
- glass-to-socket: `c/painter.c` fills the whole screen with a solid colour 4 times a
  second and waits for the server's answer to a request behind the fill; from that
  answer to the last byte of the first picture whose SEI capture time is at or after
  the fill was sent, read from loopback TCP. nalcast `--capture damage` against
  `--capture fixed`.
- glass-to-decoded: the same paints, read by `c/avreader.c` (libavcodec, as ffplay) from
  nalcast and from FFmpeg x11grab -> `-f h264 tcp://...?listen=1`: to the first decoded
  picture showing the paint's colour.

Targets (the capture-on-change work): still <= 0.05 CPU-s per 10 s for nalcast damage,
typing <= 0.3x FFmpeg's CPU, glass-to-socket median <= 12 ms with damage.
"""

from __future__ import annotations

import statistics
import subprocess
import threading
import time
from pathlib import Path

import x11
from harness import Case, Context, Contender, Sample, gst_has, has_program, launch
from live import BenchError, Procs, StreamReader, ThreadReader, connect, free_port, median, pct, stderr_tail
from live import cpu_s, rss_kib, task_cpu_ns, wait_listening, wait_serving

NAME = "capture"
ABOUT = ("capture on change: CPU/RSS of a still and a typing-like screen against FFmpeg x11grab and "
         "GStreamer ximagesrc use-damage, glass-to-socket latency damage vs fixed")

FPS = x11.FPS
# box: the painter's x, y, w, h; hz: its repaints a second
# settle: from the reader's connect to the first paint; tail: from the last paint to the stop
FULL = dict(w=1920, h=1080, seconds=10.0, warmup=1.0, box=(160, 200, 200, 40), hz=5, paints=40, gap=0.25,
            settle=0.5, tail=0.3)
QUICK = dict(w=320, h=240, seconds=2.0, warmup=0.5, box=(20, 20, 100, 20), hz=5, paints=3, gap=0.15,
             settle=0.3, tail=0.2)

TARGET_STILL_CPU_PER_10S = 0.05
TARGET_TYPING_VS_FFMPEG = 0.3
TARGET_GLASS_MS = 12.0


def _capture_flag(ctx: Context) -> bool:
    """nalcast produce has --capture (damage|fixed)."""
    return "--capture" in (ctx.nalcast.help("produce") or "")


def _child_of(launcher_pid: int, timeout: float = 2.0) -> int:
    """The program the launcher started (its only child), once it exists."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{launcher_pid}/task/{launcher_pid}/children") as f:
                kids = f.read().split()
            if kids:
                return int(kids[0])
        except OSError:
            pass
        time.sleep(0.005)
    raise BenchError("the launcher started nothing")


def _steady_probe(p: dict):
    """Watches the program from `warmup` s on to `tail` s before it is stopped: its CPU time
    (schedstat of its threads) over that window, scaled to 10 s."""
    def probe(launcher) -> dict:
        t0 = time.monotonic()
        try:
            pid = _child_of(launcher.pid)
            time.sleep(max(0.0, t0 + p["warmup"] - time.monotonic()))
            a, ta = task_cpu_ns(pid), time.monotonic()
            time.sleep(max(0.0, t0 + p["seconds"] - p["tail"] - time.monotonic()))
            b, tb = task_cpu_ns(pid), time.monotonic()
        except (OSError, BenchError):
            return {}  # exited early: the launcher's status tells why
        return {"steady_cpu_10s": (b - a) / 1e9 * 10 / (tb - ta)}
    return probe


def _pictures(path: Path) -> int:
    """Pictures in an Annex-B file (a slice with first_mb_in_slice 0 starts one)."""
    st = StreamReader()
    with open(path, "rb") as f:
        st.feed(f.read(), 0)
    st.finish(0)
    return len(st.pictures)


def _live(ctx: Context, p: dict, painter: bool):
    """A measure function: the contender under the launcher for p['seconds'], with the
    painter running beside it when asked (started first, stopped after)."""
    def bind(c: Contender):
        def measure(ctx: Context) -> Sample:
            display = x11._xvfb(p["w"], p["h"])
            with Procs() as procs:
                if painter:
                    bx, by, bw, bh = p["box"]
                    procs.start([ctx.tool("painter", ("-lxcb",)), display, bx, by, bw, bh, p["hz"], 0],
                                stderr=ctx.dir("logs") / "capture-painter.stderr")
                    time.sleep(0.1)
                s = launch(ctx, c, c.stderr_path, probe=_steady_probe(p))
            if s.status == 0 and c.output and c.output.exists():
                s.extra["pictures"] = _pictures(c.output)
            return s
        c.measure = measure
        return c
    return bind


def _med(c: Contender, key=None):
    """The median CPU s of a contender's runs, or of one of its figures."""
    vals = sorted((s.extra.get(key) if key else s.cpu_s) for s in c.samples
                  if key is None or isinstance(s.extra.get(key), (int, float)))
    return vals[len(vals) // 2] if vals else None


def _notes(kind: str):
    """Each row's CPU (whole run and steady) against FFmpeg's, and the target's verdict for
    nalcast --capture damage: still, at most 0.05 CPU-s per 10 s; typing, at most 0.3x
    FFmpeg's CPU."""
    def after(case: Case) -> list:
        ok = [c for c in case.contenders if c.samples and not c.skip and not c.failed]
        ff = next((c for c in ok if c.role == "ffmpeg"), None)
        parts = []
        for c in ok:
            cpu, steady = _med(c), _med(c, "steady_cpu_10s")
            text = f"{c.name} {cpu:.2f} CPU-s"
            if steady is not None:
                text += f" (steady {steady:.3f} per 10 s)"
            if ff and c is not ff and _med(ff):
                text += f", {cpu / _med(ff):.2f}x FFmpeg"
                if steady is not None and _med(ff, "steady_cpu_10s"):
                    text += f" (steady {steady / _med(ff, 'steady_cpu_10s'):.2f}x)"
            parts.append(text)
        if not parts:
            return []
        notes = [f"{case.label}: " + "; ".join(parts)]
        damage = next((c for c in ok if c.name == "nalcast --capture damage"), None)
        if kind == "still":
            target = f"nalcast --capture damage <= {TARGET_STILL_CPU_PER_10S} CPU-s per 10 s"
            if damage:
                per10 = _med(damage) * 10 / statistics.median(s.wall_s for s in damage.samples)
                steady = _med(damage, "steady_cpu_10s")
                target += (f": {per10:.3f} per 10 s over the whole run ({'met' if per10 <= TARGET_STILL_CPU_PER_10S else 'not met'}), "
                           f"{steady:.3f} steady ({'met' if steady <= TARGET_STILL_CPU_PER_10S else 'not met'})"
                           if steady is not None else "")
        else:
            target = f"nalcast --capture damage <= {TARGET_TYPING_VS_FFMPEG}x FFmpeg's CPU"
            if damage and ff:
                ratio = _med(damage) / _med(ff)
                target += f": {ratio:.2f}x ({'met' if ratio <= TARGET_TYPING_VS_FFMPEG else 'not met'})"
        notes.append(f"{case.label}: target {target}")
        return notes
    return after


def _contenders(ctx: Context, p: dict, kind: str, painter: bool) -> list:
    display = x11._xvfb(p["w"], p["h"])
    w, h = p["w"], p["h"]
    outs = ctx.dir("capture", "streams")
    bind = _live(ctx, p, painter)

    def out(name: str) -> Path:
        return outs / f"{kind}-{w}x{h}-{name}.h264"

    skip_n = ctx.nalcast.unavailable("produce")
    if skip_n is None and "x11" not in (ctx.nalcast.help("produce") or ""):
        skip_n = "skipped (nalcast produce has no x11 source)"
    has_capture = skip_n is None and _capture_flag(ctx)
    nal = [ctx.nalcast.path, "produce", "--source", f"x11:{display}", *x11._x264_nalcast(), "--quiet"]
    skip_damage = skip_n or (None if has_capture else "skipped (nalcast produce has no --capture damage)")
    # before --capture existed nalcast always grabbed on a fixed timer: the same row
    fixed = ["--capture", "fixed"] if has_capture else []

    skip_f = None if has_program("ffmpeg") else "skipped (ffmpeg not installed)"
    skip_g = None
    if not has_program("gst-launch-1.0") or not gst_has("ximagesrc") or not gst_has("x264enc"):
        skip_g = "skipped (gst-launch-1.0 with ximagesrc and x264enc needed: gstreamer1.0-plugins-good, -ugly)"
    ffmpeg = ["ffmpeg", "-hide_banner", "-v", "error", "-f", "x11grab", "-framerate", FPS,
              "-video_size", f"{w}x{h}", "-i", display, "-pix_fmt", "yuv420p", *x11._x264_ffmpeg(),
              "-f", "h264", "-y", out("ffmpeg")]
    # I420 stated: videoconvert would otherwise hand x264enc Y444 (High 4:4:4), unlike the others
    gst = ["gst-launch-1.0", "-q", "-e", "ximagesrc", f"display-name={display}", "use-damage=true",
           "show-pointer=true", "!", f"video/x-raw,framerate={FPS}/1", "!", "videoconvert", "!",
           "video/x-raw,format=I420", "!", "x264enc", "speed-preset=ultrafast", "tune=zerolatency",
           f"key-int-max={x11.KEYINT}", f"bitrate={x11.KBPS}", "option-string=scenecut=0", "!",
           "video/x-h264,stream-format=byte-stream", "!", "filesink", f"location={out('gstreamer')}"]
    common = dict(duration_s=p["seconds"], usage_error_skips=True, check=x11.encode._nonempty)
    return [
        bind(Contender("nalcast --capture damage", [*nal, "--capture", "damage", "-o", out("nalcast-damage")],
                       output=out("nalcast-damage"), skip=skip_damage, **common)),
        bind(Contender("nalcast --capture fixed" if has_capture else "nalcast (fixed timer, no --capture)",
                       [*nal, *fixed, "-o", out("nalcast-fixed")], output=out("nalcast-fixed"), skip=skip_n,
                       **common)),
        bind(Contender("ffmpeg x11grab+libx264", ffmpeg, output=out("ffmpeg"), role="ffmpeg", skip=skip_f,
                       **common)),
        bind(Contender("gstreamer ximagesrc use-damage+x264enc", gst, output=out("gstreamer"), skip=skip_g,
                       **common)),
    ]


# The paints' two colours and the luma (BT.601, limited range, as libyuv and swscale give)
# of each in a decoded picture: avreader's luma= tells which paint a picture shows.
PAINTS = [("10e010", 135), ("e01010", 83)]
LUMA_SLACK = 20


class Painter:
    """c/painter.c on demand: fills the whole screen with a colour and says when (CLOCK_REALTIME
    ns just before the fill was sent, and once the server had done it)."""

    def __init__(self, ctx: Context, procs: Procs, display: str, p: dict):
        self.proc = procs.start([ctx.tool("painter", ("-lxcb",)), display, 0, 0, p["w"], p["h"], 0, "-"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=ctx.dir("logs") / "capture-painter.stderr")

    def paint(self, colour: str) -> tuple:
        self.proc.stdin.write(colour.encode() + b"\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline().split()
        if len(line) != 2:
            raise BenchError(f"the painter stopped (exit {self.proc.poll()})")
        return int(line[0]), int(line[1])


def _cost(proc, log: Path) -> tuple:
    """The producer's CPU s and peak RSS (KiB) from its start to now, while it still runs."""
    if proc.poll() is not None:
        raise BenchError(f"the producer exited {proc.returncode}: {stderr_tail(log)}")
    return cpu_s(proc.pid), rss_kib(proc.pid)[1]


def _glass_to_socket(p: dict, flags: list, name: str):
    def measure(ctx: Context) -> Sample:
        try:
            return _glass_run(ctx, p, flags, name)
        except BenchError as e:
            return Sample(0, 0, 0, status=e.status, extra={"error": str(e)})
    return measure


def _glass_run(ctx: Context, p: dict, flags: list, name: str) -> Sample:
    display = x11._xvfb(p["w"], p["h"])
    log = ctx.dir("logs") / f"capture-glass-{name}.stderr"
    argv = [ctx.nalcast.path, "produce", "--source", f"x11:{display}", *x11._x264_nalcast(), *flags,
            "--listen", "tcp://127.0.0.1:0"]
    paints = []
    with Procs() as procs:
        proc = procs.start(argv, stderr=log)
        try:
            port = wait_serving(proc, log)
        except BenchError as e:
            if proc.poll() == 64:
                raise BenchError(stderr_tail(log, 1), status=64)
            raise e
        reader = ThreadReader(connect(port))
        reader.start()
        painter = Painter(ctx, procs, display, p)
        time.sleep(p["settle"])
        t0 = time.monotonic()
        for i in range(p["paints"]):
            time.sleep(p["gap"])
            paints.append(painter.paint(PAINTS[i % 2][0]))
        time.sleep(p["tail"])
        wall = time.monotonic() - t0
        used = _cost(proc, log)
        Procs.stop(proc)
        reader.join(5)
    x11._xsetroot(display, "-mod", "8", "8", "-fg", "#c04020", "-bg", "#2040c0")
    if reader.error:
        raise BenchError(f"reader: {reader.error}")
    pics = [q for q in reader.stream.pictures if q.capture_ns is not None and q.done_ns is not None]
    if not pics:
        raise BenchError(f"no pictures with timestamps read ({stderr_tail(log)})")
    lat = []
    for before, after in paints:
        # a grab woken by the paint's DAMAGE event may start before the painter hears back
        first = next((q for q in pics if q.capture_ns >= before), None)
        if first is None:
            raise BenchError("a paint never showed up in the stream")
        lat.append((first.done_ns - after) / 1e6)
    return Sample(wall, *used, extra=dict(median_ms=median(lat), p99_ms=pct(lat, 0.99), max_ms=max(lat),
                                          paints=len(lat), lat=lat))


def _glass_to_decoded(p: dict, kind: str, flags: list):
    def measure(ctx: Context) -> Sample:
        try:
            return _decoded_run(ctx, p, kind, flags)
        except BenchError as e:
            return Sample(0, 0, 0, status=e.status, extra={"error": str(e)})
    return measure


def _decoded_run(ctx: Context, p: dict, kind: str, flags: list) -> Sample:
    """One producer (nalcast --listen, or FFmpeg x11grab -> -f h264 tcp://...?listen=1) read by
    c/avreader.c; the paints as in glass-to-socket; each paint's first decoded picture that
    shows its colour."""
    display = x11._xvfb(p["w"], p["h"])
    name = "ffmpeg" if kind == "ffmpeg" else "nalcast-" + (flags[1] if flags else "fixed")
    log = ctx.dir("logs") / f"capture-decoded-{name}.stderr"
    avreader = ctx.tool("avreader", ("-lavcodec", "-lavutil"))
    paints = []
    with Procs() as procs:
        if kind == "ffmpeg":
            port = free_port()
            proc = procs.start(["ffmpeg", "-hide_banner", "-v", "error", "-f", "x11grab", "-framerate", FPS,
                                "-video_size", f"{p['w']}x{p['h']}", "-i", display, "-pix_fmt", "yuv420p",
                                *x11._x264_ffmpeg(), "-f", "h264", f"tcp://127.0.0.1:{port}?listen=1"], stderr=log)
            wait_listening(proc, port, log)
        else:
            proc = procs.start([ctx.nalcast.path, "produce", "--source", f"x11:{display}", *x11._x264_nalcast(),
                                *flags, "--listen", "tcp://127.0.0.1:0"], stderr=log)
            try:
                port = wait_serving(proc, log)
            except BenchError as e:
                if proc.poll() == 64:
                    raise BenchError(stderr_tail(log, 1), status=64)
                raise e
        reader = procs.start([avreader, f"tcp://127.0.0.1:{port}"], stdout=subprocess.PIPE,
                             stderr=ctx.dir("logs") / f"capture-decoded-{name}-avreader.stderr")
        lines: list = []
        collect = threading.Thread(target=lambda: lines.extend(reader.stdout), daemon=True)
        collect.start()
        painter = Painter(ctx, procs, display, p)
        mono_minus_real = time.monotonic_ns() - time.time_ns()  # avreader's arrival is CLOCK_MONOTONIC
        time.sleep(p["settle"])
        t0 = time.monotonic()
        for i in range(p["paints"]):
            time.sleep(p["gap"])
            paints.append((*painter.paint(PAINTS[i % 2][0]), PAINTS[i % 2][1]))
        time.sleep(p["tail"])
        wall = time.monotonic() - t0
        used = _cost(proc, log)
        Procs.stop(proc)
        try:
            reader.wait(timeout=5)
        except subprocess.TimeoutExpired:
            Procs.stop(reader)
        collect.join(2)
    x11._xsetroot(display, "-mod", "8", "8", "-fg", "#c04020", "-bg", "#2040c0")
    pics = [dict(kv.split("=", 1) for kv in line.decode().split()) for line in lines if line.startswith(b"n=")]
    if not pics:
        raise BenchError(f"avreader decoded nothing ({stderr_tail(log)})")
    decoded, arrived, held = [], [], []
    for before, after, luma in paints:
        first = next((q for q in pics if int(q["decoded_real"]) >= before and "luma" in q
                      and abs(int(q["luma"]) - luma) <= LUMA_SLACK), None)
        if first is None:
            raise BenchError("a paint never showed up in a decoded picture")
        decoded.append((int(first["decoded_real"]) - after) / 1e6)
        arrived.append((int(first["arrival_mono"]) - mono_minus_real - after) / 1e6)
        held.append((int(first["decoded_mono"]) - int(first["arrival_mono"])) / 1e6)
    return Sample(wall, *used, extra=dict(median_ms=median(decoded), p99_ms=pct(decoded, 0.99), max_ms=max(decoded),
                                          socket_ms=median(arrived), held_ms=median(held), paints=len(decoded),
                                          lat=decoded, socket=arrived, held=held))


def _pooled(case: Case) -> list:
    parts = []
    for c in case.contenders:
        lat = [v for s in c.samples for v in s.extra.get("lat", ())]
        if lat and not c.skip and not c.failed:
            text = f"{c.name} median {median(lat):.1f} ms, p99 {pct(lat, 0.99):.1f} ms ({len(lat)} paints)"
            held = [v for s in c.samples for v in s.extra.get("held", ())]
            if held:
                sock = [v for s in c.samples for v in s.extra.get("socket", ())]
                text += (f", arrived {median(sock):.1f} ms after the paint, held in the reader (parser wait + "
                         f"decode) {median(held):.1f} ms median, {pct(held, 0.99):.1f} ms p99")
            parts.append(text)
    target = ("glass-to-decoded no more than glass-to-socket + the decode (no frame-interval wait in the "
              "parser)" if "decoded" in case.label else f"median <= {TARGET_GLASS_MS:g} ms with damage")
    return [f"{case.label}, every paint of every run: " + "; ".join(parts) + f". Target: {target}"] if parts else []


def cases(ctx: Context) -> list:
    p = QUICK if ctx.quick else FULL
    w, h = p["w"], p["h"]
    if not has_program("Xvfb") or not has_program("xsetroot"):
        why = "skipped (Xvfb or xsetroot not installed: xvfb, x11-xserver-utils)"
        return [Case(NAME, f"capture {w}x{h}", "", 0, [Contender("all", skip=why)])]
    figures = [("steady_cpu_10s", "steady CPU/10s", "{:.3f} s"), ("pictures", "pictures", "{:.0f}")]
    secs = f"{p['seconds']:g} s"
    runs = ctx.runs_for(3)
    still = Case(NAME, f"capture still {w}x{h} {secs}", "", 0, _contenders(ctx, p, "still", False),
                 figures=figures, runs=runs,
                 after=_notes("still"))
    bx, by, bw, bh = p["box"]
    typing = Case(NAME, f"capture typing {bw}x{bh} at {p['hz']} Hz {w}x{h} {secs}", "", 0,
                  _contenders(ctx, p, "typing", True), figures=figures, runs=runs,
                  after=_notes("typing"))

    skip_n = ctx.nalcast.unavailable("produce")
    has_capture = skip_n is None and _capture_flag(ctx)
    glass = Case(NAME, f"capture glass-to-socket {w}x{h}", "", p["paints"], [
        Contender("nalcast --capture damage", measure=_glass_to_socket(p, ["--capture", "damage"], "damage"),
                  skip=skip_n or (None if has_capture else "skipped (nalcast produce has no --capture damage)"),
                  usage_error_skips=True),
        Contender("nalcast --capture fixed" if has_capture else "nalcast (fixed timer, no --capture)",
                  measure=_glass_to_socket(p, ["--capture", "fixed"] if has_capture else [], "fixed"),
                  skip=skip_n, usage_error_skips=True),
    ], runs=runs, after=_pooled, figures=[("median_ms", "median", "{:.1f} ms"), ("p99_ms", "p99", "{:.1f} ms"),
                                          ("max_ms", "max", "{:.0f} ms")])
    glass.notes.append(f"{glass.label}: {p['paints']} full-screen fills (c/painter.c) {p['gap'] * 1000:.0f} ms "
                       "apart, fill done -> last byte of the first picture captured after it was sent, read from "
                       f"loopback TCP; one frame interval at {FPS} fps = {1000 / FPS:.1f} ms")
    skip_f = None if has_program("ffmpeg") else "skipped (ffmpeg not installed)"
    decoded = Case(NAME, f"capture glass-to-decoded {w}x{h}", "", p["paints"], [
        Contender("nalcast --capture damage", measure=_glass_to_decoded(p, "nalcast", ["--capture", "damage"]),
                  skip=skip_n or (None if has_capture else "skipped (nalcast produce has no --capture damage)"),
                  usage_error_skips=True),
        Contender("nalcast --capture fixed" if has_capture else "nalcast (fixed timer, no --capture)",
                  measure=_glass_to_decoded(p, "nalcast", ["--capture", "fixed"] if has_capture else []),
                  skip=skip_n, usage_error_skips=True),
        Contender("ffmpeg x11grab -f h264 tcp listen", measure=_glass_to_decoded(p, "ffmpeg", []), role="ffmpeg",
                  skip=skip_f),
    ], runs=runs, after=_pooled, figures=[("median_ms", "median", "{:.1f} ms"), ("p99_ms", "p99", "{:.1f} ms"),
                                          ("max_ms", "max", "{:.0f} ms"), ("socket_ms", "arrived", "{:.1f} ms"),
                                          ("held_ms", "held in reader", "{:.1f} ms")])
    decoded.notes.append(f"{decoded.label}: the same paints, read by c/avreader.c (libavcodec's H.264 parser, "
                         "av_parser_parse2, and decoder, low_delay, as ffplay): paint done -> the first decoded "
                         "picture showing the paint's colour; `arrived`: paint -> the read that brought that "
                         "picture's last byte; `held in reader`: that read -> decoded")
    return [still, typing, glass, decoded]
