"""web loss: the page through a lossy path, over WebRTC (WHEP) against its WebSocket.

The path is the WebRTC loss test's (Tests/WebRTC/lossy-netns and lossy_path.py, as
docs/testing.md says): headless Chromium in a network namespace behind a veth pair, 1 % of
the TCP and UDP packets dropped each way by nftables in the kernel, 30 ms added each way by
a forwarder (this kernel has no netem). The producer listens on this side
(`--web tcp://10.231.N.1:0 --allow-remote --no-auth --webrtc-host 10.231.N.2`); the page is
opened at the forwarder's address, `?transport=webrtc` or not. Over 60 s it records when
each frame was painted and its capture -> paint latency: freezes are the gaps between two
painted frames longer than 200 ms (the issue's figure: none in 60 s), and for WebRTC also
Chromium's own getStats (freezeCount, totalFreezesDuration, nackCount, packetsLost, and the
round trip it measured from nalcast's DLRRs) and nalcast's counters of packets sent again (for
NACKs, for transport-wide feedback) and of NACKs not answered.
Needs root (a namespace, nftables).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from harness import Case, Context, Contender, Sample
from live import BenchError, Procs, alive, cpu_s, guard, median, pct, rss_kib
from soak_sample import metrics
from web_browser import browser_result, finish

LIB = Path(__file__).resolve().parent
TOOLS = LIB.parent.parent / "Tests" / "WebRTC"
VENV_PYTHON = Path.home() / ".cache" / "nalcast-tools" / "bin" / "python"
FPS = 30


def loss_missing() -> str | None:
    """Why the lossy path cannot be made here, or None."""
    if os.geteuid() != 0:
        return "skipped (needs root: a network namespace and nftables)"
    if shutil.which("nft") is None:
        return "skipped (no nft: scripts/setup installs nftables)"
    return None


def _wait_for(pattern: str, proc, log: Path, timeout: float = 10):
    import re
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = re.search(pattern, log.read_text(errors="replace"))
        if m:
            return m
        alive(proc, log)
        time.sleep(0.02)
    raise BenchError(f"no {pattern!r} on the producer's stderr in {timeout:.0f} s")


def _measure(size: tuple, seconds: float, webrtc: bool):
    @guard
    def measure(ctx: Context) -> Sample:
        tag = f"{size[0]}x{size[1]}" + ("-webrtc" if webrtc else "")
        log = ctx.dir("logs") / f"web-loss-{tag}.stderr"
        index = os.getpid() % 200 + 20
        name, here, there = f"nalcast-bench-loss-{os.getpid()}", f"10.231.{index}.1", f"10.231.{index}.2"
        tool = str(TOOLS / "lossy-netns")
        subprocess.run([tool, "down", name], check=False)
        subprocess.run([tool, "up", name, str(index), "1"], check=True)
        try:
            with Procs() as procs:
                proc = procs.start([ctx.nalcast.path, "produce", "--source", "testsrc", "--size", f"{size[0]}x{size[1]}",
                                    "--fps", FPS, "--web", f"tcp://{here}:0", "--allow-remote", "--no-auth",
                                    "--webrtc-host", there], stderr=log)
                web = int(_wait_for(rf"the page on http://{here}:(\d+)/", proc, log).group(1))
                udp = int(_wait_for(rf"media on UDP {here}:(\d+)", proc, log).group(1))
                path = {"delayMs": 30, "forwardFrom": f"10.231.{index}.3", "tcp": [[there, web, here, web]], "udp": [[there, udp, here, udp]]}
                page = f"http://{there}:{web}/" + ("?transport=webrtc" if webrtc else "")
                c0, t0 = cpu_s(proc.pid), time.monotonic()
                browser = procs.start(["ip", "netns", "exec", name, VENV_PYTHON, TOOLS / "lossy_path.py", page, seconds,
                                       json.dumps(path)], stdout=subprocess.PIPE,
                                      stderr=ctx.dir("logs") / f"web-loss-{tag}-chromium.stderr")
                out = finish(browser, 180 + seconds, "lossy_path.py")
                # Reached directly, not through the lossy path; a build without a counter has it as 0.
                counters = metrics(web, host=here) or {}
                c1, t1 = cpu_s(proc.pid), time.monotonic()
                _, hwm = rss_kib(proc.pid)
                alive(proc, log)
        finally:
            subprocess.run([tool, "down", name], check=False)
        r = browser_result(out, browser, "lossy_path.py")
        if r.get("problem"):
            raise BenchError(f"the page says: {r['problem']}")
        if r.get("transport") != ("webrtc" if webrtc else "websocket"):
            raise BenchError(f"the page played over {r.get('transport')}")
        lat, stats = r["latencyMs"]["all"], r["stats"]
        if not lat:
            raise BenchError("no frame painted")
        figs = dict(freezes=len(r["gapsOver200Ms"]), max_gap=r["maxGapMs"] or 0, p50=median(lat), p99=pct(lat, 0.99),
                    frames=r["painted"], seconds=r["seconds"], nacks=stats.get("nackCount", 0),
                    lost=stats.get("packetsLost", 0), chromium_freezes=stats.get("freezeCount", 0),
                    freeze_ms=1000 * stats.get("totalFreezesDuration", 0), cpu_pct=100 * (c1 - c0) / (t1 - t0),
                    resent=counters.get("nalcast_webrtc_retransmitted_packets_total", 0),
                    fb_resent=counters.get("nalcast_webrtc_feedback_resent_packets_total", 0),
                    nacks_skipped=counters.get("nalcast_webrtc_nacks_skipped_total", 0),
                    rtt_ms=1000 * stats.get("roundTripTime", 0),
                    gaps=r["gapsOver200Ms"], values=lat)
        return Sample(t1 - t0, c1 - c0, hwm, extra=figs)
    return measure


def _notes(case: Case) -> list:
    notes = []
    for c in case.contenders:
        if c.samples:
            every = [v for s in c.samples for v in s.extra["values"]]
            gaps = [g for s in c.samples for g in s.extra["gaps"]]
            notes.append(f"{case.label}: {c.name}: {len(every)} frames of {len(c.samples)} run(s): capture -> paint median "
                         f"{median(every):.1f} ms, p99 {pct(every, 0.99):.1f} ms; gaps over 200 ms: {len(gaps)} "
                         f"{sorted(gaps)[-5:]} (target over WebRTC: none in 60 s)")
    return notes


def cases(ctx: Context, quick: bool, row, skip: str | None) -> list:
    """The `web loss` case: 60 s of each, one run by default. None with --quick, which the test
    suite runs: two more browsers there would cost about 30 s, and WebRTCLossTests runs the
    same tools."""
    if quick:
        return []
    size, seconds = (1280, 720), 60.0
    skip = skip or loss_missing()
    case = Case("web", f"web loss {size[0]}x{size[1]} {FPS} fps", "", 1, [
        row("nalcast --web + chromium, 1 % loss, 30 ms", _measure(size, seconds, webrtc=False), skip),
        row("nalcast --web + chromium over webrtc, 1 % loss, 30 ms", _measure(size, seconds, webrtc=True), skip),
    ], runs=ctx.runs_for(1), after=_notes,
        figures=[("freezes", "gaps > 200 ms", "{:.0f}"), ("max_gap", "longest", "{:.0f} ms"),
                 ("p50", "capture->paint median", "{:.1f} ms"), ("p99", "p99", "{:.1f} ms"),
                 ("chromium_freezes", "Chromium freezes", "{:.0f}"), ("nacks", "NACKs", "{:.0f}"),
                 ("resent", "sent again for NACKs", "{:.0f}"), ("fb_resent", "for TWCC", "{:.0f}"),
                 ("nacks_skipped", "NACKs skipped", "{:.0f}"), ("rtt_ms", "Chromium's RTT", "{:.0f} ms"),
                 ("lost", "lost", "{:.0f}"), ("frames", "frames", "{:.0f}")])
    case.notes.append(f"{case.label}: Chromium in a network namespace, 1 % of packets dropped each way by nftables, "
                      f"30 ms each way by a forwarder (no netem here); {seconds:g} s of each")
    return [case]
