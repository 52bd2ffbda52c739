"""segment: cutting a ~1 GB Annex-B file into 5 s segments at IDRs.

nalcast (`consume --from FILE --segments DIR --segment-duration 5s --segment-name
'%Y%m%d-%H%M%S-%n.h264'`: raw Annex-B segments, named so since MP4 became the default, which
keeps the figures comparable with the C program and FFmpeg's h264 segments; fsync'ed per segment
as docs/architecture.md ("Files") requires, and once more with --no-fsync) against FFmpeg's segment muxer and
a C scan-and-write program (c/segment.c: read 1 MiB + memchr, cut at the first IDR after
150 access units, no fsync: the limit; and once more with --fsync, the same durability as
nalcast's default, to compare like with like). The input is the scan benchmark's: 23 copies of
60 s of 1080p30 x264 with an IDR every 2 s, no timestamp SEI, VUI timing at 30 fps, so
every contender cuts at the IDR after 5 s = every 6 s: 230 segments.

Segments go to out/segment/<contender>/, emptied before each run (not timed). Writes land
in the page cache; fsync makes the disk part of the measurement.

Two more cases cut the same input into containers: `segment mp4` (nalcast's fragmented MP4
segments, `--segment-name 'seg-%n.mp4'`, against FFmpeg's segment muxer writing plain MP4,
and once more fragmented with nalcast's movflags: like for like) and `segment ts` (MPEG-TS).
Both mux through libavformat, so every row pays for loading it; a note measures what that
loading costs nalcast in memory (one run on a 10-frame input).

`segment hls` puts `consume --hls DIR` (CMAF segments from the IDR after 2 s, 200 ms parts,
each part a byte range of its segment) beside `consume --segments DIR` cutting the same
input into fragmented MP4 segments of 2 s, with and without their fsync (`--hls` does not
fsync): the target is `--hls` at no more than 1.1x the CPU of `--segments`.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
from pathlib import Path

import harness
from harness import Case, Context, Contender, has_program
import scan

NAME = "segment"
ABOUT = "cutting a ~1 GB Annex-B file into 5 s segments at IDRs, raw, MP4 and TS (nalcast consume vs FFmpeg vs C)"


def _empty(d: Path) -> None:
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True, exist_ok=True)


def _runner(ctx: Context, c: Contender, d: Path):
    def measure(ctx: Context):
        _empty(d)
        return harness.launch(ctx, c, c.stderr_path)
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

    return [Case(NAME, label, "MB/s", mb, contenders, warm=[path], after=notes),
            _container_case(ctx, "mp4", p, path), _container_case(ctx, "ts", p, path), _hls_case(ctx, path)]


def _hls_check(d: Path):
    def check(c: Contender):
        if any(d.glob("*.part")):
            return "a .part file was left"
        playlist = d / "index.m3u8"
        if c.name.endswith("--hls"):
            if not playlist.exists() or not playlist.read_text().endswith("#EXT-X-ENDLIST\n"):
                return "no ended index.m3u8"
        elif not any(d.glob("*.mp4")):
            return "no segments written"
        return None
    return check


def _hls_case(ctx: Context, path: Path) -> Case:
    mb = path.stat().st_size / 1e6
    base = ctx.dir("segment")
    runs = [("nalcast consume --segments", "hls-segments", ["--segments", "{d}", "--segment-duration", "2s", "--segment-name", "seg-%n.mp4"]),
            ("nalcast consume --segments --no-fsync", "hls-segments-nofsync",
             ["--segments", "{d}", "--segment-duration", "2s", "--segment-name", "seg-%n.mp4", "--no-fsync"]),
            ("nalcast consume --hls", "hls", ["--hls", "{d}", "--hls-segment", "2s", "--hls-part", "200ms"])]
    contenders = []
    why = ctx.nalcast.unavailable("consume")
    if not why and "--hls" not in (ctx.nalcast.help("consume") or ""):
        why = "skipped (nalcast consume has no --hls)"
    for name, key, extra in runs:
        d = base / key
        c = Contender(name, None, usage_error_skips=True)
        c.skip = why
        if not why:
            c.argv = [ctx.nalcast.path, "consume", "--from", path, "--quiet", *[str(d) if a == "{d}" else a for a in extra]]
        c.measure = _runner(ctx, c, d)
        c.check = _hls_check(d)
        contenders.append(c)
    label = f"segment hls {mb / 1000:.2f} GB" if mb >= 1000 else f"segment hls {mb:.1f} MB"

    def notes(case: Case) -> list:
        ok = {c.name: c for c in case.contenders if c.samples and not c.failed and not c.skip}
        cpu = {n: statistics.median(s.cpu_s for s in c.samples) for n, c in ok.items()}
        out = []
        for theirs in ("nalcast consume --segments", "nalcast consume --segments --no-fsync"):
            if "nalcast consume --hls" in cpu and theirs in cpu:
                mine = cpu["nalcast consume --hls"]
                per = ", ".join(f"{a.cpu_s / b.cpu_s:.2f}" for a, b in zip(ok["nalcast consume --hls"].samples, ok[theirs].samples))
                out.append(f"{case.label}: --hls against {theirs[16:]}: CPU {mine / cpu[theirs]:.2f}x "
                           f"({mine:.2f} / {cpu[theirs]:.2f} s; per round {per}; target <= 1.1x)")
        return out

    return Case(NAME, label, "MB/s", mb, contenders, warm=[path], after=notes,
                figures=[("user_s", "user", "{:.2f} s"), ("sys_s", "sys", "{:.2f} s")])


# ---------------------------------------------------------------------------
# containers: the same cut into MP4 or MPEG-TS segments

# nalcast's MP4 segments are fragmented with these movflags, and a fragment at least every
# second (Sources/Muxing/Muxer.swift); the like-for-like FFmpeg row asks for the same.
FRAGMENTED = "movflags=frag_keyframe+empty_moov+default_base_moof:frag_duration=1000000"
# what ffprobe names each container (format_name), and FFmpeg's segment_format for it
FORMATS = {"mp4": ("mov,mp4,m4a,3gp,3g2,mj2", "mp4"), "ts": ("mpegts", "mpegts")}


def _probe_container(files: list, ext: str, pictures: int):
    """Every segment is the container asked for, and together they hold every picture of
    the input (packets counted by ffprobe, demuxed, not decoded). An error or None."""
    want, _ = FORMATS[ext]
    packets = 0
    for f in files:
        p = subprocess.run(["ffprobe", "-v", "error", "-count_packets", "-select_streams", "v:0",
                            "-show_entries", "stream=nb_read_packets:format=format_name", "-of", "json", str(f)],
                           capture_output=True, text=True, timeout=60)
        try:
            facts = json.loads(p.stdout)
            name = facts["format"]["format_name"]
            packets += int(facts["streams"][0]["nb_read_packets"])
        except (ValueError, KeyError, IndexError, TypeError):
            return f"ffprobe cannot read {f.name}: {p.stderr.strip()[:200]}"
        if name != want:
            return f"{f.name} is {name}, not {want}"
    if packets != pictures:
        return f"the segments hold {packets} pictures, the input {pictures}"
    return None


def _container_check(d: Path, ext: str, pictures: int):
    def check(c: Contender):
        files = sorted(d.glob(f"*.{ext}"))
        if not files:
            return "no segments written"
        if any(d.glob("*.part")):
            return "a .part file was left"
        problem = _probe_container(files, ext, pictures)
        if problem:
            return problem
        c.extra_note = f"{len(files)} segments, {pictures} pictures"
        return None
    return check


def _loading_rss(ctx: Context, ext: str) -> dict:
    """Peak RSS of `nalcast consume` cutting a 10-frame file into .h264 and into .EXT
    segments: the difference is what loading libavformat and libavcodec (dlopen, and
    the ~100 libraries Debian's libavcodec links) costs before any work."""
    if ctx.nalcast.unavailable("consume"):
        return {}
    tiny = ctx.dir("segment") / "tiny-10-frames.h264"
    if not tiny.exists():
        harness.sh(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
                    "-frames:v", "10", "-c:v", "libx264", "-preset", "ultrafast", "-f", "h264", str(tiny)])
    out = {}
    for kind in ("h264", ext):
        d = ctx.dir("segment", f"tiny-{kind}")
        _empty(d)
        c = Contender(f"tiny {kind}", [ctx.nalcast.path, "consume", "--from", tiny, "--segments", d,
                                       "--segment-name", f"seg-%n.{kind}", "--quiet"])
        s = harness.launch(ctx, c, ctx.dir("logs") / f"segment-tiny-{kind}.stderr")
        if s.status == 0:
            out[kind] = s.rss_kib / 1024
    return out


def _container_case(ctx: Context, ext: str, p: dict, path: Path) -> Case:
    size = path.stat().st_size
    mb = size / 1e6
    piece = scan._piece(ctx, p)
    pictures = p["seconds"] * 30 * round(size / piece.stat().st_size)
    base = ctx.dir("segment")
    _, segment_format = FORMATS[ext]
    keys = ["c-fsync"] + (["ffmpeg", "ffmpeg-frag"] if ext == "mp4" else ["ffmpeg"]) + ["nalcast", "nalcast-nofsync"]
    dirs = {k: base / f"{ext}-{k}" for k in keys}

    def ffmpeg(key: str, extra: list) -> list:
        return ["ffmpeg", "-nostdin", "-v", "error", "-f", "h264", "-framerate", "30", "-i", path, "-c", "copy",
                "-f", "segment", "-segment_time", "5", "-segment_format", segment_format, *extra,
                dirs[key] / f"seg%05d.{ext}"]

    # The floor: c/segmux.c hands each access unit, cut with memchr, to the same libavformat
    # muxer and fsyncs each segment, as nalcast does; nothing else.
    floor = Contender("C segmux --fsync", [ctx.tool("segmux", ("-lavformat", "-lavcodec", "-lavutil")), path, dirs["c-fsync"],
                                          ext, "150", "--fsync"], role="limit", stdout=base / f"{ext}-c-fsync.txt")
    contenders = [floor, Contender("ffmpeg", ffmpeg("ffmpeg", []), role="ffmpeg")]
    if ext == "mp4":
        contenders.append(Contender("ffmpeg fragmented", ffmpeg("ffmpeg-frag", ["-segment_format_options", FRAGMENTED])))
    contenders += [Contender("nalcast consume", None, usage_error_skips=True),
                   Contender("nalcast consume --no-fsync", None, usage_error_skips=True)]
    if not has_program("ffmpeg") or not has_program("ffprobe"):
        for c in contenders:
            c.skip = "skipped (ffmpeg or ffprobe not installed)"
    why = ctx.nalcast.unavailable("consume")
    if not why and f".{ext}" not in (ctx.nalcast.help("consume") or ""):
        why = f"skipped (nalcast consume writes no .{ext} segments)"
    for c, extra in ((contenders[-2], []), (contenders[-1], ["--no-fsync"])):
        c.skip = c.skip or why
        if not c.skip:
            key = "nalcast" if not extra else "nalcast-nofsync"
            c.argv = [ctx.nalcast.path, "consume", "--from", path, "--segments", dirs[key], "--segment-duration", "5s",
                      "--segment-name", f"seg-%n.{ext}", "--quiet", *extra]
    for c, key in zip(contenders, keys):
        c.measure = _runner(ctx, c, dirs[key])
        c.check = _container_check(dirs[key], ext, pictures)
    label = f"segment {ext} {mb / 1000:.2f} GB" if mb >= 1000 else f"segment {ext} {mb:.1f} MB"

    def notes(case: Case) -> list:
        out = []
        ok = {c.name: c for c in case.contenders if c.samples and not c.failed and not c.skip}
        for c in case.contenders:
            n = getattr(c, "extra_note", None)
            if n and c.name in ok:
                out.append(f"{case.label}: {c.name} wrote {n}")
        # The targets: at least 1.5x FFmpeg's rate, at most 0.6x its CPU, at most 16 MiB.
        med = {name: (harness.median_wall(c), statistics.median(s.cpu_s for s in c.samples),
                      statistics.median(s.rss_kib for s in c.samples) / 1024,
                      statistics.median(s.extra.get("user_s", 0.0) for s in c.samples)) for name, c in ok.items()}
        for mine in ("nalcast consume", "nalcast consume --no-fsync"):
            if mine == "nalcast consume" and mine in med and "C segmux --fsync" in med:
                (_, ca, _, ua), (_, cb, _, ub) = med[mine], med["C segmux --fsync"]
                user = f", user CPU {ua / ub:.2f}x" if ub > 0 else ""
                out.append(f"{case.label}: {mine} against the C floor (c/segmux.c: the same muxer, each segment "
                           f"fsync'ed): CPU {ca / cb:.2f}x ({ca:.2f} / {cb:.2f} s){user}")
            for theirs in ("ffmpeg", "ffmpeg fragmented"):
                if mine in med and theirs in med:
                    (wa, ca, ra, ua), (wb, cb, rb, ub) = med[mine], med[theirs]
                    user = f", user CPU {ua / ub:.2f}x" if ub > 0 else ""
                    out.append(f"{case.label}: {mine} against {theirs}: rate {wb / wa:.2f}x, CPU {ca / cb:.2f}x "
                               f"({ca:.2f} / {cb:.2f} s){user}, RSS {ra:.1f} / {rb:.1f} MiB "
                               f"(targets: rate >= 1.5x, CPU <= 0.6x, RSS <= 16 MiB)")
        if any(name.startswith("nalcast") for name in ok):
            rss = _loading_rss(ctx, ext)
            if "h264" in rss and ext in rss:
                out.append(f"{case.label}: nalcast consume on a 10-frame input peaks at {rss['h264']:.1f} MiB "
                           f"with .h264 segments and {rss[ext]:.1f} MiB with .{ext} ones: loading libavformat and "
                           f"libavcodec costs {rss[ext] - rss['h264']:.1f} MiB before any work")
        return out

    # User and system time apart: both write the same gigabyte through the kernel, and the
    # machine's load moves the system time most.
    return Case(NAME, label, "MB/s", mb, contenders, warm=[path], after=notes,
                figures=[("user_s", "user", "{:.2f} s"), ("sys_s", "sys", "{:.2f} s")])
