"""scan: how fast an Annex-B file is cut into NAL units and access units.

The nalcast side is `nalcast inspect` (AnnexBScanner + AccessUnitAssembler). Against it:
a plain C start-code scanner (the limit: nothing can read the bytes faster), FFmpeg's
h264 demuxer + parser into the null muxer, GStreamer's h264parse into fakesink. The
input is 60 s of 1080p30 x264 at 6 Mbit/s, concatenated to about 1 GB, read from the
page cache.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from harness import Case, Context, Contender, cached, gst_has, has_program, sh

NAME = "scan"
ABOUT = "Annex-B scan + access-unit assembly throughput on a ~1 GB file (page cache)"

FULL = dict(size="1920x1080", seconds=60, bitrate="6000k", target_bytes=1_000_000_000)
QUICK = dict(size="320x240", seconds=2, bitrate="6000k", target_bytes=4_000_000)


def _piece(ctx: Context, p: dict) -> Path:
    name = f"piece-{p['size']}-{p['seconds']}s-{p['bitrate']}.h264"

    def make(part: Path) -> None:
        sh(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi",
            "-i", f"testsrc2=size={p['size']}:rate=30", "-t", str(p["seconds"]),
            "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "60",
            "-b:v", p["bitrate"], "-maxrate", p["bitrate"], "-bufsize", "3600k",
            "-f", "h264", str(part)])

    return cached(ctx.dir("scan") / name, make)


def _input(ctx: Context, p: dict) -> Path:
    piece = _piece(ctx, p)
    copies = max(1, -(-p["target_bytes"] // piece.stat().st_size))
    name = f"{piece.stem}-x{copies}.h264"

    def make(part: Path) -> None:
        data = piece.read_bytes()
        with open(part, "wb") as f:
            for _ in range(copies):
                f.write(data)

    return cached(ctx.dir("scan") / name, make)


def _inspect_argv(ctx: Context, path: Path):
    """`nalcast inspect` in its cheapest output mode: --summary, else --json."""
    text = ctx.nalcast.help("inspect") or ""
    if re.search(r"--summary\b", text):
        mode = ["--summary"]
    elif re.search(r"--json\b", text):
        mode = ["--json"]
    else:
        mode = []  # one line per access unit; still measured, to a file
    return [ctx.nalcast.path, "inspect", *mode, path]


def cases(ctx: Context) -> list:
    p = QUICK if ctx.quick else FULL
    path = _input(ctx, p)
    mb = path.stat().st_size / 1e6
    outs = ctx.dir("scan", "stdout")

    piece = _piece(ctx, p)
    copies = round(path.stat().st_size / piece.stat().st_size)
    # 00 00 01 cannot overlap itself, so bytes.count is an exact start-code count
    expected_nals = piece.read_bytes().count(b"\x00\x00\x01") * copies

    def nal_count(c: Contender):
        m = re.search(r"\bnal=(\d+)", c.stdout.read_text())
        if not m or int(m.group(1)) != expected_nals:
            return f"the C scan counted {m.group(1) if m else 'no'} NAL units, not {expected_nals}"
        return None

    def printed(c: Contender):
        return None if c.stdout.stat().st_size > 0 else "nalcast inspect printed nothing"

    contenders = [
        Contender("C scan", [ctx.tool("scan"), path], role="limit",
                  stdout=outs / "c-scan.txt", check=nal_count),
        Contender("ffmpeg", ["ffmpeg", "-nostdin", "-v", "error", "-f", "h264", "-framerate", "30",
                             "-i", path, "-c", "copy", "-f", "null", "-"], role="ffmpeg"),
        Contender("gstreamer", ["gst-launch-1.0", "-q", "filesrc", f"location={path}", "!",
                                "h264parse", "!", "fakesink"]),
        Contender("nalcast inspect", None, stdout=outs / "nalcast-inspect.txt",
                  usage_error_skips=True, check=printed),
    ]
    if not has_program("ffmpeg"):
        contenders[1].skip = "skipped (ffmpeg not installed)"
    if not gst_has("h264parse"):
        contenders[2].skip = "skipped (gst-launch-1.0 or h264parse not installed)"
    nalcast = contenders[3]
    nalcast.skip = ctx.nalcast.unavailable("inspect")
    if not nalcast.skip:
        nalcast.argv = _inspect_argv(ctx, path)
    # An older build beside it, runs interleaved: before and after a change, in one run.
    before = os.environ.get("NALCAST_BEFORE")
    old = Contender("nalcast inspect before (NALCAST_BEFORE)", None, stdout=outs / "nalcast-inspect-before.txt",
                    usage_error_skips=True, check=printed,
                    skip=None if before else "skipped (NALCAST_BEFORE not set)")
    if before and not nalcast.skip:
        old.argv = [Path(before).resolve(), *_inspect_argv(ctx, path)[1:]]
    elif before:
        old.skip = nalcast.skip
    contenders.append(old)
    frames = p["seconds"] * 30 * copies
    label = f"scan {mb / 1000:.2f} GB" if mb >= 1000 else f"scan {mb:.1f} MB"
    return [Case(NAME, label, "MB/s", mb, contenders, warm=[path],
                 after=lambda case: _compare_counts(case, frames))]


def _compare_counts(case: Case, frames: int) -> list:
    """Notes comparing what nalcast inspect counted (if its output is JSON with counts)
    with the C scan's NAL units and the number of pictures in the input."""
    c_scan, nalcast = case.contenders[0], case.contenders[3]
    if nalcast.skip or nalcast.failed or not nalcast.samples or c_scan.skip or not c_scan.samples:
        return []
    try:
        report = json.loads(nalcast.stdout.read_text())
        m = re.search(r"\bnal=(\d+)", c_scan.stdout.read_text())
    except (OSError, ValueError):
        return []
    if not isinstance(report, dict):
        return []
    notes = []
    for key, value in report.items():
        if not isinstance(value, int) or isinstance(value, bool):
            continue
        k = key.lower().replace("_", "")
        if "nal" in k and m:
            expected, what = int(m.group(1)), "NAL units by the C scan"
        elif k in ("accessunits", "aus", "frames", "pictures"):
            expected, what = frames, "pictures in the input"
        else:
            continue
        verdict = "matches" if value == expected else "DIFFERS from"
        notes.append(f"{case.label}: nalcast inspect {key}={value} {verdict} {expected} {what}")
    return notes
