"""latency: a raw frame written to the encoder's stdin -> its access unit read from TCP.

The benchmark feeds 1080p I420 frames (testsrc2, the encode benchmark's input, cycled)
at 30 fps into each contender's stdin, noting when each frame's write starts, and reads
the stream from loopback TCP in the same process, noting when the last byte of each
picture arrives. Same x264 settings everywhere (ANCHORS.md).

- nalcast: `produce --source raw:- --listen tcp://127.0.0.1:0 --join next`; frames are
  matched by the SEI sequence number (a dropped frame shows as a gap and is counted).
- FFmpeg: `-f h264 tcp://127.0.0.1:PORT?listen=1`; matched by order.
- GStreamer: `fdsrc ! rawvideoparse ! x264enc ! h264parse ! tcpserversink`; by order.
- C limit: `c/x264loop.c` with its stdout piped straight into the reader (a pipe, not
  TCP: encoding plus one write, nothing else); by order.
"""

from __future__ import annotations

import mmap
import os
import subprocess
import threading
import time

import encode
from harness import Case, Context, Contender, Sample, gst_has, has_program
from live import (BenchError, Procs, ThreadReader, connect, cpu_s, free_port, pct, median, rss_kib,
                  stderr_tail, wait_listening, wait_serving)

NAME = "latency"
ABOUT = "raw frame fed at 30 fps -> its access unit read from TCP (median, p99), vs FFmpeg/GStreamer/C"

FPS, KBPS, BUFSIZE_KBIT, KEYINT = 30, 6000, 3600, 60
FULL = dict(w=1920, h=1080, frames=900, raw_frames=300, skip=30, presets=("ultrafast", "veryfast"), runs=3)
QUICK = dict(w=320, h=240, frames=30, raw_frames=30, skip=3, presets=("ultrafast",), runs=1)


def _argv(ctx: Context, kind: str, p: dict, preset: str, port: int) -> list:
    w, h = p["w"], p["h"]
    if kind == "nalcast":
        return [ctx.nalcast.path, "produce", "--source", "raw:-", "--input-size", f"{w}x{h}",
                "--pix-fmt", "i420", "--input-fps", FPS, "--fps", FPS, "--preset", preset,
                "--keyint", f"{KEYINT / FPS:g}s", "--bitrate", f"{KBPS}k", "--vbv-ms",
                BUFSIZE_KBIT * 1000 // KBPS, "--listen", "tcp://127.0.0.1:0", "--join", "next"]
    if kind == "ffmpeg":
        return ["ffmpeg", "-hide_banner", "-v", "error", "-f", "rawvideo",
                "-pix_fmt", "yuv420p", "-s", f"{w}x{h}", "-r", FPS, "-i", "-", "-c:v", "libx264",
                "-preset", preset, "-tune", "zerolatency", "-bf", 0, "-g", KEYINT, "-sc_threshold", 0,
                "-b:v", f"{KBPS}k", "-maxrate", f"{KBPS}k", "-bufsize", f"{BUFSIZE_KBIT}k",
                "-f", "h264", f"tcp://127.0.0.1:{port}?listen=1"]
    if kind == "gstreamer":
        return ["gst-launch-1.0", "-q", "fdsrc", "fd=0", "!", "rawvideoparse", f"width={w}", f"height={h}",
                "format=i420", f"framerate={FPS}/1", "!", "x264enc", f"speed-preset={preset}",
                "tune=zerolatency", f"key-int-max={KEYINT}", f"bitrate={KBPS}", "option-string=scenecut=0",
                "!", "h264parse", "config-interval=-1", "!",
                "video/x-h264,stream-format=byte-stream,alignment=au", "!",
                "tcpserversink", "host=127.0.0.1", f"port={port}"]
    return [ctx.tool("x264loop", ("-lx264",)), w, h, FPS, preset, KBPS, BUFSIZE_KBIT]


def _feed(fd: int, raw: mmap.mmap, frame_bytes: int, raw_frames: int, n: int, times: list, err: list) -> None:
    """Writes n frames at FPS on absolute deadlines, noting each write's start."""
    start = time.monotonic() + 0.05
    try:
        for i in range(n):
            delay = start + i / FPS - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            off = (i % raw_frames) * frame_bytes
            view = memoryview(raw)[off:off + frame_bytes]
            times.append(time.time_ns())
            while view:
                view = view[os.write(fd, view):]
    except OSError as e:
        err.append(f"feeding frame {len(times)}: {e}")
    finally:
        os.close(fd)


def _measure(kind: str, p: dict, preset: str):
    def measure(ctx: Context) -> Sample:
        try:
            return _run(ctx, kind, p, preset)
        except BenchError as e:
            return Sample(0, 0, 0, status=1, extra={"error": str(e)})
    return measure


def _run(ctx: Context, kind: str, p: dict, preset: str) -> Sample:
    raw_path = encode._raw(ctx, dict(w=p["w"], h=p["h"], frames=p["raw_frames"]))
    frame_bytes = p["w"] * p["h"] * 3 // 2
    log = ctx.dir("logs") / f"latency-{p['w']}x{p['h']}-{preset}-{kind}.stderr"
    n = p["frames"]
    with open(raw_path, "rb") as f, Procs() as procs:
        raw = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
        port = free_port() if kind in ("ffmpeg", "gstreamer") else 0
        out = subprocess.PIPE if kind == "c" else subprocess.DEVNULL
        proc = procs.start(_argv(ctx, kind, p, preset, port), stderr=log, stdin=subprocess.PIPE, stdout=out)
        if kind == "nalcast":
            reader = ThreadReader(connect(wait_serving(proc, log)))
        elif kind == "c":
            reader = ThreadReader(fd=proc.stdout.fileno())
        elif kind == "gstreamer":
            wait_listening(proc, port, log)
            reader = ThreadReader(connect(port))
        else:  # FFmpeg listens once it has read its first input: connect while feeding
            reader = ThreadReader(port=port)
        reader.start()
        if kind != "ffmpeg":
            time.sleep(0.2)  # the reader is registered before the first frame
        times, err = [], []
        t0 = time.monotonic()
        feeder = threading.Thread(target=_feed, args=(os.dup(proc.stdin.fileno()), raw, frame_bytes,
                                                      p["raw_frames"], n, times, err), daemon=True)
        proc.stdin.close()
        proc.stdin = None
        feeder.start()
        cpu = hwm = 0
        deadline = time.monotonic() + n / FPS + 30
        while feeder.is_alive() and time.monotonic() < deadline:
            try:  # the last sample before the stream ends
                cpu, hwm = cpu_s(proc.pid), rss_kib(proc.pid)[1]
            except (OSError, ValueError):
                pass
            feeder.join(0.1)
        reader.join(10)  # the stream ends when the encoder has flushed
        wall = time.monotonic() - t0
        if reader.is_alive():
            reader.stop()
        code = proc.wait(timeout=5) if proc.poll() is None else proc.returncode
        raw.close()
    if err:
        raise BenchError(err[0] + f" ({stderr_tail(log)})")
    if reader.error:
        raise BenchError(f"reader: {reader.error}")
    pics = reader.stream.pictures
    if kind == "nalcast":
        if any(q.seq is None for q in pics):
            raise BenchError("pictures without the timestamp SEI")
        first = pics[0].seq if pics else 0
        matched = [(q.seq - first, q) for q in pics]
    else:
        matched = list(enumerate(pics))
    if len(pics) != n:
        if kind != "nalcast" or len(pics) < 0.95 * n:
            raise BenchError(f"{len(pics)} pictures read for {n} frames fed (exit {code}: {stderr_tail(log)})")
    lat = [(q.done_ns - times[i]) / 1e6 for i, q in matched if p["skip"] <= i < len(times)]
    if not lat:
        raise BenchError("no frame matched")
    if min(lat) < 0:
        raise BenchError(f"negative latency {min(lat):.1f} ms: frames matched wrongly")
    extra = dict(median_ms=median(lat), p99_ms=pct(lat, 0.99), max_ms=max(lat), frames=len(lat),
                 dropped=n - len(pics), latencies_ms=[round(x, 3) for x in lat])
    return Sample(wall, cpu, hwm, extra=extra)


def cases(ctx: Context) -> list:
    p = QUICK if ctx.quick else FULL
    skip_n = ctx.nalcast.unavailable("produce")
    skip_f = None if has_program("ffmpeg") else "skipped (ffmpeg not installed)"
    skip_g = None if all(gst_has(e) for e in ("fdsrc", "rawvideoparse", "x264enc", "h264parse", "tcpserversink")) \
        else "skipped (GStreamer rawvideoparse/x264enc/h264parse/tcpserversink missing)"
    result = []
    for preset in p["presets"]:
        contenders = [
            Contender("C x264loop | pipe", measure=_measure("c", p, preset), role="limit"),
            Contender("ffmpeg tcp listen", measure=_measure("ffmpeg", p, preset), role="ffmpeg", skip=skip_f),
            Contender("gstreamer tcpserversink", measure=_measure("gstreamer", p, preset), skip=skip_g),
            Contender("nalcast produce --listen", measure=_measure("nalcast", p, preset), skip=skip_n,
                      usage_error_skips=True),
        ]
        case = Case(NAME, f"latency {p['w']}x{p['h']} {preset}", "", p["frames"], contenders,
                    runs=ctx.runs_for(p["runs"]),
                    figures=[("median_ms", "median", "{:.1f} ms"), ("p99_ms", "p99", "{:.1f} ms"),
                             ("max_ms", "max", "{:.0f}"), ("dropped", "dropped", "{:.0f}")])
        case.notes.append(f"{case.label}: {p['frames']} frames fed at {FPS} fps, the first {p['skip']} not "
                          "counted; write start -> last byte of its picture read; CPU s and RSS are the "
                          "encoder process's (CPU at the end of the stream, peak RSS)")
        case.after = _pooled
        result.append(case)
    return result


def _pooled(case: Case) -> list:
    """One run's p99 is the 9th worst of 870 frames and moves by a millisecond between
    runs: the note pools every frame of every run, per contender."""
    out = []
    for c in case.contenders:
        lat = sorted(x for s in c.samples for x in s.extra.get("latencies_ms", []))
        if not lat or c.failed or c.skip:
            continue
        out.append(f"{case.label}: {c.name}, all {len(lat)} frames of {len(c.samples)} run(s): "
                   f"median {median(lat):.2f} ms, p99 {pct(lat, 0.99):.2f} ms, p99.9 {pct(lat, 0.999):.2f} ms")
    return out
