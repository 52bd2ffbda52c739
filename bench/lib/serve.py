"""serve: a live 1080p30 ultrafast test pattern served to readers over loopback TCP.

nalcast produce --listen against GStreamer's tcpserversink on the pipeline of ANCHORS.md
(FFmpeg's TCP listen mode takes exactly one reader, so it has no row here):

- join: connect -> first decodable picture (SPS, PPS and an IDR all received), keyint
  2 s, a series of joins at random moments; "burst" is how many pictures arrive in the
  first 100 ms from that picture on (about 4 at live pace; a reader that starts behind
  live gets its backlog at once), and for nalcast "behind" is the first picture's age
  from its timestamp SEI.
- readers: producer CPU (from /proc, over a window) and RSS with 0, 16 and 64 readers
  (one Python reader checks that every picture arrives, the rest are `c/readers.c`).
- stalled: producer RSS growth over 20 s with one reader that never reads, against none.
"""

from __future__ import annotations

import random
import re
import subprocess
import urllib.request
import time
from pathlib import Path

from harness import Case, Context, Contender, Sample, gst_has, has_program
from live import alive as _alive, guard as _guard
from live import (BenchError, Procs, ThreadReader, check_contiguous, check_readers, connect, cpu_s, free_port,
                  join_once, median, readers_result, rss_kib, stderr_tail, wait_listening, wait_serving)

NAME = "serve"
ABOUT = "live 1080p30 to many readers: join time, CPU with 0/16/64 readers, a stalled reader"

FPS, KBPS = 30, 6000
FULL = dict(w=1920, h=1080, keyint_s=2.0, joins=20, gap=(0.3, 0.8), warm=2.0, settle=1.0, window=8.0,
            readers=(0, 16, 64), gst_readers=(0, 16), stall_s=20.0, runs=3)
QUICK = dict(w=320, h=240, keyint_s=0.5, joins=2, gap=(0.26, 0.3), warm=0.2, settle=0.1, window=0.4,
             readers=(0, 4), gst_readers=(0, 4), stall_s=0.5, runs=1)
FFMPEG_NA = "n/a (FFmpeg's TCP listen mode takes one reader; a second connect is refused)"


def _start(ctx: Context, procs: Procs, p: dict, kind: str, log: Path, extra=()) -> tuple:
    """Starts a live producer; returns (process, port)."""
    keyint_frames = int(round(p["keyint_s"] * FPS))
    if kind == "nalcast":
        argv = [ctx.nalcast.path, "produce", "--source", "testsrc", "--size", f"{p['w']}x{p['h']}",
                "--fps", FPS, "--preset", "ultrafast", "--keyint", f"{int(p['keyint_s'] * 1000)}ms",
                "--bitrate", f"{KBPS}k", "--vbv-ms", 600, "--listen", "tcp://127.0.0.1:0",
                "--max-readers", 100, "--metrics", f"tcp://127.0.0.1:{free_port()}", *extra]
        proc = procs.start(argv, stderr=log)
        proc.metrics_port = int(argv[-1 - len(extra)].rsplit(":", 1)[1])
        return proc, wait_serving(proc, log)
    port = free_port()
    argv = ["gst-launch-1.0", "-q", "videotestsrc", "is-live=true", "!",
            f"video/x-raw,width={p['w']},height={p['h']},framerate={FPS}/1", "!",
            "x264enc", "speed-preset=ultrafast", "tune=zerolatency", f"key-int-max={keyint_frames}",
            f"bitrate={KBPS}", "option-string=scenecut=0", "!", "h264parse", "config-interval=-1", "!",
            "video/x-h264,stream-format=byte-stream,alignment=au", "!",
            "tcpserversink", "host=127.0.0.1", f"port={port}", *extra]
    proc = procs.start(argv, stderr=log)
    wait_listening(proc, port, log)
    return proc, port


def capture_drops(proc) -> int:
    """Frames nalcast dropped before encoding (nalcast_frames_dropped_total): gaps in the
    SEI sequence that every reader sees, not losses of one reader."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{proc.metrics_port}/metrics", timeout=3).read().decode()
    return int(sum(float(v) for v in re.findall(r"^nalcast_frames_dropped_total(?:\{[^}]*\})? ([0-9.eE+]+)$",
                                                   text, re.M)))


def check_reader(pics: list, proc) -> tuple:
    """(problem or None, capture drops) for a nalcast reader that must get every picture."""
    drops = capture_drops(proc)
    seqs = [q.seq for q in pics]
    if any(x is None for x in seqs):
        return check_contiguous(pics), drops
    missing = sum(b - a - 1 for a, b in zip(seqs, seqs[1:]) if b > a + 1)
    if missing > drops or any(b <= a for a, b in zip(seqs, seqs[1:])):
        return check_contiguous(pics) + f" ({drops} dropped at capture)", drops
    return None, drops



# ---------------------------------------------------------------------------
# join


def _join_measure(kind: str, p: dict, extra=()):
    @_guard
    def measure(ctx: Context) -> Sample:
        log = ctx.dir("logs") / f"serve-join-{kind}{'-'.join(('',) + tuple(extra))}.stderr"
        rnd = random.Random(7)
        with Procs() as procs:
            proc, port = _start(ctx, procs, p, kind, log, extra)
            time.sleep(p["warm"])
            c0, t0 = cpu_s(proc.pid), time.monotonic()
            joins = []
            for _ in range(p["joins"]):
                time.sleep(rnd.uniform(*p["gap"]))  # a random moment in the GOP, > --idr-min-interval
                joins.append(join_once(port))
                _alive(proc, log)
            wall = time.monotonic() - t0
            cpu = cpu_s(proc.pid) - c0
            rss, hwm = rss_kib(proc.pid)
        js = [j["join_ms"] for j in joins]
        extra_figs = dict(join_ms=median(js), join_min=min(js), join_max=max(js),
                          burst=median([j["burst"] for j in joins]), joins=len(joins))
        behind = [j["behind_ms"] for j in joins if "behind_ms" in j]
        if behind:
            extra_figs["behind_ms"] = median(behind)
        return Sample(wall, cpu, hwm, extra=extra_figs)
    return measure


# ---------------------------------------------------------------------------
# many readers


def _readers_measure(kind: str, p: dict, n: int):
    @_guard
    def measure(ctx: Context) -> Sample:
        log = ctx.dir("logs") / f"serve-readers-{kind}-{n}.stderr"
        with Procs() as procs:
            proc, port = _start(ctx, procs, p, kind, log)
            time.sleep(p["warm"])
            checker = rproc = None
            if n > 0:
                checker = ThreadReader(connect(port))
                checker.start()
            if n > 1:
                rproc = procs.start([ctx.tool("readers"), port, n - 1, p["settle"] + p["window"] + 1.0],
                                    stdout=subprocess.PIPE, stderr=ctx.dir("logs") / "serve-readers-c.stderr")
            time.sleep(p["settle"])
            c0, (r0, _), t0 = cpu_s(proc.pid), rss_kib(proc.pid), time.monotonic()
            time.sleep(p["window"])
            c1, (r1, hwm), t1 = cpu_s(proc.pid), rss_kib(proc.pid), time.monotonic()
            _alive(proc, log)
            if checker:
                checker.stop()
                if kind == "nalcast":
                    drops_problem = check_reader([q for q in checker.stream.pictures if q.decodable], proc)
            per_reader = readers_result(rproc) if rproc else []
        figs = dict(cpu_pct=100 * (c1 - c0) / (t1 - t0), rss_start=r0 / 1024, rss_end=r1 / 1024)
        if checker:
            pics = [q for q in checker.stream.pictures if q.decodable]
            if not pics:
                raise BenchError("the checking reader got no decodable picture")
            span = (checker.stopped_ns - pics[0].done_ns) / 1e9
            if len(pics) < 0.8 * FPS * span:
                raise BenchError(f"the checking reader got {len(pics)} pictures in {span:.1f} s")
            if kind == "nalcast":
                problem, figs["drops"] = drops_problem
                if problem:
                    raise BenchError(f"checking reader: {problem}")
            figs["pictures"] = len(pics)
        if per_reader:
            # GStreamer starts each reader at a keyframe: allow one GOP of difference
            figs["reader_min_kb"] = check_readers(per_reader, p["settle"] + p["window"] + 1.0,
                                                  p["keyint_s"] if kind == "gstreamer" else 0) / 1000
        return Sample(t1 - t0, c1 - c0, r1, extra=figs)
    return measure


def _readers_notes(case: Case) -> list:
    """CPU with N readers against none, per tool (medians of the per-run percentages)."""
    notes = []
    by = {}
    for c in case.contenders:
        if c.samples:
            by[c.name] = median([s.extra["cpu_pct"] for s in c.samples])
    for tool in ("nalcast", "gstreamer"):
        base = by.get(f"{tool} 0 readers")
        if not base:
            continue
        ratios = [f"{name.split()[1]} readers {v / base:.3f}x" for name, v in by.items()
                  if name.startswith(tool + " ") and not name.endswith(" 0 readers")]
        if ratios:
            notes.append(f"{case.label}: {tool} CPU against 0 readers: " + ", ".join(ratios))
    return notes


# ---------------------------------------------------------------------------
# a reader that never reads


def _stall_measure(kind: str, p: dict, stalled: bool):
    @_guard
    def measure(ctx: Context) -> Sample:
        log = ctx.dir("logs") / f"serve-stall-{kind}-{int(stalled)}.stderr"
        with Procs() as procs:
            proc, port = _start(ctx, procs, p, kind, log)
            time.sleep(p["warm"])
            checker = ThreadReader(connect(port))
            checker.start()
            time.sleep(p["settle"])
            c0, (r0, _), t0 = cpu_s(proc.pid), rss_kib(proc.pid), time.monotonic()
            sleeper = connect(port, rcvbuf=4096) if stalled else None
            try:
                time.sleep(p["stall_s"])
                c1, (r1, hwm), t1 = cpu_s(proc.pid), rss_kib(proc.pid), time.monotonic()
                _alive(proc, log)
            finally:
                if sleeper:
                    sleeper.close()
            checker.stop()
            pics = [q for q in checker.stream.pictures if q.decodable]
            problem, drops = check_reader(pics, proc) if kind == "nalcast" else (None, None)
        if problem:
            raise BenchError(f"the reading reader, next to the stalled one: {problem}")
        return Sample(t1 - t0, c1 - c0, r1, extra=dict(growth_mib=(r1 - r0) / 1024, rss_end=r1 / 1024,
                                                        hwm=hwm / 1024, pictures=len(pics), drops=drops))
    return measure


# ---------------------------------------------------------------------------


def cases(ctx: Context) -> list:
    p = QUICK if ctx.quick else FULL
    size = f"{p['w']}x{p['h']}"
    skip_n = ctx.nalcast.unavailable("produce")
    skip_g = None if all(gst_has(e) for e in ("videotestsrc", "x264enc", "h264parse", "tcpserversink")) \
        else "skipped (GStreamer videotestsrc/x264enc/h264parse/tcpserversink missing)"
    ff_na = FFMPEG_NA if has_program("ffmpeg") else "skipped (ffmpeg not installed)"

    def row(name, measure, skip, role=""):
        return Contender(name, measure=measure, skip=skip, role=role, usage_error_skips=name.startswith("nalcast"))

    join = Case(NAME, f"serve join {size} keyint {p['keyint_s']:g}s", "", p["joins"], [
        row("nalcast --join idr", _join_measure("nalcast", p, ("--join", "idr")), skip_n),
        row("gstreamer tcpserversink", _join_measure("gstreamer", p), skip_g),
        row("gstreamer latest-keyframe", _join_measure("gstreamer", p, ("sync-method=latest-keyframe",)), skip_g),
        row("ffmpeg listen", None, ff_na),
    ], runs=1, figures=[("join_ms", "join", "{:.1f} ms"), ("join_min", "min", "{:.0f}"),
                        ("join_max", "max", "{:.0f}"), ("burst", "burst", "{:.0f} pictures/100 ms"),
                        ("behind_ms", "behind live", "{:.1f} ms")])
    join.notes.append(f"{join.label}: medians of {p['joins']} joins at random moments; CPU s and RSS are "
                      "the producer's over all of them")

    readers = Case(NAME, f"serve readers {size}", "", 1,
                   [row(f"nalcast {n} readers", _readers_measure("nalcast", p, n), skip_n) for n in p["readers"]]
                   + [row(f"gstreamer {n} readers", _readers_measure("gstreamer", p, n), skip_g)
                      for n in p["gst_readers"]],
                   runs=ctx.runs_for(p["runs"]), after=_readers_notes,
                   figures=[("cpu_pct", "CPU", "{:.1f} %"), ("rss_start", "RSS", "{:.1f}"),
                            ("rss_end", "->", "{:.1f} MiB"), ("drops", "capture drops", "{:.0f}")])
    readers.notes.append(f"{readers.label}: producer CPU and RSS over {p['window']:g} s with N readers "
                         "connected; one reader checks every picture arrives (nalcast: SEI sequence "
                         "without gaps), the others (c/readers.c) must all get the same bytes within 10 %")

    stall = Case(NAME, f"serve stalled reader {size} {p['stall_s']:g}s", "", 1, [
        row("nalcast", _stall_measure("nalcast", p, False), skip_n),
        row("nalcast + stalled reader", _stall_measure("nalcast", p, True), skip_n),
        row("gstreamer", _stall_measure("gstreamer", p, False), skip_g),
        row("gstreamer + stalled reader", _stall_measure("gstreamer", p, True), skip_g),
    ], runs=1, figures=[("growth_mib", "RSS growth", "{:+.1f} MiB"), ("rss_end", "RSS", "{:.1f} MiB"),
                        ("drops", "capture drops", "{:.0f}")])
    stall.notes.append(f"{stall.label}: producer RSS from the stalled reader's connect to {p['stall_s']:g} s "
                       "later; a second reader reads all along (nalcast: must get every picture); "
                       "nalcast closes a reader without progress after --reader-timeout (10 s)")
    return [join, readers, stall]
