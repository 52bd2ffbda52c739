"""reader: how long a picture waits in a reader of `produce --listen` before it is decoded.

`c/avreader.c` reads the stream as ffplay does (libavcodec's H.264 parser, then the decoder
with low_delay and one thread) and prints, for every picture, when the read that brought
its last byte returned and when the decoder handed it out. The difference is the time the
picture spent in the reader: the decode itself, plus, for a stream whose access units
end only where the next begins, the wait in the parser for the next picture (a frame
interval at a fixed rate; until the next change with capture on change).

- nalcast: `produce --source testsrc --size 1280x720 --fps 30 --listen`, every access unit
  followed at once by the next one's AUD (the delimited wire).
- nalcast before: the same with the binary in NALCAST_BEFORE (a build of an older
  commit, e.g. one that still sends each AUD in front of its access unit); skipped unset.

Figures: decoded minus arrival (median, p95), and capture (the timestamp SEI) to decoded.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from harness import Case, Context, Contender, Sample
from live import BenchError, Procs, guard, median, pct, stderr_tail, wait_serving

NAME = "reader"
ABOUT = "produce --listen 720p30 -> picture decoded by c/avreader (libavcodec parser + decoder): time in the reader"

FPS = 30
FULL = dict(size="1280x720", pictures=300, skip=15)
QUICK = dict(size="320x240", pictures=30, skip=3)


def _measure(binary: Path, p: dict, label: str):
    def measure(ctx: Context) -> Sample:
        avreader = ctx.tool("avreader", ("-lavcodec", "-lavutil"))
        log = ctx.dir("logs") / f"reader-{label}.stderr"
        with Procs() as procs:
            producer = procs.start([binary, "produce", "--source", "testsrc", "--size", p["size"], "--fps", FPS,
                                    "--listen", "tcp://127.0.0.1:0"], stderr=log)
            port = wait_serving(producer, log)
            t0 = time.monotonic()
            reader = procs.start([avreader, f"tcp://127.0.0.1:{port}", p["pictures"]], stdout=subprocess.PIPE)
            try:
                out, _ = reader.communicate(timeout=p["pictures"] / FPS + 30)
            except subprocess.TimeoutExpired:
                raise BenchError(f"avreader did not get {p['pictures']} pictures: {stderr_tail(log)}")
            wall = time.monotonic() - t0
        rows = []
        for line in out.decode(errors="replace").splitlines():
            fields = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
            if int(fields.get("arrival_mono", "0")) > 0:
                rows.append({k: int(v) for k, v in fields.items()})
        rows = rows[p["skip"]:]
        if len(rows) < 5:
            raise BenchError(f"only {len(rows)} pictures timed: {stderr_tail(log)}")
        waits = [(r["decoded_mono"] - r["arrival_mono"]) / 1e6 for r in rows]
        captured = [(r["decoded_real"] - r["capture_real"]) / 1e6 for r in rows if r["capture_real"] > 0]
        extra = {"median_ms": median(waits), "p95_ms": pct(waits, 0.95)}
        if captured:
            extra["capture_median_ms"] = median(captured)
        return Sample(wall, 0, 0, extra=extra)
    return guard(measure)


def cases(ctx: Context) -> list:
    p = QUICK if ctx.quick else FULL
    skip = ctx.nalcast.unavailable("produce")
    before = os.environ.get("NALCAST_BEFORE")
    contenders = [Contender("nalcast", measure=_measure(ctx.nalcast.path, p, "nalcast"), skip=skip)]
    contenders.append(Contender("nalcast before (NALCAST_BEFORE)",
                                measure=_measure(Path(before), p, "before") if before else None,
                                skip=None if before else "skipped (NALCAST_BEFORE not set)"))
    case = Case(NAME, f"reader {p['size']}@{FPS} arrival->decoded", "", p["pictures"], contenders,
                runs=ctx.runs_for(3),
                figures=[("median_ms", "in reader median", "{:.1f} ms"), ("p95_ms", "p95", "{:.1f} ms"),
                         ("capture_median_ms", "capture->decoded", "{:.1f} ms")])
    case.notes.append(f"{case.label}: c/avreader (libavcodec's parser, low_delay, 1 thread), last byte of a "
                      f"picture read -> picture out of the decoder; a frame interval at {FPS} fps is "
                      f"{1000 / FPS:.1f} ms")
    return [case]
