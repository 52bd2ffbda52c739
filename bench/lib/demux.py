"""demux: a container file to Annex-B, through libavformat, against FFmpeg's `-c copy`.

The nalcast side is `consume --from FILE -o /dev/null` (Demuxer, PacketCutter for MPEG-TS,
AnnexBPackager, the access units written on the reader thread). Against it: FFmpeg's
`-c copy` to the raw h264 muxer (with `-bsf:v h264_mp4toannexb` for MP4, which FFmpeg 5.1
inserts by itself anyway). The input is a 20 s 720p30 8 Mbit/s x264 clip (an IDR every
2 s), 50 copies in one MP4 of about 1 GB, and the same remuxed as MPEG-TS, read from the
page cache. What to read is the CPU column (the note gives nalcast's over FFmpeg's): both
write to /dev/null. NALCAST_BEFORE runs an older build beside it, interleaved.
"""

from __future__ import annotations

import os
from pathlib import Path

from harness import Case, Context, Contender, cached, has_program, sh

NAME = "demux"
ABOUT = "MP4 and MPEG-TS to Annex-B through libavformat (~1 GB, page cache) against FFmpeg -c copy"

FULL = dict(size="1280x720", seconds=20, bitrate="8000k", copies=50)
QUICK = dict(size="320x240", seconds=2, bitrate="1000k", copies=2)


def _clip(ctx: Context, p: dict) -> Path:
    def make(part: Path) -> None:
        sh(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi",
            "-i", f"testsrc2=size={p['size']}:rate=30", "-t", str(p["seconds"]),
            "-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-g", "60",
            "-sc_threshold", "0", "-bf", "0", "-b:v", p["bitrate"], "-maxrate", p["bitrate"],
            "-bufsize", "4000k", "-pix_fmt", "yuv420p", "-f", "mp4", str(part)])

    return cached(ctx.dir("demux") / f"clip-{p['size']}-{p['seconds']}s-{p['bitrate']}.mp4", make)


def _inputs(ctx: Context, p: dict) -> dict:
    clip = _clip(ctx, p)
    stem = f"{clip.stem}-x{p['copies']}"

    def make_mp4(part: Path) -> None:
        listing = ctx.dir("demux") / f"{stem}.txt"
        listing.write_text("".join(f"file '{clip.resolve()}'\n" for _ in range(p["copies"])))
        sh(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "concat", "-safe", "0", "-i", str(listing),
            "-c", "copy", "-f", "mp4", str(part)])

    mp4 = cached(ctx.dir("demux") / f"{stem}.mp4", make_mp4)

    def make_ts(part: Path) -> None:
        sh(["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", str(mp4), "-c", "copy", "-f", "mpegts", str(part)])

    return {"mp4": mp4, "ts": cached(ctx.dir("demux") / f"{stem}.ts", make_ts)}


def _consume(binary, path: Path) -> list:
    return [binary, "consume", "-q", "--from", path, "-o", "/dev/null"]


def cases(ctx: Context) -> list:
    if not has_program("ffmpeg"):
        return []  # the inputs are made with it
    p = QUICK if ctx.quick else FULL
    out = []
    for kind, path in _inputs(ctx, p).items():
        mb = path.stat().st_size / 1e6
        bsf = ["-bsf:v", "h264_mp4toannexb"] if kind == "mp4" else []
        contenders = [
            Contender("ffmpeg -c copy", ["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-map", "0:v",
                                         "-c", "copy", *bsf, "-f", "h264", "-y", "/dev/null"], role="ffmpeg"),
            Contender("nalcast consume", None, usage_error_skips=True),
        ]
        nalcast = contenders[1]
        nalcast.skip = ctx.nalcast.unavailable("consume")
        if not nalcast.skip:
            nalcast.argv = _consume(ctx.nalcast.path, path)
        before = os.environ.get("NALCAST_BEFORE")
        old = Contender("nalcast consume before (NALCAST_BEFORE)", None, usage_error_skips=True,
                        skip=None if before else "skipped (NALCAST_BEFORE not set)")
        if before:
            old.argv = _consume(Path(before).resolve(), path)
        contenders.append(old)
        label = f"demux {kind} {mb / 1000:.2f} GB" if mb >= 1000 else f"demux {kind} {mb:.1f} MB"
        out.append(Case(NAME, label, "MB/s", mb, contenders, warm=[path],
                        after=lambda case, gb=mb / 1000: _cpu_notes(case, gb)))
    return out


def _cpu_notes(case: Case, gb: float) -> list:
    """CPU seconds per GB of each row, and nalcast's against FFmpeg's (the row's target)."""
    import statistics
    cpu = {c.name: statistics.median(s.cpu_s for s in c.samples)
           for c in case.contenders if not c.skip and not c.failed and c.samples}
    notes = [f"{case.label}: CPU per GB " + ", ".join(f"{name} {v / gb:.3f} s" for name, v in cpu.items())]
    ffmpeg = cpu.get("ffmpeg -c copy")
    for name, v in cpu.items():
        if name.startswith("nalcast") and ffmpeg:
            notes.append(f"{case.label}: {name} CPU {v / ffmpeg:.2f}x FFmpeg's")
    return notes
