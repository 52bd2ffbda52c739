"""x11: live screen capture from an Xvfb screen (issue 6), side by side with FFmpeg's x11grab.

One Xvfb (1920x1080x24; --quick 320x240) is started for the benchmark, its root painted
with a static plaid (`xsetroot -mod`), and killed at exit. Every contender grabs the
same screen on a 30 fps timer for FRAMES frames (10 s; --quick 15 frames), cursor drawn
(FFmpeg's default and nalcast's).

- grab+convert: BGRA -> I420, nothing else.
  C limit `c/x11grab.c` (xcb_shm_get_image into one segment + libyuv ARGBToI420, no
  cursor); FFmpeg `-f x11grab ... -pix_fmt yuv420p -f null -`. nalcast has no
  convert-only mode: its grab cost is read from the grab+encode rows.
- grab+encode: FFmpeg x11grab + libx264 and `nalcast produce --source x11:DISPLAY
  --capture fixed` (a grab every 1/30 s, as FFmpeg does), the x264 settings of
  ANCHORS.md (ultrafast, zerolatency, keyint 60, no scenecut, 6000k CBR, 3600 kbit VBV),
  to a file; the x264 option strings are compared.

Capture on change (`--capture damage`), its CPU on a still and a typing-like screen and
the glass-to-socket latency are the capture benchmark's (capture.py).

Columns: CPU s over the whole run (rusage); the notes give CPU ms per frame.
"""

from __future__ import annotations

import atexit
import os
import subprocess
from pathlib import Path

import encode
import live
from harness import Case, Context, Contender, has_program

NAME = "x11"
ABOUT = "screen capture from Xvfb on a fixed timer: grab+convert and grab+encode CPU vs FFmpeg x11grab"

FPS, KBPS, BUFSIZE_KBIT, KEYINT, PRESET = 30, 6000, 3600, 60, "ultrafast"
FULL = dict(w=1920, h=1080, frames=300)
QUICK = dict(w=320, h=240, frames=15)

_server: dict = {}


def _stop_xvfb() -> None:
    p = _server.get("proc")
    if p:
        live.Procs.stop(p, grace=3)


def _xvfb(w: int, h: int) -> str:
    """Starts Xvfb on a free display (-displayfd) and paints its root; returns ':N'."""
    if "display" in _server:
        return _server["display"]
    p, display = live.start_xvfb(w, h)
    _server["proc"] = p
    atexit.register(_stop_xvfb)
    _server["display"] = display
    _xsetroot(display, "-mod", "8", "8", "-fg", "#c04020", "-bg", "#2040c0")
    return display


def _xsetroot(display: str, *args: str) -> None:
    subprocess.run(["xsetroot", "-display", display, *args], check=True, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _x264_ffmpeg() -> list:
    return ["-c:v", "libx264", "-preset", PRESET, "-tune", "zerolatency", "-bf", 0, "-g", KEYINT,
            "-sc_threshold", 0, "-b:v", f"{KBPS}k", "-maxrate", f"{KBPS}k", "-bufsize", f"{BUFSIZE_KBIT}k"]


def _x264_nalcast() -> list:
    return ["--fps", FPS, "--preset", PRESET, "--keyint", f"{KEYINT / FPS:g}s", "--bitrate", f"{KBPS}k",
            "--vbv-ms", BUFSIZE_KBIT * 1000 // KBPS]


def _per_frame(frames: int):
    def after(case: Case) -> list:
        parts = []
        for c in case.contenders:
            if c.samples and not c.skip and not c.failed:
                cpu = sorted(s.cpu_s for s in c.samples)[len(c.samples) // 2]
                parts.append(f"{c.name} {cpu * 1000 / frames:.2f}")
        return [f"{case.label}: CPU ms per frame: " + ", ".join(parts)] if parts else []
    return after


def _fair_and_per_frame(frames: int):
    per_frame = _per_frame(frames)

    def after(case: Case) -> list:
        notes = per_frame(case)
        ok = [c for c in case.contenders if c.samples and not c.skip and not c.failed]
        opts = {c.name: encode.x264_options(c.result_file()) for c in ok}
        if len(opts) == 2 and all(opts.values()):
            (na, a), (nb, b) = opts.items()
            diff = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            notes.append(f"{case.label}: x264 option strings " + ("identical" if not diff else
                         "differ: " + ", ".join(f"{k}={a.get(k)} ({na}) / {b.get(k)} ({nb})" for k in diff)))
        return notes
    return after


def cases(ctx: Context) -> list:
    p = QUICK if ctx.quick else FULL
    w, h, frames = p["w"], p["h"], p["frames"]
    if not has_program("Xvfb") or not has_program("xsetroot"):
        why = "skipped (Xvfb or xsetroot not installed: xvfb, x11-xserver-utils)"
        return [Case(NAME, f"x11 {w}x{h}", "fps", frames, [Contender("all", skip=why)])]
    display = _xvfb(w, h)
    skip_f = None if has_program("ffmpeg") else "skipped (ffmpeg not installed)"
    skip_n = ctx.nalcast.unavailable("produce")
    if skip_n is None and "x11" not in (ctx.nalcast.help("produce") or ""):
        skip_n = "skipped (nalcast produce has no x11 source)"
    # a fixed 30 fps timer, as FFmpeg's: --frames counts grabs then (with damage, the
    # default since capture on change, a still screen gives one keep-alive a second)
    fixed = ["--capture", "fixed"] if "--capture" in (ctx.nalcast.help("produce") or "") else []
    outs = ctx.dir("x11", "streams")
    grab = ["ffmpeg", "-hide_banner", "-v", "error", "-f", "x11grab", "-framerate", FPS,
            "-video_size", f"{w}x{h}", "-i", display, "-frames:v", frames]

    convert = Case(NAME, f"x11 grab+convert {w}x{h}", "fps", frames, [
        Contender("C x11grab (limit)", [ctx.tool("x11grab", ("-lxcb", "-lxcb-shm", "-lyuv")), display, w, h, frames, FPS],
                  role="limit"),
        Contender("ffmpeg x11grab", grab + ["-pix_fmt", "yuv420p", "-f", "null", "-"], role="ffmpeg", skip=skip_f),
    ], after=_per_frame(frames))

    def out(name: str) -> Path:
        return outs / f"{w}x{h}-{name}.h264"

    encode_case = Case(NAME, f"x11 grab+encode {w}x{h} {PRESET}", "fps", frames, [
        Contender("ffmpeg x11grab+libx264", grab + ["-pix_fmt", "yuv420p", *_x264_ffmpeg(), "-f", "h264", "-y",
                                                    out("ffmpeg")], output=out("ffmpeg"), role="ffmpeg", skip=skip_f,
                  check=encode._nonempty),
        Contender("nalcast produce x11", [ctx.nalcast.path, "produce", "--source", f"x11:{display}", *_x264_nalcast(),
                                          *fixed, "--frames", frames, "-o", out("nalcast"), "--quiet"],
                  output=out("nalcast"), skip=skip_n, usage_error_skips=True, check=encode._nonempty),
    ], after=_fair_and_per_frame(frames))

    return [convert, encode_case]
