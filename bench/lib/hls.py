"""hls: how soon LL-HLS serves a part, from the capture of its pictures.

No player here honours LL-HLS's parts: FFmpeg 5.1 (ffplay) and GStreamer 1.22 (`hlsdemux`,
`hlsdemux2`: its debug log never reads an EXT-X-PART) play whole segments, and hls.js is
not packaged by Debian. So this measures what a Low-Latency player would get at best: a
client that does what one does, in Python, against `produce --source testsrc --size
1280x720 --fps 30 --hls DIR --web ADDR` (1 s segments, 200 ms parts).

Per part: the client asks for the preload hint's open byte range (`Range: bytes=START-`,
answered once a part begins there), then for the playlist that lists it (a blocking
reload); the part's media ends at its segment's program date-time (the capture time of the
segment's first picture) plus the durations of the parts up to it, and its last picture was
captured a frame interval before that. Figures: when its first byte arrived, from the
capture of its last picture (median, p95), and from the end of its media interval. A
player adds PART-HOLD-BACK (600 ms, three parts) and its own decoding and buffering.
"""

from __future__ import annotations

import http.client
import re
import time
from datetime import datetime

from harness import Case, Context, Contender, Sample
from live import BenchError, Procs, guard, median, pct, stderr_tail

NAME = "hls"
ABOUT = "produce --hls --web 720p30: a part's first byte served, from the capture of its last picture (no LL-HLS player here)"

FPS = 30
FULL = dict(size="1280x720", parts=40, skip=5)
QUICK = dict(size="320x240", parts=8, skip=2)


def _get(port: int, path: str, headers: dict | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    conn.request("GET", path, headers=headers or {})
    response = conn.getresponse()
    first = response.read(1)
    arrived = time.time()
    body = first + response.read()
    conn.close()
    return response.status, body, arrived


def _parts(playlist: str) -> dict:
    """(uri, offset) -> (segment's program date-time, media end of the part in the segment)."""
    out, pdt, into = {}, 0.0, 0.0
    for line in playlist.splitlines():
        if line.startswith("#EXT-X-PROGRAM-DATE-TIME:"):
            pdt = datetime.fromisoformat(line[25:].replace("Z", "+00:00")).timestamp()
            into = 0.0
        elif line.startswith("#EXT-X-PART:"):
            uri = re.search(r'URI="([^"]+)"', line).group(1)
            offset = int(re.search(r'BYTERANGE="\d+@(\d+)"', line).group(1))
            into += float(re.search(r"DURATION=([\d.]+)", line).group(1))
            out[(uri, offset)] = (pdt, into)
    return out


def _measure(p: dict):
    def measure(ctx: Context) -> Sample:
        log = ctx.dir("logs") / "hls-produce.stderr"
        hls = ctx.dir("hls", "live")
        for f in hls.glob("*"):
            f.unlink()
        with Procs() as procs:
            producer = procs.start([ctx.nalcast.path, "produce", "--source", "testsrc", "--size", p["size"], "--fps", FPS,
                                    "--hls", hls, "--hls-segment", "1s", "--web", "tcp://127.0.0.1:0"], stderr=log)
            port = None
            deadline = time.monotonic() + 15
            while port is None and time.monotonic() < deadline and producer.poll() is None:
                m = re.search(r"http://127\.0\.0\.1:(\d+)/hls/index\.m3u8", log.read_text(errors="replace"))
                port = int(m.group(1)) if m else None
                time.sleep(0.05)
            if port is None:
                raise BenchError(f"no HLS address: {stderr_tail(log)}")
            t0 = time.monotonic()
            status, body, _ = _get(port, "/hls/index.m3u8")
            if status != 200:
                raise BenchError(f"playlist: {status}")
            served, ends = [], []
            while len(served) < p["parts"] + p["skip"]:
                hint = re.search(r'#EXT-X-PRELOAD-HINT:TYPE=PART,URI="(segment(\d+)\.m4s)",BYTERANGE-START=(\d+)', body.decode())
                if not hint:
                    raise BenchError("no preload hint")
                uri, sequence, start = hint.group(1), int(hint.group(2)), int(hint.group(3))
                status, _, arrived = _get(port, f"/hls/{uri}", {"Range": f"bytes={start}-"})
                if status != 206:
                    raise BenchError(f"hinted part {uri}@{start}: {status}")
                # The playlist that lists it: its segment's part count is at least what it had.
                listed = None
                for _ in range(3):
                    status, body, _ = _get(port, f"/hls/index.m3u8?_HLS_msn={sequence}&_HLS_part=0")
                    listed = _parts(body.decode()).get((uri, start))
                    if listed:
                        break
                if not listed:
                    continue  # a hint that named the next segment too early: not a part served
                pdt, into = listed
                media_end = pdt + into
                served.append((arrived - (media_end - 1 / FPS)) * 1000)
                ends.append((arrived - media_end) * 1000)
            wall = time.monotonic() - t0
        served, ends = served[p["skip"]:], ends[p["skip"]:]
        return Sample(wall, 0, 0, extra={"median_ms": median(served), "p95_ms": pct(served, 0.95),
                                         "end_median_ms": median(ends)})
    return guard(measure)


def cases(ctx: Context) -> list:
    p = QUICK if ctx.quick else FULL
    skip = ctx.nalcast.unavailable("produce")
    contenders = [Contender("nalcast", measure=_measure(p), skip=skip)]
    case = Case(NAME, f"hls {p['size']}@{FPS} capture->part served", "", p["parts"], contenders, runs=ctx.runs_for(3),
                figures=[("median_ms", "capture of last picture->first byte median", "{:.1f} ms"), ("p95_ms", "p95", "{:.1f} ms"),
                         ("end_median_ms", "end of part's media->first byte", "{:.1f} ms")])
    case.notes.append(f"{case.label}: the hinted open range answered once the part is written; a Low-Latency "
                      f"player adds PART-HOLD-BACK (0.6 s) and its buffering; none runs here (FFmpeg 5.1 and "
                      f"GStreamer 1.22 read no parts, hls.js is not in Debian)")
    return [case]
