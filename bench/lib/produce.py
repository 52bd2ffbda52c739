"""produce: the parts of `nalcast produce` around the encoder (issue 3).

- pattern: what the test pattern costs next to the encode. nalcast has no "generate
  only" mode, so its pattern cost is testsrc -> encode minus the encode of the same
  pictures from raw frames (nalcast's own pattern, decoded once into a raw file: same
  content, same encode work). FFmpeg's is `testsrc2` alone (the null muxer, no encoder)
  against raw testsrc2 frames -> libx264. Ratios in the notes.
- latency: capture -> encoded access unit per frame, live 1080p30 test pattern, from
  nalcast's metrics (`nalcast_capture_to_encoded_milliseconds`), and capture -> read by
  a TCP reader from the timestamp SEI against the arrival time.
- rss: peak RSS of raw -> encode at 720p (1080p is in the encode benchmark) and of the
  test-pattern path at 720p and 1080p, against the C x264loop.
"""

from __future__ import annotations

import re
import statistics
import time
import urllib.request
from pathlib import Path

import encode
from harness import Case, Context, Contender, Sample, cached, has_program, sh
from live import BenchError, Procs, ThreadReader, connect, cpu_s, free_port, median, pct, rss_kib, wait_serving

NAME = "produce"
ABOUT = "test pattern cost vs encode, capture->encoded latency, peak RSS at 720p/1080p vs the C loop"

FPS, KBPS, BUFSIZE_KBIT, KEYINT = 30, 6000, 3600, 60
FULL = dict(big=(1920, 1080), small=(1280, 720), frames=300, live_s=6.0, presets=("ultrafast", "veryfast"))
QUICK = dict(big=(320, 240), small=None, frames=30, live_s=1.0, presets=("ultrafast",))


def _x264_args(preset: str) -> list:
    return ["--fps", FPS, "--preset", preset, "--keyint", f"{KEYINT / FPS:g}s", "--bitrate", f"{KBPS}k",
            "--vbv-ms", BUFSIZE_KBIT * 1000 // KBPS]


def _ffmpeg_x264(preset: str) -> list:
    return ["-c:v", "libx264", "-preset", preset, "-tune", "zerolatency", "-bf", 0, "-g", KEYINT,
            "-sc_threshold", 0, "-b:v", f"{KBPS}k", "-maxrate", f"{KBPS}k", "-bufsize", f"{BUFSIZE_KBIT}k"]


def _pattern_raw(ctx: Context, w: int, h: int, frames: int) -> Path:
    """nalcast's test pattern, frames 0..N-1, as raw I420 (encoded at a high bitrate, decoded)."""
    def make(part: Path) -> None:
        h264 = part.with_suffix(".h264")
        sh([ctx.nalcast.path, "produce", "--source", "testsrc", "--no-realtime", "--size", f"{w}x{h}",
            "--frames", frames, "--preset", "ultrafast", "--bitrate", "60M", "-o", h264, "-q"])
        sh(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "h264", "-i", h264, "-pix_fmt", "yuv420p",
            "-f", "rawvideo", part])
        h264.unlink()
    return cached(ctx.dir("produce") / f"pattern-{w}x{h}-{frames}.yuv", make)


def _pattern_case(ctx: Context, p: dict, skip_n) -> Case:
    w, h = p["big"]
    n = p["frames"]
    preset = "ultrafast"
    raw2 = encode._raw(ctx, dict(w=w, h=h, frames=n))
    rows = []
    warm = [raw2]
    if not skip_n:
        pat = _pattern_raw(ctx, w, h, n)
        warm.append(pat)
        common = ["--frames", n, *_x264_args(preset), "-o", "/dev/null", "-q"]
        rows += [
            Contender("nalcast testsrc -> encode",
                      [ctx.nalcast.path, "produce", "--source", "testsrc", "--no-realtime",
                       "--size", f"{w}x{h}", *common], usage_error_skips=True),
            Contender("nalcast raw pattern -> encode",
                      [ctx.nalcast.path, "produce", "--source", f"raw:{pat}", "--input-size", f"{w}x{h}",
                       "--pix-fmt", "i420", "--input-fps", FPS, *common], usage_error_skips=True),
        ]
    else:
        rows += [Contender("nalcast testsrc -> encode", skip=skip_n)]
    skip_f = None if has_program("ffmpeg") else "skipped (ffmpeg not installed)"
    rows += [
        Contender("ffmpeg testsrc2 alone",
                  ["ffmpeg", "-nostdin", "-hide_banner", "-v", "error", "-f", "lavfi",
                   "-i", f"testsrc2=size={w}x{h}:rate={FPS}", "-frames:v", n, "-f", "null", "-"], skip=skip_f),
        Contender("ffmpeg raw testsrc2 -> encode",
                  ["ffmpeg", "-nostdin", "-hide_banner", "-v", "error", "-f", "rawvideo", "-pix_fmt", "yuv420p",
                   "-s", f"{w}x{h}", "-r", FPS, "-i", raw2, *_ffmpeg_x264(preset), "-f", "null", "-"],
                  skip=skip_f, role="ffmpeg"),
        Contender("ffmpeg testsrc2 -> encode",
                  ["ffmpeg", "-nostdin", "-hide_banner", "-v", "error", "-f", "lavfi",
                   "-i", f"testsrc2=size={w}x{h}:rate={FPS}", "-frames:v", n, "-pix_fmt", "yuv420p",
                   *_ffmpeg_x264(preset), "-f", "null", "-"], skip=skip_f),
    ]
    return Case(NAME, f"produce pattern {w}x{h} {preset}", "fps", n, rows, warm=warm, after=_pattern_notes)


def _pattern_notes(case: Case) -> list:
    cpu = {c.name: statistics.median(s.cpu_s for s in c.samples) for c in case.contenders if c.samples}
    notes = []
    a, b = cpu.get("nalcast testsrc -> encode"), cpu.get("nalcast raw pattern -> encode")
    if a and b:
        notes.append(f"{case.label}: nalcast test pattern cost / encode cost = ({a:.2f} - {b:.2f}) / {b:.2f} "
                     f"= {(a - b) / b:.3f} (target < 0.1; the raw row also reads the file, so this is "
                     "pattern minus file reading)")
    g, e, ge = (cpu.get(k) for k in ("ffmpeg testsrc2 alone", "ffmpeg raw testsrc2 -> encode",
                                      "ffmpeg testsrc2 -> encode"))
    if g and e:
        notes.append(f"{case.label}: FFmpeg testsrc2 alone / encode from raw = {g:.2f} / {e:.2f} = {g / e:.3f}"
                     + (f"; (testsrc2 -> encode - raw -> encode) / raw -> encode = {(ge - e) / e:.3f}" if ge else ""))
    return notes


# ---------------------------------------------------------------------------
# capture -> encoded latency (metrics) and capture -> read (SEI)


def _metrics(port: int) -> dict:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=3).read().decode()
    out = {}
    for m in re.finditer(r'^nalcast_capture_to_encoded_milliseconds\{quantile="([0-9.]+)"\} ([0-9.eE+-]+)$',
                         text, re.M):
        out[m.group(1)] = float(m.group(2))
    m = re.search(r'^nalcast_encode_milliseconds\{stat="mean"\} ([0-9.eE+-]+)$', text, re.M)
    if m:
        out["encode_mean"] = float(m.group(1))
    return out


def _latency_measure(p: dict, preset: str):
    def measure(ctx: Context) -> Sample:
        w, h = p["big"]
        log = ctx.dir("logs") / f"produce-latency-{preset}.stderr"
        mport = free_port()
        try:
            with Procs() as procs:
                proc = procs.start([ctx.nalcast.path, "produce", "--source", "testsrc", "--size", f"{w}x{h}",
                                    *_x264_args(preset), "--listen", "tcp://127.0.0.1:0",
                                    "--metrics", f"tcp://127.0.0.1:{mport}"], stderr=log)
                port = wait_serving(proc, log)
                reader = ThreadReader(connect(port))
                reader.start()
                c0, t0 = cpu_s(proc.pid), time.monotonic()
                time.sleep(p["live_s"])
                m = _metrics(mport)
                cpu, wall, hwm = cpu_s(proc.pid) - c0, time.monotonic() - t0, rss_kib(proc.pid)[1]
                reader.stop()
        except BenchError as e:
            return Sample(0, 0, 0, status=1, extra={"error": str(e)})
        except OSError as e:
            return Sample(0, 0, 0, status=1, extra={"error": f"metrics: {e}"})
        if "0.5" not in m or "0.99" not in m:
            return Sample(0, 0, 0, status=1, extra={"error": "no nalcast_capture_to_encoded_milliseconds in /metrics"})
        lat = [(q.done_ns - q.capture_ns) / 1e6 for q in reader.stream.pictures[1:] if q.capture_ns]
        if not lat:
            return Sample(0, 0, 0, status=1, extra={"error": "the reader got no picture with a timestamp SEI"})
        return Sample(wall, cpu, hwm, extra=dict(enc_p50=m["0.5"], enc_p99=m["0.99"], enc_mean=m.get("encode_mean"),
                                                 read_p50=median(lat), read_p99=pct(lat, 0.99), frames=len(lat)))
    return measure


def _latency_case(ctx: Context, p: dict, skip_n) -> Case:
    w, h = p["big"]
    rows = [Contender(f"nalcast testsrc {preset}", measure=_latency_measure(p, preset), skip=skip_n,
                      usage_error_skips=True) for preset in p["presets"]]
    case = Case(NAME, f"produce latency {w}x{h} live", "", 1, rows, runs=ctx.runs_for(3),
                figures=[("enc_p50", "capture->encoded p50", "{:.1f}"), ("enc_p99", "p99", "{:.1f} ms"),
                         ("enc_mean", "encode mean", "{:.1f} ms"),
                         ("read_p50", "capture->read p50", "{:.1f}"), ("read_p99", "p99", "{:.1f} ms")])
    case.notes.append(f"{case.label}: live test pattern at {FPS} fps for {p['live_s']:g} s; capture->encoded "
                      "from nalcast's /metrics (its own window of recent frames), capture->read from the "
                      "timestamp SEI against the arrival of the picture's last byte at a TCP reader")
    return case


# ---------------------------------------------------------------------------
# peak RSS


def _rss_cases(ctx: Context, p: dict, skip_n) -> list:
    result = []
    sizes = [p["small"], p["big"]] if p["small"] else [p["big"]]
    for (w, h) in sizes:
        for preset in p["presets"]:
            n = p["frames"]
            rows = []
            raw = None
            if (w, h) != (1920, 1080):  # 1080p raw -> encode is the encode benchmark
                raw = encode._raw(ctx, dict(w=w, h=h, frames=n))
                rows += [
                    Contender("C x264loop", [ctx.tool("x264loop", ("-lx264",)), w, h, FPS, preset, KBPS,
                                             BUFSIZE_KBIT], stdin=raw, role="limit"),
                    Contender("nalcast raw:- -> encode",
                              [ctx.nalcast.path, "produce", "--source", "raw:-", "--input-size", f"{w}x{h}",
                               "--pix-fmt", "i420", "--input-fps", FPS, *_x264_args(preset), "-o", "-", "-q"],
                              stdin=raw, skip=skip_n, usage_error_skips=True),
                ]
            else:
                # a limit row without the 900 MB input: x264loop on the pattern frames
                pat = _pattern_raw(ctx, w, h, n) if not skip_n else None
                rows += [Contender("C x264loop (pattern frames)",
                                   [ctx.tool("x264loop", ("-lx264",)), w, h, FPS, preset, KBPS, BUFSIZE_KBIT],
                                   stdin=pat, role="limit", skip=skip_n)]
            rows.append(Contender("nalcast testsrc -> encode",
                                  [ctx.nalcast.path, "produce", "--source", "testsrc", "--no-realtime",
                                   "--size", f"{w}x{h}", "--frames", n, *_x264_args(preset), "-o", "/dev/null",
                                   "-q"], skip=skip_n, usage_error_skips=True))
            result.append(Case(NAME, f"produce rss {w}x{h} {preset}", "fps", n, rows,
                               warm=[raw] if raw else []))
    return result


def cases(ctx: Context) -> list:
    p = QUICK if ctx.quick else FULL
    skip_n = ctx.nalcast.unavailable("produce")
    return [_pattern_case(ctx, p, skip_n), _latency_case(ctx, p, skip_n)] + _rss_cases(ctx, p, skip_n)
