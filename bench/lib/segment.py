"""segment: cutting a ~1 GB Annex-B file into 5 s segments at IDRs.

nalcast (`consume --from FILE --segments DIR --segment-duration 5s --segment-name
'%Y%m%d-%H%M%S-%n.h264'`: raw Annex-B segments, named so since MP4 became the default, which
keeps the figures comparable with the C program and FFmpeg's h264 segments; fsync'ed per segment
as DESIGN.md requires, and once more with --no-fsync) against FFmpeg's segment muxer and
a C scan-and-write program (c/segment.c: read 1 MiB + memchr, cut at the first IDR after
150 access units, no fsync: the limit; and once more with --fsync, the same durability as
nalcast's default, to compare like with like). The input is the scan benchmark's: 23 copies of
60 s of 1080p30 x264 with an IDR every 2 s, no timestamp SEI, VUI timing at 30 fps, so
every contender cuts at the IDR after 5 s = every 6 s: 230 segments.

Segments go to out/segment/<contender>/, emptied before each run (not timed). Writes land
in the page cache; fsync makes the disk part of the measurement.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import harness
from harness import Case, Context, Contender, has_program
import scan

NAME = "segment"
ABOUT = "cutting a ~1 GB Annex-B file into 5 s segments at IDRs (nalcast consume vs FFmpeg vs C)"


def _empty(d: Path) -> None:
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True, exist_ok=True)


def _runner(ctx: Context, c: Contender, d: Path):
    def measure(ctx: Context):
        _empty(d)
        return harness._launch(ctx, c, c.stderr_path)
    return measure


def _check(d: Path, size: int, pattern: str):
    def check(c: Contender):
        files = sorted(d.glob(pattern))
        total = sum(f.stat().st_size for f in files)
        if not files:
            return "no segments written"
        if c.name.startswith("nalcast") and any(d.glob("*.part")):
            return "a .part file was left"
        # FFmpeg's h264 muxer may add AUDs; nalcast and C must give back every byte.
        if not c.name.startswith("ffmpeg") and total != size:
            return f"segments hold {total} bytes, the input {size}"
        c.extra_note = f"{len(files)} segments"
        return None
    return check


def cases(ctx: Context) -> list:
    p = scan.QUICK if ctx.quick else scan.FULL
    path = scan._input(ctx, p)
    size = path.stat().st_size
    mb = size / 1e6
    base = ctx.dir("segment")
    dirs = {k: base / k for k in ("c", "c-fsync", "ffmpeg", "nalcast", "nalcast-nofsync")}

    contenders = [
        Contender("C segment", [ctx.tool("segment"), path, dirs["c"], "150"], role="limit",
                  stdout=base / "c.txt"),
        Contender("C segment --fsync", [ctx.tool("segment"), path, dirs["c-fsync"], "150", "--fsync"],
                  stdout=base / "c-fsync.txt"),
        Contender("ffmpeg", ["ffmpeg", "-nostdin", "-v", "error", "-f", "h264", "-framerate", "30", "-i", path,
                             "-c", "copy", "-f", "segment", "-segment_time", "5", "-segment_format", "h264",
                             dirs["ffmpeg"] / "seg%05d.h264"], role="ffmpeg"),
        Contender("nalcast consume", None, usage_error_skips=True),
        Contender("nalcast consume --no-fsync", None, usage_error_skips=True),
    ]
    keys = ["c", "c-fsync", "ffmpeg", "nalcast", "nalcast-nofsync"]
    patterns = ["seg*.h264", "seg*.h264", "seg*.h264", "*.h264", "*.h264"]
    if not has_program("ffmpeg"):
        contenders[2].skip = "skipped (ffmpeg not installed)"
    why = ctx.nalcast.unavailable("consume")
    for c, extra in ((contenders[3], []), (contenders[4], ["--no-fsync"])):
        c.skip = why
        if not why:
            key = "nalcast" if not extra else "nalcast-nofsync"
            c.argv = [ctx.nalcast.path, "consume", "--from", path, "--segments", dirs[key],
                      "--segment-duration", "5s", "--segment-name", "%Y%m%d-%H%M%S-%n.h264", "--quiet", *extra]
    for c, key, pattern in zip(contenders, keys, patterns):
        c.measure = _runner(ctx, c, dirs[key])
        c.check = _check(dirs[key], size, pattern)
    label = f"segment {mb / 1000:.2f} GB" if mb >= 1000 else f"segment {mb:.1f} MB"

    def notes(case: Case) -> list:
        out = []
        for c in case.contenders:
            n = getattr(c, "extra_note", None)
            if n and not c.failed:
                out.append(f"{case.label}: {c.name} wrote {n}")
        # Like with like: nalcast's default fsyncs every segment, as the C program does
        # with --fsync; --no-fsync does the same work as the plain C program.
        walls = {c.name: harness.median_wall(c) for c in case.contenders if not c.failed and not c.skip}
        for mine, theirs in (("nalcast consume", "C segment --fsync"), ("nalcast consume --no-fsync", "C segment")):
            wa, wb = walls.get(mine), walls.get(theirs)
            if wa and wb:
                out.append(f"{case.label}: {mine} runs at {wb / wa:.2f}x the rate of {theirs}")
        return out

    return [Case(NAME, label, "MB/s", mb, contenders, warm=[path], after=notes)]
