"""relay: one live 1080p30 stream relayed to 16 readers over loopback TCP.

The source is the same for every contender and costs the relay nothing: `c/relaysrc.c`
serves a pre-encoded 1080p30 Annex-B file (FFmpeg libx264 from testsrc2, ultrafast,
zerolatency, IDR every 2 s, 6 Mbit/s CBR, AUD in every access unit; made once into
out/relay/) on a TCP port in real time, looped, a new client starting at the next IDR,
each access unit stamped as it is sent with nalcast's timestamp SEI (sequence, send time):
readers can tell a missing picture and how far behind the source they are, as they can for
`nalcast produce`. Each run starts its own source and relay; the relay reads the source
and serves what it reads on tcp://127.0.0.1:P:

  nalcast:   nalcast consume --from tcp://127.0.0.1:S --listen tcp://127.0.0.1:P --join gop|next --quiet
  GStreamer: gst-launch-1.0 tcpclientsrc host=127.0.0.1 port=S ! h264parse config-interval=-1
             ! video/x-h264,stream-format=byte-stream,alignment=au ! tcpserversink host=127.0.0.1
             port=P [sync-method=latest-keyframe]

Cases:
- readers: beside the relays, a limit row: the readers read relaysrc itself (one sendmsg
  per access unit and reader, nothing read), the least a relay's sending side can cost;
  and `c/relay.c`, the least a relay can cost: it reads the source, cuts it at the access
  unit delimiters and sends each access unit to each reader with one sendmsg; and
  `c/relaygop.c`, the least a relay doing nalcast's job can cost: it cuts any stream by
  H.264's own rule (no delimiters needed) and gives a joining reader the cached GOP.
  The relay's CPU over a window (the sum of its threads' /proc schedstat, ns),
  its RSS and peak RSS with 16 readers: one in this process checks that every picture
  arrives (SEI sequence without a gap) and how far behind the source the pictures of the
  window are, 15 are `c/readers.c` and must all get the same bytes (within 10 % and a GOP).
- side by side: the C relays and nalcast (and NALCAST_BEFORE) at once, each reading the one
  source and serving 16 readers of its own (`c/readers.c`, all of which must get the same
  bytes), the relays pinned to one CPU and the readers to the other where the machine has
  two; each relay's CPU over the same window, and its ratio to each C relay's in that
  window. Taken one after the other, a relay's CPU moves by about 15 % with the machine's
  load from one run to the next; in one window the relays see the same load. The place a
  relay starts in (and so is served and woken in) moves its ratio by up to a fifth, so the
  windows start them in turns and the headline is the mean of the medians by place: the
  same build twice lands within 2-3 % of itself.
  RELAY_READERS=N serves each relay N readers in place of 16 (1, say: what is left is the
  relay's work once an access unit, which does not grow with its readers).
  RELAY_TOGETHER=LIST runs only the listed relays (crelay, relaygop, nalcast, before): a pair
  alone on the CPU, where the place makes no difference and the windows lie within about 5 %
  of their median (nalcast against the floor: relaygop,nalcast; two builds: nalcast,before).
- stalled: the relay's RSS over 20 s with 16 readers, one of which never reads.
- join: connect -> first decodable picture, the burst after it, how far behind the source
  the first and the last picture of the burst are (`live.join_once`), 20 joins.
- rtsp: the same source served over RTSP (`lib/rtsp_source.py`, GStreamer's RTSP server,
  RTP over TCP) into `nalcast consume --from rtsp://...` against `gst-launch-1.0 rtspsrc !
  rtph264depay ! h264parse ! tcpserversink`; the readers case's figures.
"""

from __future__ import annotations

import os
import sys
import random
import subprocess
import time
from pathlib import Path

from harness import Case, Context, Contender, Sample, cached, gst_has, has_program, sh
from live import guard as _guard
from live import (BenchError, Procs, ThreadReader, check_contiguous, check_readers, connect, free_port,
                  join_once, median, pct, readers_result, rss_kib, stderr_tail, task_cpu_ns, wait_listening,
                  wait_serving)

NAME = "relay"
ABOUT = "a live 1080p30 stream relayed to 16 readers (TCP or RTSP in): relay CPU, RSS, a stalled reader, join"

FPS, KBPS = 30, 6000
FULL = dict(w=1920, h=1080, seconds=10, keyint_s=2.0, warm=3.0, rtsp_warm=4.0, settle=1.0, window=10.0, tail=1.0,
            readers=16, stall_s=20.0, joins=20, gap=(0.3, 0.8), runs=3)
QUICK = dict(w=320, h=240, seconds=2, keyint_s=0.5, warm=0.6, rtsp_warm=1.2, settle=0.15, window=0.4, tail=0.2,
             readers=4, stall_s=0.4, joins=2, gap=(0.26, 0.3), runs=1)
RTSP_PATH = "/live"
GST_REF = "gstreamer"  # the row the ratios are taken against
C_RELAY = "C relay"  # c/relay.c: the least a relay (not a source) can do
# c/relaygop.c: the least a relay of any stream with a cached GOP can do (nalcast's work)
C_ANY = "C relay of any stream"
TOGETHER_NALCAST = "nalcast --join gop"  # the side-by-side case's nalcast row, NALCAST_BEFORE's reference
# The rows each side-by-side window's ratios are taken against, with the figure each gives.
WINDOW_REFS = ((C_RELAY, "window_vs_crelay"), (C_ANY, "window_vs_cany"), (TOGETHER_NALCAST, "window_vs_nalcast"))
RTSP_SERVER = Path(__file__).resolve().parent / "rtsp_source.py"
PY_GI = "/usr/bin/python3"  # python3-gi belongs to Debian's Python


# ---------------------------------------------------------------------------
# the source


def _source_file(ctx: Context, p: dict) -> Path:
    """p["seconds"] of testsrc2 encoded once with FFmpeg's libx264 (AUD in every access unit,
    SPS and PPS in front of every IDR, no scene cuts), the file relaysrc loops."""
    keyint = int(round(p["keyint_s"] * FPS))
    name = f"source-{p['w']}x{p['h']}-{p['seconds']}s-keyint{keyint}.h264"

    def make(part: Path) -> None:
        sh(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"testsrc2=size={p['w']}x{p['h']}:rate={FPS}",
            "-frames:v", p["seconds"] * FPS, "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency",
            "-bf", 0, "-g", keyint, "-keyint_min", keyint, "-sc_threshold", 0, "-b:v", f"{KBPS}k",
            "-maxrate", f"{KBPS}k", "-bufsize", f"{KBPS * 600 // 1000}k", "-x264-params", "aud=1",
            "-f", "h264", part])
    return cached(ctx.dir("relay") / name, make)


def _start_source(ctx: Context, procs: Procs, p: dict) -> tuple:
    """relaysrc serving the source file: (process, port)."""
    log = ctx.dir("logs") / "relay-source.stderr"
    proc = procs.start([ctx.tool("relaysrc"), _source_file(ctx, p), FPS, 0], stderr=log)
    return proc, wait_serving(proc, log)


def _start_rtsp(ctx: Context, procs: Procs, src: int) -> str:
    port = free_port()
    log = ctx.dir("logs") / "relay-rtsp-server.stderr"
    proc = procs.start([PY_GI, RTSP_SERVER, port, RTSP_PATH, src], stderr=log)
    wait_listening(proc, port, log)
    return f"rtsp://127.0.0.1:{port}{RTSP_PATH}"


def _rtsp_unavailable() -> str | None:
    if not gst_has("rtspsrc") or not gst_has("rtph264depay"):
        return "skipped (GStreamer rtspsrc/rtph264depay missing)"
    probe = ("import gi; gi.require_version('GstRtspServer', '1.0'); "
             "from gi.repository import GstRtspServer")
    try:
        ok = subprocess.run([PY_GI, "-c", probe], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return None if ok else f"skipped (no RTSP server: {PY_GI} with python3-gi and gir1.2-gst-rtsp-server-1.0)"


# ---------------------------------------------------------------------------
# the relays


def _start_relay(ctx: Context, procs: Procs, kind: tuple, url: str, log: Path, prefix: tuple = ()) -> tuple:
    """Starts one relay reading url, its command behind `prefix` (taskset, say); returns
    (process, port it serves on)."""
    tool, option = kind
    port = free_port()
    if tool == "nalcast" and option.startswith("before:"):
        # NALCAST_BEFORE: an older build, --join gop
        argv = [option[len("before:"):], "consume", "--from", url, "--listen", f"tcp://127.0.0.1:{port}",
                "--join", "gop", "--quiet"]
    elif tool == "crelay":
        argv = [ctx.tool("relay"), url[len("tcp://127.0.0.1:"):], port]
    elif tool == "relaygop":
        argv = [ctx.tool("relaygop", ("-lev",)), url[len("tcp://127.0.0.1:"):], port]
    elif tool == "nalcast":
        argv = [ctx.nalcast.path, "consume", "--from", url, "--listen", f"tcp://127.0.0.1:{port}",
                "--join", option, "--quiet"]
    else:
        if url.startswith("rtsp://"):
            # latency=0: rtspsrc's jitter buffer holds 2 s by default, a relay would not
            src = ["rtspsrc", f"location={url}", "protocols=tcp", "latency=0", "!", "rtph264depay"]
        else:
            host, src_port = url[len("tcp://"):].rsplit(":", 1)
            src = ["tcpclientsrc", f"host={host}", f"port={src_port}"]
        argv = ["gst-launch-1.0", "-q", *src, "!", "h264parse", "config-interval=-1", "!",
                "video/x-h264,stream-format=byte-stream,alignment=au", "!",
                "tcpserversink", "host=127.0.0.1", f"port={port}", *([option] if option else [])]
    proc = procs.start([*prefix, *argv], stderr=log)
    try:
        wait_listening(proc, port, log)
    except BenchError as e:
        raise BenchError(str(e), status=proc.returncode or 1)
    return proc, port


def _alive(proc, log: Path) -> None:
    if proc.poll() is not None:
        raise BenchError(f"the relay exited {proc.returncode}: {stderr_tail(log)}")


def _setup(ctx: Context, procs: Procs, p: dict, kind: tuple, rtsp: bool, what: str) -> tuple:
    """Source (and RTSP server), then the relay, warmed up: (relay process, port, its log).
    The limit row has no relay: the source serves the readers itself."""
    log = ctx.dir("logs") / f"relay-{what}-{'rtsp' if rtsp else 'tcp'}-{kind[0]}-{kind[1].split(':')[0] or 'default'}.stderr"
    source, src = _start_source(ctx, procs, p)
    if kind[0] == "limit":
        time.sleep(p["warm"])
        return source, src, ctx.dir("logs") / "relay-source.stderr"
    url = _start_rtsp(ctx, procs, src) if rtsp else f"tcp://127.0.0.1:{src}"
    proc, port = _start_relay(ctx, procs, kind, url, log)
    time.sleep(p["rtsp_warm"] if rtsp else p["warm"])  # the relay has had an IDR
    _alive(proc, log)
    return proc, port, log


# ---------------------------------------------------------------------------
# 16 readers


def _decodable(checker: ThreadReader) -> int:
    return sum(1 for q in list(checker.stream.pictures) if q.decodable)


def _await_pictures(checker: ThreadReader, count: int, timeout: float, proc, log: Path, when: str) -> None:
    """Waits until the checking reader holds `count` decodable pictures, or fails after
    `timeout` seconds (or when the relay or the reader ends)."""
    deadline = time.monotonic() + timeout
    while _decodable(checker) < count:
        _alive(proc, log)
        if checker.error or checker.eof or time.monotonic() > deadline:
            raise BenchError(f"the checking reader got {_decodable(checker)} of {count} pictures {when}"
                             f" in {timeout:.0f} s ({checker.error or ('end of stream' if checker.eof else 'no more')})")
        time.sleep(0.01)


def _readers_measure(kind: tuple, p: dict, rtsp: bool = False):
    @_guard
    def measure(ctx: Context) -> Sample:
        n = p["readers"]
        seconds = p["settle"] + p["window"] + p["tail"]  # c/readers.c outlives the window
        with Procs() as procs:
            proc, port, log = _setup(ctx, procs, p, kind, rtsp, "readers")
            checker = ThreadReader(connect(port))
            checker.start()
            rproc = procs.start([ctx.tool("readers"), port, n - 1, seconds], stdout=subprocess.PIPE,
                                stderr=ctx.dir("logs") / "relay-readers-c.stderr")
            # The relay passes pictures on (not a time assumed long enough for it to be going).
            _await_pictures(checker, 1, 15, proc, log, "before the window")
            time.sleep(p["settle"])
            c0, (r0, _), t0, since = task_cpu_ns(proc.pid), rss_kib(proc.pid), time.monotonic(), time.time_ns()
            before = _decodable(checker)
            # The window: its seconds, and ends no sooner than a picture per frame interval of
            # them has reached the checker (a relay stalled by a loaded machine makes it
            # longer, not a failure; one that stops passing pictures on fails here).
            time.sleep(p["window"])
            _await_pictures(checker, before + int(0.9 * FPS * p["window"]), 10 + p["window"], proc, log, "in the window")
            c1, (r1, hwm), t1 = task_cpu_ns(proc.pid), rss_kib(proc.pid), time.monotonic()
            _alive(proc, log)
            checker.stop()
            per_reader = readers_result(rproc)
        pics = [q for q in checker.stream.pictures if q.decodable]
        if checker.error or not pics:
            raise BenchError(f"the checking reader got no decodable picture ({checker.error or 'none'})")
        problem = check_contiguous(pics)
        if problem:
            raise BenchError(f"checking reader: {problem}")
        least = check_readers(per_reader, seconds, p["keyint_s"])
        # steady state: the pictures of the window (not a backlog sent at connect)
        ages = [(q.done_ns - q.capture_ns) / 1e6 for q in pics if q.done_ns >= since]
        if not ages:
            raise BenchError("the checking reader got no picture in the window")
        cpu = (c1 - c0) / 1e9
        return Sample(t1 - t0, cpu, hwm, extra=dict(
            cpu_pct=100 * cpu / (t1 - t0), rss_start=r0 / 1024, rss_end=r1 / 1024, hwm=hwm / 1024,
            age_ms=median(ages), age_p99=pct(ages, 0.99), pictures=len(pics), reader_min_kb=least / 1000))
    return measure


def _ratios(key: str, label: str):
    """after(): each sample's `key` against the median of GStreamer's row and of the limit
    row, as extra[key + "_vs_gst"] and extra[key + "_vs_limit"] (shown in the figures
    column), and one note per nalcast row."""
    def after(case: Case) -> list:
        notes = []
        for ref_name, suffix, who in ((GST_REF, "_vs_gst", "GStreamer's"), (None, "_vs_limit", "the C limit's"),
                                      (C_RELAY, "_vs_crelay", "the bare C relay's"),
                                      (C_ANY, "_vs_cany", "the C relay of any stream's")):
            ref = next((c for c in case.contenders if c.samples and
                        (c.name == ref_name if ref_name else c.role == "limit")), None)
            if ref is None:
                continue
            base = median([s.extra[key] for s in ref.samples])
            for c in case.contenders:
                for s in c.samples:
                    s.extra[key + suffix] = s.extra[key] / base if base > 0 else float("nan")
                if c.samples and c.name.startswith("nalcast"):
                    notes.append(f"{case.label}: {c.name} {label} {median([s.extra[key] for s in c.samples]):.2f} "
                                 f"against {who} {base:.2f}: {median([s.extra[key + suffix] for s in c.samples]):.2f}x")
        return notes
    return after


class _Together:
    """The side-by-side case's windows: each run, all its relays at once. The first of its
    contenders the harness measures in a run starts the window for all of them; the others
    take their samples from it (the harness shuffles their order from the second run)."""

    def __init__(self, p: dict, kinds: dict):
        self.p, self.kinds = p, kinds  # contender name -> relay kind
        self.windows: list = []  # per run: contender name -> Sample
        self.taken: dict = {}  # contender name -> samples taken

    def measure(self, name: str):
        @_guard
        def measure(ctx: Context) -> Sample:
            run = self.taken.get(name, 0)
            self.taken[name] = run + 1
            if run == len(self.windows):
                # A window that fails fails for every relay in it, once: the next contender
                # does not start it again.
                try:
                    window = self._window(ctx)
                except Exception as e:
                    status = e.status if isinstance(e, BenchError) else 1
                    window = {other: Sample(0, 0, 0, status=status, extra={"error": str(e)}) for other in self.kinds}
                self.windows.append(window)
            return self.windows[run][name]
        return measure

    def _window(self, ctx: Context) -> dict:
        p, n = self.p, self.p["readers"]
        # The readers start with the relays: they outlive the warm-up and the window.
        seconds = p["warm"] + p["settle"] + p["window"] + p["tail"]
        # The relays on the first CPU, every reader on the second (as bench/relay-footprint's
        # TOGETHER=1): each relay alone with its own work on its CPU, whatever the others do.
        pin = (lambda cpu: ["taskset", "-c", str(cpu)]) if (os.cpu_count() or 1) >= 2 and has_program("taskset") \
            else (lambda cpu: [])
        # Where a relay comes in the order they start in (and so are served and woken in) moves
        # its CPU by more than the gap measured: the windows take turns, each relay in every
        # place once in as many windows as there are relays.
        order = list(self.kinds.items())
        turn = len(self.windows) % len(order)
        order = order[turn:] + order[:turn]
        with Procs() as procs:
            _, src = _start_source(ctx, procs, p)
            relays = {}
            for name, kind in order:
                log = ctx.dir("logs") / f"relay-together-{kind[0]}-{kind[1].split(':')[0] or 'default'}.stderr"
                proc, port = _start_relay(ctx, procs, kind, f"tcp://127.0.0.1:{src}", log, prefix=pin(0))
                relays[name] = (proc, port, log)
            readers = {name: procs.start([*pin(1), ctx.tool("readers"), port, n, seconds], stdout=subprocess.PIPE,
                                         stderr=log.with_name(log.stem + "-readers.stderr"))
                       for name, (_, port, log) in relays.items()}
            time.sleep(p["warm"] + p["settle"])  # every relay has had an IDR; the readers' GOPs are out
            start = {name: task_cpu_ns(proc.pid) for name, (proc, _, _) in relays.items()}
            t0 = time.monotonic()
            time.sleep(p["window"])
            end = {name: task_cpu_ns(proc.pid) for name, (proc, _, _) in relays.items()}
            t1 = time.monotonic()
            hwm = {name: rss_kib(proc.pid)[1] for name, (proc, _, _) in relays.items()}
            for proc, _, log in relays.values():
                _alive(proc, log)
            least = {name: check_readers(readers_result(rproc), seconds, p["keyint_s"])
                     for name, rproc in readers.items()}
        cpu = {name: (end[name] - start[name]) / 1e9 for name in relays}
        place = {name: i + 1 for i, (name, _) in enumerate(order)}
        window = {}
        for name in relays:
            extra = dict(cpu_pct=100 * cpu[name] / (t1 - t0), hwm=hwm[name] / 1024, reader_min_kb=least[name] / 1000,
                         place=place[name])
            for ref, key in WINDOW_REFS:
                if cpu.get(ref):
                    extra[key] = cpu[name] / cpu[ref]
            window[name] = Sample(t1 - t0, cpu[name], hwm[name], extra=extra)
        return window


def _ordinal(k: int) -> str:
    return f"{k}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(k, 'th') }"


def _together_notes(case: Case) -> list:
    notes = []
    for c in case.contenders:
        if not c.name.startswith("nalcast") or not c.samples:
            continue
        for ref, key in WINDOW_REFS:
            if c.name == ref:
                continue
            who = "the " + ref if ref.startswith("C ") else ref
            places = {}
            for s in c.samples:
                if key in s.extra:
                    places.setdefault(s.extra["place"], []).append(s.extra[key])
            if not places:
                continue
            ratios = sorted(r for v in places.values() for r in v)
            by_place = ", ".join(f"{median(v):.2f}x {_ordinal(place)}" for place, v in sorted(places.items()))
            # The headline: each place's median, averaged over the places, so that the places
            # weigh the same whatever the count of windows.
            balanced = sum(median(v) for v in places.values()) / len(places)
            notes.append(f"{case.label}: {c.name} CPU against {who}'s in the same window: {balanced:.2f}x, the "
                         f"mean of its medians by the place it started in ({by_place}); windows "
                         f"{ratios[0]:.2f}-{ratios[-1]:.2f}x, {len(ratios)} of them, their median {median(ratios):.2f}x")
    return notes


# ---------------------------------------------------------------------------
# a reader that never reads


def _stall_measure(kind: tuple, p: dict):
    @_guard
    def measure(ctx: Context) -> Sample:
        n = p["readers"]
        seconds = p["settle"] + p["stall_s"] + p["tail"]
        with Procs() as procs:
            proc, port, log = _setup(ctx, procs, p, kind, False, "stall")
            rproc = procs.start([ctx.tool("readers"), port, n - 1, seconds], stdout=subprocess.PIPE,
                                stderr=ctx.dir("logs") / "relay-readers-c.stderr")
            time.sleep(p["settle"])
            c0, (r0, _), t0 = task_cpu_ns(proc.pid), rss_kib(proc.pid), time.monotonic()
            sleeper = connect(port, rcvbuf=4096)
            try:
                time.sleep(p["stall_s"])
                c1, (r1, hwm), t1 = task_cpu_ns(proc.pid), rss_kib(proc.pid), time.monotonic()
                _alive(proc, log)
            finally:
                sleeper.close()
            per_reader = readers_result(rproc)
        least = check_readers(per_reader, seconds, p["keyint_s"])
        return Sample(t1 - t0, (c1 - c0) / 1e9, hwm, extra=dict(
            growth_mib=(r1 - r0) / 1024, rss_end=r1 / 1024, hwm=hwm / 1024, reader_min_kb=least / 1000))
    return measure


# ---------------------------------------------------------------------------
# joins


def _join_measure(kind: tuple, p: dict):
    @_guard
    def measure(ctx: Context) -> Sample:
        rnd = random.Random(7)
        with Procs() as procs:
            proc, port, log = _setup(ctx, procs, p, kind, False, "join")
            c0, t0 = task_cpu_ns(proc.pid), time.monotonic()
            joins = []
            for _ in range(p["joins"]):
                time.sleep(rnd.uniform(*p["gap"]))  # a random moment in the GOP
                joins.append(join_once(port))
                _alive(proc, log)
            wall, cpu = time.monotonic() - t0, (task_cpu_ns(proc.pid) - c0) / 1e9
            _, hwm = rss_kib(proc.pid)
        js = [j["join_ms"] for j in joins]
        figs = dict(join_ms=median(js), join_min=min(js), join_max=max(js),
                    burst=median([j["burst"] for j in joins]))
        for key in ("behind_ms", "behind_last_ms"):
            values = [j[key] for j in joins if key in j]
            if values:
                figs[key] = median(values)
        return Sample(wall, cpu, hwm, extra=figs)
    return measure


# ---------------------------------------------------------------------------


def cases(ctx: Context) -> list:
    p = QUICK if ctx.quick else FULL
    size = f"{p['w']}x{p['h']}"
    consume = ctx.nalcast.help("consume") or ""
    skip_n = ctx.nalcast.unavailable("consume") or (
        None if "--listen" in consume else "skipped (needs nalcast consume --listen: not in this build)")
    skip_join = skip_n or (None if "--join" in consume else "skipped (needs nalcast consume --join: not in this build)")
    from_line = next((l for l in consume.splitlines() if l.strip().startswith("--from")), "")
    skip_rtsp_n = skip_n or (None if "rtsp" in from_line
                             else "skipped (needs nalcast consume --from rtsp://: not in this build)")
    gst_missing = [e for e in ("tcpclientsrc", "h264parse", "tcpserversink") if not gst_has(e)]
    skip_g = f"skipped (GStreamer {'/'.join(gst_missing)} missing)" if gst_missing else None
    skip_rtsp = _rtsp_unavailable() if not skip_g else skip_g
    if not has_program("ffmpeg"):
        skip_n = skip_join = skip_rtsp_n = skip_g = skip_rtsp = "skipped (ffmpeg, which makes the source, not installed)"

    nalcast = [("nalcast --join gop", ("nalcast", "gop")), ("nalcast --join next", ("nalcast", "next"))]
    gst = [(GST_REF, ("gstreamer", "")), ("gstreamer latest-keyframe", ("gstreamer", "sync-method=latest-keyframe"))]

    def rows(measure, *args):
        return ([Contender(name, measure=measure(kind, *args), skip=skip_join, usage_error_skips=True)
                 for name, kind in nalcast]
                + [Contender(name, measure=measure(kind, *args), skip=skip_g) for name, kind in gst])

    n = p["readers"]
    reader_figs = [("cpu_pct", "CPU", "{:.2f} %"), ("cpu_pct_vs_gst", "vs GStreamer", "{:.2f}x"),
                   ("cpu_pct_vs_limit", "vs C", "{:.2f}x"), ("cpu_pct_vs_crelay", "vs C relay", "{:.2f}x"),
                   ("cpu_pct_vs_cany", "vs C any stream", "{:.2f}x"),
                   ("hwm", "peak RSS", "{:.1f} MiB"), ("age_ms", "behind source", "{:.1f}"),
                   ("age_p99", "p99", "{:.1f} ms")]
    limit = Contender("C relaysrc serving them itself", measure=_readers_measure(("limit", ""), p), role="limit",
                      skip=None if has_program("ffmpeg") else "skipped (ffmpeg, which makes the source, not installed)")
    crelay = Contender(C_RELAY, measure=_readers_measure(("crelay", ""), p), skip=limit.skip)
    cany = Contender(C_ANY, measure=_readers_measure(("relaygop", ""), p),
                     skip=limit.skip or (None if Path("/usr/include/ev.h").exists() else "skipped (libev-dev missing)"))
    before = os.environ.get("NALCAST_BEFORE")
    old = Contender("nalcast --join gop before (NALCAST_BEFORE)",
                    measure=_readers_measure(("nalcast", f"before:{Path(before).resolve()}"), p) if before else None,
                    skip=skip_join or (None if before else "skipped (NALCAST_BEFORE not set)"))
    relays = rows(_readers_measure, p)
    readers = Case(NAME, f"relay {size} to {n} readers", "", 1, [limit, crelay, cany] + relays[:2] + [old] + relays[2:],
                   runs=ctx.runs_for(p["runs"]), after=_ratios("cpu_pct", "CPU %"), figures=reader_figs)
    readers.notes.append(
        f"{readers.label}: relay CPU (% of a core, /proc schedstat) and RSS over {p['window']:g} s with {n} "
        f"readers; one checks every picture arrives (timestamp SEI sequence without a gap) and how far behind "
        f"the source each arrives (median, p99 ms), the {n - 1} of c/readers.c must get the same bytes; "
        f"target: nalcast CPU <= 0.3x GStreamer's; the ratios to the C relays, taken one run after another, move "
        f"by about 15 % with the machine's load: the side-by-side case gives them within one window")

    together_kinds = {C_RELAY: ("crelay", ""), C_ANY: ("relaygop", ""), TOGETHER_NALCAST: ("nalcast", "gop")}
    if before:
        together_kinds["nalcast --join gop before (NALCAST_BEFORE)"] = ("nalcast", f"before:{Path(before).resolve()}")
    # RELAY_TOGETHER=LIST: only these of them side by side (crelay, relaygop, nalcast, before):
    # a pair, alone on the core, is measured without the start place mattering.
    chosen = [k for k in os.environ.get("RELAY_TOGETHER", "").split(",") if k]
    short = {name: "before" if kind[1].startswith("before:") else kind[0] for name, kind in together_kinds.items()}
    unknown = [k for k in chosen if k not in short.values()]
    if unknown:
        hint = " (before needs NALCAST_BEFORE)" if "before" in unknown else ""
        print(f"bench: RELAY_TOGETHER: {', '.join(unknown)} is none of {', '.join(short.values())}{hint}",
              file=sys.stderr)
        raise SystemExit(64)
    if chosen:
        together_kinds = {name: kind for name, kind in together_kinds.items() if short[name] in chosen}
    together_readers = int(os.environ.get("RELAY_READERS") or n)
    together = _Together(dict(p, readers=together_readers), together_kinds)
    together_shown = f"{together_readers} reader{'' if together_readers == 1 else 's'}"
    together_case = Case(
        NAME, f"relay {size} to {together_shown}, side by side", "", 1,
        [Contender(name, measure=together.measure(name),
                   skip=cany.skip or (skip_join if name.startswith("nalcast") else None),
                   usage_error_skips=name.startswith("nalcast"))
         for name in together_kinds],
        runs=ctx.runs_for(p["runs"]), after=_together_notes,
        figures=[("cpu_pct", "CPU", "{:.2f} %"), ("window_vs_crelay", "vs C relay, same window", "{:.2f}x"),
                 ("window_vs_cany", "vs C any stream, same window", "{:.2f}x"), ("hwm", "peak RSS", "{:.1f} MiB")])
    together_case.notes.append(
        f"{together_case.label}: {'the relays of RELAY_TOGETHER' if chosen else 'every relay'} at once, each reading "
        f"the one source and serving {together_shown} of its own (c/readers.c, the same bytes to each), relays "
        f"pinned to one CPU and readers to the other, started in turns (each relay in every place once in as many "
        f"windows as there are relays); CPU (% of a core, /proc schedstat) over the same {p['window']:g} s window, "
        f"and against each C relay's in that window (the table: medians of the windows; below: the mean of the "
        f"medians by place, which a count of windows that is not a multiple of the relays' leaves uneven); "
        f"target (issue 29, restated 2026-12-05): each half of nalcast's relay within 1.1x of its own floor, "
        f"measured by bench/relay-cut (the read and parse against the C relay of any stream, the serving path "
        f"against the same binary cut at its parser); the two together come to about 1.2x the C relay of any stream, "
        f"which this case measures directly (RELAY_TOGETHER=relaygop,nalcast for a pair)")

    stall = Case(NAME, f"relay {size} {n} readers, one stalled {p['stall_s']:g}s", "", 1, rows(_stall_measure, p),
                 runs=1, figures=[("growth_mib", "RSS growth", "{:+.1f} MiB"), ("rss_end", "RSS", "{:.1f} MiB"),
                                  ("hwm", "peak", "{:.1f} MiB")])
    stall.notes.append(f"{stall.label}: relay RSS from the stalled reader's connect (socket buffer 4 KiB) to "
                       f"{p['stall_s']:g} s later, {n - 1} readers reading beside it")

    join = Case(NAME, f"relay {size} join keyint {p['keyint_s']:g}s", "", p["joins"], rows(_join_measure, p),
                runs=1, figures=[("join_ms", "join", "{:.1f} ms"), ("join_min", "min", "{:.0f}"),
                                 ("join_max", "max", "{:.0f}"), ("burst", "burst", "{:.0f} pictures/100 ms"),
                                 ("behind_ms", "behind source: first", "{:.1f}"),
                                 ("behind_last_ms", "last of burst", "{:.1f} ms")])
    join.notes.append(f"{join.label}: medians of {p['joins']} joins at random moments; join = connect -> SPS, "
                      "PPS and IDR received; burst = pictures in the 100 ms from the first; behind source = "
                      "arrival - the source's send time (timestamp SEI); target: nalcast join <= 40 ms")

    rtsp_rows = ([Contender("nalcast --join gop", measure=_readers_measure(("nalcast", "gop"), p, True),
                            skip=skip_rtsp_n or skip_rtsp, usage_error_skips=True)]
                 + [Contender(GST_REF, measure=_readers_measure(("gstreamer", ""), p, True), skip=skip_rtsp)])
    rtsp = Case(NAME, f"relay {size} RTSP in to {n} readers", "", 1, rtsp_rows, runs=ctx.runs_for(p["runs"]),
                after=_ratios("cpu_pct", "CPU %"), figures=reader_figs)
    rtsp.notes.append(f"{rtsp.label}: the same source served by GStreamer's RTSP server (RTP over TCP; its CPU "
                      "not counted); GStreamer: rtspsrc protocols=tcp latency=0 ! rtph264depay ! h264parse ! "
                      "tcpserversink; figures as for TCP in")
    return [readers, together_case, stall, join, rtsp]
