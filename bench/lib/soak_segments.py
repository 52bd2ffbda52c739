"""The soak's recording, segment by segment: does it decode, how long is it, is the tone whole.

For each finished segment (not `.part`), in name order:
- `ffmpeg -v error -i SEG -f null -`: every picture and audio packet decoded; anything it
  prints is the segment's `decode_errors`, except the null muxer's "non monotonically
  increasing dts" (two frames less than 1 / frame rate apart land on one tick of its time
  base: counted as `dts_complaints`, and the frames listed by ffprobe as `close_frames`);
- ffprobe: the container's duration and each stream's (video, audio);
- `silencedetect` (-50 dB, 0.1 s) on its sound: the tone plays all along, so a silence is
  sound lost between the null sink and the file.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

SILENCE = re.compile(r"silence_(start|end): (-?[0-9.]+)")


def probe(path: Path) -> dict:
    p = subprocess.run(["ffprobe", "-v", "error", "-show_entries",
                        "format=duration:stream=codec_type,duration,nb_frames,width,height",
                        "-of", "json", str(path)], capture_output=True, text=True)
    try:
        j = json.loads(p.stdout)
    except ValueError:
        return {"probe_error": p.stderr.strip()[-300:]}
    out = {"duration": float(j.get("format", {}).get("duration", 0) or 0)}
    for s in j.get("streams", []):
        kind = s.get("codec_type")
        if kind in ("video", "audio"):
            out[f"{kind}_duration"] = float(s.get("duration", 0) or 0)
        if kind == "video":
            out["size"] = f"{s.get('width')}x{s.get('height')}"
    return out


def silences(path: Path) -> list:
    p = subprocess.run(["ffmpeg", "-nostdin", "-hide_banner", "-v", "info", "-vn", "-i", str(path),
                        "-af", "silencedetect=n=-50dB:d=0.1", "-f", "null", "-"], capture_output=True, text=True)
    out, start = [], None
    for kind, value in SILENCE.findall(p.stderr):
        if kind == "start":
            start = float(value)
        elif start is not None:
            out.append([round(start, 3), round(float(value), 3)])
            start = None
    if start is not None:
        out.append([round(start, 3), None])  # silent to the segment's end
    return out


def close_frames(path: Path, fps: float) -> list:
    """The video frames that came less than 0.9 / fps after the one before: [seconds from
    the segment's start, ms after the previous frame, keyframe]."""
    p = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v", "-show_entries", "packet=pts,flags",
                        "-of", "csv=p=0", str(path)], capture_output=True, text=True)
    out, last = [], None
    for line in p.stdout.split():
        pts, flags = line.split(",", 1)
        pts = int(pts)
        if last is not None and pts - last < 0.9 * 90000 / fps:
            out.append([round(pts / 90000, 3), round((pts - last) / 90, 1), flags.startswith("K")])
        last = pts
    return out


def check(directory: Path, fps: float = 30) -> list:
    out = []
    for f in sorted(directory.glob("*.mp4")) if directory.exists() else []:
        d = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", str(f), "-f", "null", "-"],
                           capture_output=True, text=True)
        lines = d.stderr.strip().splitlines()
        # FFmpeg's null muxer times frames at 1 / the stream's frame rate and complains of
        # two that land on one tick: about timestamps, not decoding (close_frames says which)
        dts = [ln for ln in lines if "non monotonically increasing dts to muxer" in ln]
        errors = [ln for ln in lines if ln not in dts]
        seg = {"name": f.name, "bytes": f.stat().st_size, "decode_errors": "\n".join(errors)[-2000:],
               "decode_exit": d.returncode, "dts_complaints": len(dts), "close_frames": close_frames(f, fps)}
        seg.update(probe(f))
        seg["silences"] = silences(f)
        out.append(seg)
    for f in sorted(directory.glob("*.part")) if directory.exists() else []:
        out.append({"name": f.name, "bytes": f.stat().st_size, "unfinished": True})
    return out
