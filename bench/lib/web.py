"""web: nalcast's browser page (produce --web) measured as a viewer sees it.

- paint: capture -> painted in headless Chromium, per frame, at 720p30 and 1080p30, over the
  page's WebSocket (WebCodecs) and over WebRTC (WHEP, `?transport=webrtc`), in one run. The
  producer is `nalcast produce --source testsrc --size WxH --fps 30 --web
  tcp://127.0.0.1:0` (its defaults otherwise: veryfast, as a user would run it); the
  page (Sources/Serving ViewerPage.swift) computes each painted frame's latency itself,
  Date.now() against the capture time in the message's header, and `web_paint.py` (run by
  the venv python of scripts/setup, which has selenium) records every value over a window.
  Both clocks are this machine's CLOCK_REALTIME. Chromium decodes in software here
  (--disable-gpu) and shares the 2 cores with the producer. Over WebRTC the page takes the
  capture time from the frame's RTP timestamp, which nalcast puts on the capture clock, at
  requestVideoFrameCallback (the frame about to be composited).
- viewers: the producer's CPU (from /proc, over a window) at 720p30 with 16 WebSocket
  viewers (`ws_readers.py`: upgrade, then read and discard) against none, and with 16 TCP
  readers of --listen (`c/readers.c`, as the serve benchmark) for comparison, and 16 WebRTC
  viewers over WHEP (`webrtc_readers.py`: aiortc peers that depacketize and count, decoding
  nothing), on SRTP_AEAD_AES_128_GCM (nalcast's first choice) and offering
  SRTP_AES128_CM_SHA1_80 alone (a peer without GCM). Every row
  runs the same producer (--web and --listen both open), so only the readers differ. Over
  TLS: the producer's own (`--tls self-signed`), and nginx in front of its plain --web
  (`web_nginx.py`, the repository's recipe), counted as nalcast's CPU plus nginx's.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from harness import Case, Context, Contender, Sample
from live import alive as _alive, guard as _guard
from live import BenchError, Procs, cpu_s, median, pct, rss_kib, stderr_tail
from web_browser import browser_result, finish
from web_nginx import nginx_missing, start_nginx
import web_loss

NAME = "web"
ABOUT = "the browser page: capture -> paint in headless Chromium, CPU with 16 WebSocket viewers"

LIB = Path(__file__).resolve().parent
FPS = 30
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
VENV_PYTHON = Path.home() / ".cache" / "nalcast-tools" / "bin" / "python"
# painted: the share of the window's frames that must be painted (--quick runs beside the
# test suite, where one second of a headless browser may stutter)
FULL = dict(sizes=((1280, 720), (1920, 1080)), warm_frames=60, paint_window=10.0, painted=0.8, runs=3,
            viewers_size=(1280, 720), viewers=16, warm=2.0, settle=1.0, window=10.0)
QUICK = dict(sizes=((320, 240),), warm_frames=10, paint_window=1.0, painted=0.5, runs=1,
             viewers_size=(320, 240), viewers=4, warm=0.3, settle=0.2, window=0.6)


def chromium_missing() -> str | None:
    """Why the browser row cannot run here, or None (what WebViewerTests checks too)."""
    if not os.access(CHROMIUM, os.X_OK):
        return f"skipped (no {CHROMIUM}: Debian's chromium, scripts/setup installs it)"
    if not os.access(CHROMEDRIVER, os.X_OK):
        return f"skipped (no {CHROMEDRIVER}: Debian's chromium-driver, scripts/setup installs it)"
    try:
        ok = subprocess.run([str(VENV_PYTHON), "-c", "import selenium"], capture_output=True,
                            timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    if not ok:
        return f"skipped (no selenium in {VENV_PYTHON}: scripts/setup makes that venv)"
    return None


def aiortc_missing() -> str | None:
    """Why the WebRTC viewers' row cannot run here, or None."""
    try:
        ok = subprocess.run([str(VENV_PYTHON), "-c", "import aiortc"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return None if ok else f"skipped (no aiortc in {VENV_PYTHON}: scripts/setup installs it)"


def _wait_for(pattern: str, proc, log: Path, timeout: float = 10) -> re.Match:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = re.search(pattern, log.read_text(errors="replace"))
        if m:
            return m
        if proc.poll() is not None:
            raise BenchError(f"producer exited {proc.returncode}: {stderr_tail(log)}")
        time.sleep(0.02)
    raise BenchError(f"no {pattern!r} on the producer's stderr in {timeout:.0f} s")


def _start(ctx: Context, procs: Procs, size: tuple, log: Path, listen: bool, tls: bool = False) -> tuple:
    """A live producer serving the page (over its own TLS with `tls`); returns (process, web
    port, --listen port or None)."""
    argv = [ctx.nalcast.path, "produce", "--source", "testsrc", "--size", f"{size[0]}x{size[1]}",
            "--fps", FPS, "--web", "tcp://127.0.0.1:0"]
    if listen:
        argv += ["--listen", "tcp://127.0.0.1:0", "--max-readers", 100]
    if tls:
        argv += ["--tls", "self-signed"]
    proc = procs.start(argv, stderr=log)
    web = int(_wait_for(r"the page on https?://127\.0\.0\.1:(\d+)/", proc, log).group(1))
    tcp = int(_wait_for(r"serving tcp://127\.0\.0\.1:(\d+)", proc, log).group(1)) if listen else None
    return proc, web, tcp



# ---------------------------------------------------------------------------
# capture -> paint


def _paint_measure(p: dict, size: tuple, webrtc: bool = False):
    @_guard
    def measure(ctx: Context) -> Sample:
        tag = f"{size[0]}x{size[1]}" + ("-webrtc" if webrtc else "")
        log = ctx.dir("logs") / f"web-paint-{tag}.stderr"
        with Procs() as procs:
            proc, port, _ = _start(ctx, procs, size, log, listen=False)
            c0, t0 = cpu_s(proc.pid), time.monotonic()
            page = f"http://127.0.0.1:{port}/" + ("?transport=webrtc" if webrtc else "")
            browser = procs.start([VENV_PYTHON, LIB / "web_paint.py", page,
                                   p["warm_frames"], p["paint_window"]],
                                  stdout=subprocess.PIPE, stderr=ctx.dir("logs") / f"web-paint-{tag}-chromium.stderr")
            out = finish(browser, 120 + p["paint_window"], "web_paint.py")
            c1, t1 = cpu_s(proc.pid), time.monotonic()
            _, hwm = rss_kib(proc.pid)
            _alive(proc, log)
        r = browser_result(out, browser, "web_paint.py")
        lat = r["latency_ms"]
        if r.get("problem"):
            raise BenchError(f"the page says: {r['problem']}")
        if r["width"] != size[0] or r["height"] != size[1]:
            raise BenchError(f"the page painted {r['width']}x{r['height']}, not {tag}")
        if r.get("transport") != ("webrtc" if webrtc else "websocket"):
            raise BenchError(f"the page played over {r.get('transport')}")
        # at live pace the window holds FPS * seconds frames: most of them must be painted
        if len(lat) < p["painted"] * FPS * p["paint_window"]:
            raise BenchError(f"{len(lat)} frames painted in {p['paint_window']:g} s")
        if r["errors"]:
            raise BenchError(f"{r['errors']} decoder errors on the page")
        figs = dict(p50=median(lat), p99=pct(lat, 0.99), max=max(lat), frames=len(lat),
                    fps=r["fps"] or 0, cpu_pct=100 * (c1 - c0) / (t1 - t0), values=lat)
        return Sample(t1 - t0, c1 - c0, hwm, extra=figs)
    return measure


def _paint_notes(case: Case) -> list:
    notes, medians = [], {}
    for c in case.contenders:
        if c.samples:
            every = [v for s in c.samples for v in s.extra["values"]]
            medians[c.name] = median(every)
            target = "WebRTC median <= 50 ms" if "webrtc" in c.name else "median <= 40 ms"
            notes.append(f"{case.label}: {c.name}: all {len(every)} frames of {len(c.samples)} run(s): median "
                         f"{median(every):.1f} ms, p99 {pct(every, 0.99):.1f} ms (target at 720p30: {target})")
    ws, rtc = medians.get("nalcast --web + chromium"), medians.get("nalcast --web + chromium over webrtc")
    if ws and rtc:
        notes.append(f"{case.label}: WebRTC against the WebSocket page, medians of every frame: {rtc / ws:.2f}x")
    return notes


# ---------------------------------------------------------------------------
# many viewers


def _viewers_measure(p: dict, kind: str, n: int):
    @_guard
    def measure(ctx: Context) -> Sample:
        log = ctx.dir("logs") / f"web-viewers-{kind}-{n}.stderr"
        span = p["settle"] + p["window"] + 1.0
        with Procs() as procs:
            proc, web, tcp = _start(ctx, procs, p["viewers_size"], log, listen=True, tls=kind == "wss")
            # nginx: the producer plain on loopback, nginx in front terminating TLS, the viewers on nginx
            front, port = start_nginx(ctx, procs, web) if kind == "nginx" else (None, web)
            pids = [proc.pid] + ([front.pid] if front else [])
            time.sleep(p["warm"])
            readers = None
            if n:
                if kind in ("webrtc", "webrtc-aes-cm"):
                    argv = [VENV_PYTHON, LIB / "webrtc_readers.py", f"http://127.0.0.1:{port}/whep", n, span]
                    argv += ["--aes-cm-only"] if kind == "webrtc-aes-cm" else []
                elif kind == "tcp":
                    argv = [ctx.tool("readers"), tcp, n, span]
                else:
                    argv = [sys.executable, LIB / "ws_readers.py", port, n, span] + (["--tls"] if kind != "ws" else [])
                readers = procs.start(argv, stdout=subprocess.PIPE,
                                      stderr=ctx.dir("logs") / f"web-viewers-{kind}-readers.stderr")
            time.sleep(p["settle"])
            c0, r0, t0 = [cpu_s(pid) for pid in pids], sum(rss_kib(pid)[0] for pid in pids), time.monotonic()
            time.sleep(p["window"])
            c1, r1, t1 = [cpu_s(pid) for pid in pids], sum(rss_kib(pid)[0] for pid in pids), time.monotonic()
            _alive(proc, log)
            if front and front.poll() is not None:
                raise BenchError(f"nginx exited {front.returncode}")
            per_reader = []
            if readers:
                out, _ = readers.communicate(timeout=span + 10)
                if readers.returncode != 0:
                    raise BenchError(f"{kind} readers exited {readers.returncode}")
                per_reader = [tuple(map(int, l.split())) for l in out.decode().split("\n") if l.strip()]
        # with nginx in front: the CPU and RSS of both processes, and each one's CPU apart
        used = [b - a for a, b in zip(c0, c1)]
        figs = dict(cpu_pct=100 * sum(used) / (t1 - t0), rss_start=r0 / 1024, rss_end=r1 / 1024)
        if front:
            figs.update(nalcast_pct=100 * used[0] / (t1 - t0), nginx_pct=100 * used[1] / (t1 - t0))
        if n:
            if len(per_reader) != n:
                raise BenchError(f"{len(per_reader)} of {n} {kind} readers reported")
            closed = sum(1 for r in per_reader if r[1])
            if closed:
                raise BenchError(f"{closed} of {n} {kind} readers were closed by the server")
            most, least = max(r[0] for r in per_reader), min(r[0] for r in per_reader)
            if least < 0.9 * most:
                raise BenchError(f"uneven {kind} readers: {least} bytes against {most}")
            if least == 0:
                raise BenchError(f"a {kind} reader got nothing")
            # ws_readers.py says how long it counted (from when every viewer had a picture)
            counted = per_reader[0][2] / 1000 if len(per_reader[0]) > 2 else span
            figs["reader_kbit_s"] = least * 8 / 1000 / counted
        return Sample(t1 - t0, sum(used), r1, extra=figs)
    return measure


def _viewers_notes(case: Case) -> list:
    by = {c.name: median([s.extra["cpu_pct"] for s in c.samples]) for c in case.contenders if c.samples}
    runs = {c.name: [s.extra["cpu_pct"] for s in c.samples] for c in case.contenders if c.samples}
    def named(end):
        return next((name for name in by if name.endswith(end)), None)
    notes = []
    base = named(" 0 viewers")
    if base and not by[base]:
        # The producer with no viewer measured no CPU at all (0.6 s runs of --quick): no ratio.
        notes.append(f"{case.label}: producer CPU against no viewer: no ratio, {base} measured no CPU (runs too short: --quick)")
        base = None
    ratios = [f"{name.split(' ', 1)[1]} {v / by[base]:.3f}x" for name, v in by.items() if base and name != base]
    if ratios:
        notes.append(f"{case.label}: producer CPU against no viewer (medians of the runs): " + ", ".join(ratios)
                     + " (target for WebSocket viewers: <= 1.05x; for WebRTC viewers: <= 1.15x)")
    plain, tls, nginx = named(" websocket viewers"), named(" websocket viewers over tls"), named(" behind nginx's tls")
    gcm, aes_cm = named(" webrtc viewers"), named(" webrtc viewers offering aes-cm only")
    for a, b, what, target in ((tls, plain, "over TLS against plain", "1.10"),
                               (tls, nginx, "the built-in TLS against nginx in front (nalcast + nginx)", "1.00"),
                               (gcm, aes_cm, "WebRTC viewers on SRTP_AEAD_AES_128_GCM against SRTP_AES128_CM_SHA1_80", None)):
        if a and b:
            # the runs are interleaved: run i of both rows ran in the same round, side by side
            paired = sorted(x / y for x, y in zip(runs[a], runs[b]) if y)
            if not by[b] or not paired:
                notes.append(f"{case.label}: {what}: no ratio, {b} measured no CPU (runs too short: --quick)")
                continue
            notes.append(f"{case.label}: {what}, the same viewers: {by[a] / by[b]:.3f}x (per round: median "
                         f"{median(paired):.3f}x, {paired[0]:.3f}-{paired[-1]:.3f}x"
                         + (f"; target: <= {target}x)" if target else ")"))
    return notes


# ---------------------------------------------------------------------------


def cases(ctx: Context) -> list:
    p = QUICK if ctx.quick else FULL
    skip_n = ctx.nalcast.unavailable("produce")
    if skip_n is None and "--web" not in (ctx.nalcast.help("produce") or ""):
        skip_n = "skipped (nalcast produce has no --web)"
    skip_c = skip_n or chromium_missing()

    def row(name, measure, skip):
        return Contender(name, measure=measure, skip=skip, usage_error_skips=True)

    out = []
    for size in p["sizes"]:
        tag = f"{size[0]}x{size[1]}"
        case = Case(NAME, f"web paint {tag} {FPS} fps",
                    "", 1, [row("nalcast --web + chromium", _paint_measure(p, size), skip_c),
                            row("nalcast --web + chromium over webrtc", _paint_measure(p, size, webrtc=True), skip_c)],
                    runs=ctx.runs_for(p["runs"]), after=_paint_notes,
                    figures=[("p50", "capture->paint median", "{:.1f} ms"), ("p99", "p99", "{:.1f} ms"),
                             ("max", "max", "{:.0f} ms"), ("frames", "frames", "{:.0f}"),
                             ("cpu_pct", "producer CPU", "{:.1f} %")])
        case.notes.append(f"{case.label}: capture -> paint of every frame the page painted in "
                          f"{p['paint_window']:g} s (the page's own figure: Date.now() against the capture "
                          "time in the message header, both this machine's clock); medians over the runs")
        out.append(case)

    size = p["viewers_size"]
    n = p["viewers"]
    viewers = Case(NAME, f"web viewers {size[0]}x{size[1]} {FPS} fps", "", 1, [
        row("nalcast 0 viewers", _viewers_measure(p, "ws", 0), skip_n),
        row(f"nalcast {n} websocket viewers", _viewers_measure(p, "ws", n), skip_n),
        row(f"nalcast {n} tcp readers", _viewers_measure(p, "tcp", n), skip_n),
        row(f"nalcast {n} webrtc viewers", _viewers_measure(p, "webrtc", n), skip_n or aiortc_missing()),
        row(f"nalcast {n} webrtc viewers offering aes-cm only", _viewers_measure(p, "webrtc-aes-cm", n),
            skip_n or aiortc_missing()),
        row(f"nalcast {n} websocket viewers over tls", _viewers_measure(p, "wss", n), skip_n),
        row(f"nalcast {n} websocket viewers behind nginx's tls", _viewers_measure(p, "nginx", n),
            skip_n or nginx_missing()),
    ], runs=ctx.runs_for(p["runs"]), after=_viewers_notes,
        figures=[("cpu_pct", "CPU", "{:.1f} %"), ("nalcast_pct", "nalcast", "{:.1f} %"), ("nginx_pct", "nginx", "{:.1f} %"),
                 ("rss_start", "RSS", "{:.1f}"), ("rss_end", "->", "{:.1f} MiB"),
                 ("reader_kbit_s", "per reader", "{:.0f} kbit/s")])
    viewers.notes.append(f"{viewers.label}: producer CPU and RSS over {p['window']:g} s; the producer serves "
                         "--web and --listen in every row; WebSocket viewers (ws_readers.py) and TCP readers "
                         "(c/readers.c) read and discard, and must all get the same bytes within 10 %; "
                         "behind nginx: the producer's plain --web behind deploy/nginx/nalcast-web.conf, "
                         "CPU and RSS of nalcast + nginx")
    return out + [viewers] + web_loss.cases(ctx, ctx.quick, row, skip_c)
