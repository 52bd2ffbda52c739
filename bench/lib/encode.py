"""encode: raw I420 frames on stdin (or a file) encoded to H.264 with the same x264 settings.

Contenders: the bare C libx264 program `c/x264loop.c` (the limit: encoding alone),
FFmpeg `-f rawvideo -i -`, GStreamer `filesrc ! rawvideoparse ! x264enc`, and
`nalcast produce --source raw:-`. Settings of ANCHORS.md: zerolatency tune, keyint 60,
no scenecut, 6 Mbit/s CBR with a 3600 kbit (600 ms) VBV, presets ultrafast and veryfast.
Every contender writes its stream to a file, and the x264 options SEI of each is
compared with the limit's: a differing string means the comparison is not fair.
"""

from __future__ import annotations

import re
from pathlib import Path

from harness import Case, Context, Contender, cached, gst_has, has_program, sh

NAME = "encode"
ABOUT = "encode 300 raw 1080p frames from stdin (fps, CPU, RSS vs the bare libx264 loop)"

PRESETS = ("ultrafast", "veryfast")
FULL = dict(w=1920, h=1080, frames=300)
QUICK = dict(w=320, h=240, frames=30)
FPS, KBPS, BUFSIZE_KBIT, KEYINT = 30, 6000, 3600, 60


def _raw(ctx: Context, p: dict) -> Path:
    name = f"raw-{p['w']}x{p['h']}-{p['frames']}.yuv"

    def make(part: Path) -> None:
        sh(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi",
            "-i", f"testsrc2=size={p['w']}x{p['h']}:rate={FPS}", "-frames:v", str(p["frames"]),
            "-pix_fmt", "yuv420p", "-f", "rawvideo", str(part)])

    return cached(ctx.dir("encode") / name, make)


def x264_options(path: Path):
    """The option string x264 writes into its version SEI, as a dict, or None."""
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16)
    except OSError:
        return None
    m = re.search(rb"x264 - core \d+[^\x00]*? - options: ([^\x00\x80]*)", head)
    if not m:
        return None
    return dict(kv.split("=", 1) for kv in m.group(1).decode(errors="replace").split() if "=" in kv)


def _nonempty(c: Contender):
    path = c.result_file()
    if path is None:
        return None
    with open(path, "rb") as f:
        head = f.read(4)
    if not (head.startswith(b"\x00\x00\x00\x01") or head.startswith(b"\x00\x00\x01")):
        return "no Annex-B output"
    return None


def _fairness(case: Case) -> list:
    ok = [c for c in case.contenders if not c.skip and not c.failed and c.samples]
    limit = next((c for c in ok if c.role == "limit"), None)
    if limit is None:
        return []
    ref = x264_options(limit.result_file())
    if ref is None:
        return [f"{case.label}: no x264 options SEI in the C limit's output"]
    notes = []
    for c in ok:
        if c is limit:
            continue
        opts = x264_options(c.result_file())
        if opts is None:
            notes.append(f"{case.label}: {c.name}: no x264 options SEI found")
            continue
        diff = sorted(k for k in set(ref) | set(opts) if ref.get(k) != opts.get(k))
        if diff:
            notes.append(f"{case.label}: {c.name} x264 settings differ from the C limit: "
                         + ", ".join(f"{k}={opts.get(k)} (C {ref.get(k)})" for k in diff))
    if not notes:
        notes.append(f"{case.label}: x264 option strings identical across "
                     + ", ".join(c.name for c in ok))
    return notes


def cases(ctx: Context) -> list:
    p = QUICK if ctx.quick else FULL
    raw = _raw(ctx, p)
    w, h = p["w"], p["h"]
    outs = ctx.dir("encode", "streams")
    skip_nalcast = ctx.nalcast.unavailable("produce")
    has_ffmpeg = has_program("ffmpeg")
    has_gst = gst_has("rawvideoparse") and gst_has("x264enc")
    result = []
    for preset in PRESETS:
        def out(name: str) -> Path:
            return outs / f"{w}x{h}-{preset}-{name}.h264"

        contenders = [
            Contender("C x264loop", [ctx.tool("x264loop", ("-lx264",)), w, h, FPS, preset, KBPS,
                                     BUFSIZE_KBIT],
                      stdin=raw, stdout=out("c"), role="limit", check=_nonempty),
            Contender("ffmpeg", ["ffmpeg", "-hide_banner", "-v", "error",
                                 "-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", f"{w}x{h}",
                                 "-r", FPS, "-i", "-", "-c:v", "libx264", "-preset", preset,
                                 "-tune", "zerolatency", "-bf", "0", "-g", KEYINT,
                                 "-sc_threshold", "0", "-b:v", f"{KBPS}k", "-maxrate", f"{KBPS}k",
                                 "-bufsize", f"{BUFSIZE_KBIT}k", "-f", "h264", "-"],
                      stdin=raw, stdout=out("ffmpeg"), role="ffmpeg", check=_nonempty),
            Contender("gstreamer", ["gst-launch-1.0", "-q", "filesrc", f"location={raw}", "!",
                                    "rawvideoparse", f"width={w}", f"height={h}", "format=i420",
                                    f"framerate={FPS}/1", "!", "x264enc", f"speed-preset={preset}",
                                    "tune=zerolatency", f"key-int-max={KEYINT}", f"bitrate={KBPS}",
                                    "option-string=scenecut=0", "!",
                                    "video/x-h264,stream-format=byte-stream", "!",
                                    "filesink", f"location={out('gstreamer')}"],
                      output=out("gstreamer"), check=_nonempty),
            Contender("nalcast produce",
                      [ctx.nalcast.path, "produce", "--source", "raw:-", "--input-size", f"{w}x{h}",
                       "--pix-fmt", "i420", "--input-fps", FPS, "--fps", FPS, "--preset", preset,
                       "--keyint", f"{int(KEYINT) / int(FPS):g}s", "--bitrate", f"{KBPS // 1000}M", "--vbv-ms",
                       BUFSIZE_KBIT * 1000 // KBPS, "-o", "-", "--quiet"],
                      stdin=raw, stdout=out("nalcast"), usage_error_skips=True, check=_nonempty,
                      skip=skip_nalcast),
        ]
        if not has_ffmpeg:
            contenders[1].skip = "skipped (ffmpeg not installed)"
        if not has_gst:
            contenders[2].skip = "skipped (GStreamer rawvideoparse/x264enc not installed: gstreamer1.0-plugins-ugly)"

        result.append(Case(NAME, f"encode {w}x{h} {preset}", "fps", p["frames"], contenders,
                           warm=[raw], after=_fairness))
    return result
