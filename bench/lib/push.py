"""push: a live 1080p30 stream read from TCP and pushed over RTMP to a local nginx-rtmp.

One source for both contenders: `nalcast produce --source raw:- --listen` encoding the
encode benchmark's raw testsrc2 frames (cycled), written to its stdin at 30 fps by a feeder
thread (ultrafast, zerolatency, IDR every 2 s, 6 Mbit/s CBR: testsrc2 fills the bitrate,
nalcast's own test pattern would make 0.5 Mbit/s). Its timestamp SEI carries each picture's
capture time and sequence number. Each run starts its own nginx (RTMP module, `live on`,
on a free loopback port, from a generated nginx.conf in out/push/), its own source, then:

- a direct reader of the source's TCP stream (the floor: capture -> last byte over TCP,
  no forwarder, no server), in this process;
- an RTMP player of rtmp://127.0.0.1:R/live/KEY, in this process (`RtmpPlayer`: the
  handshake, connect, createStream, play, then the chunk stream), that notes when each
  video message's last byte arrives and reads the SEI out of its NAL units;
- the contender, reading the source and pushing to nginx:
  nalcast: `nalcast consume --from tcp://127.0.0.1:P --forward rtmp://127.0.0.1:R/live/KEY --quiet`
  ffmpeg:  `ffmpeg -fflags nobuffer -flags low_delay -probesize 32 -analyzeduration 0
            -f h264 -framerate 30 -i tcp://127.0.0.1:P -c copy -f flv rtmp://127.0.0.1:R/live/KEY`
  and, for reference, not the same work: the source pushing itself (`produce --forward`),
  no TCP hop, its CPU and RSS those of the encoder.

After a warm-up, over a window (20 s), every picture the player gets is matched to its
capture time (SEI) and to its arrival at the direct reader (SEI sequence number):
`latency` is capture -> last byte at the RTMP player, `added` is RTMP arrival minus
direct TCP arrival of the same picture (what the forwarder and nginx add), `lost` the
pictures the direct reader got and the player did not. CPU is the forwarder's time on a
CPU over the window (the sum of its threads' /proc schedstat, in ns), RSS its peak (VmHWM).
"""

from __future__ import annotations

import mmap
import os
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path
from typing import Optional

import encode
import latency
from harness import Case, Context, Contender, Sample, has_program
from live import (SEI_UUID, BenchError, Procs, ThreadReader, connect, cpu_s, free_port, median, pct, task_cpu_ns,
                  rss_kib, stderr_tail, unescape, wait_listening, wait_serving)

NAME = "push"
ABOUT = "live 1080p30 from TCP pushed over RTMP to nginx-rtmp: capture -> RTMP player, CPU, RSS vs FFmpeg"

FPS, KBPS = 30, 6000
FULL = dict(w=1920, h=1080, raw_frames=300, preset="ultrafast", warm=3.0, window=20.0, runs=3)
QUICK = dict(w=320, h=240, raw_frames=30, preset="ultrafast", warm=0.3, window=0.7, runs=1)
RTMP_MODULE = Path("/usr/lib/nginx/modules/ngx_rtmp_module.so")
KEY = "bench"


# ---------------------------------------------------------------------------
# nginx-rtmp


def nginx_rtmp_conf(d: Path, port: int, connections: int = 64) -> str:
    """nginx with one RTMP application, live, on loopback port `port`, its files in d."""
    return f"""# bench/lib/push.py: one RTMP application, live, on loopback
load_module {RTMP_MODULE};
daemon off;
master_process off;
worker_processes 1;
pid {d}/nginx.pid;
lock_file {d}/nginx.lock;
error_log {d}/error.log info;
events {{ worker_connections {connections}; }}
rtmp {{
    access_log {d}/access.log;
    server {{
        listen 127.0.0.1:{port};
        chunk_size 4096;
        application live {{
            live on;
            record off;
            wait_key on;
            wait_video on;
        }}
    }}
}}
"""


def _start_nginx(procs: Procs, d: Path) -> int:
    port = free_port()
    for name in ("error.log", "access.log"):
        (d / name).unlink(missing_ok=True)
    conf = d / "nginx.conf"
    conf.write_text(nginx_rtmp_conf(d, port))
    log = d / "nginx.stderr"
    p = procs.start(["nginx", "-p", f"{d}/", "-c", conf, "-e", d / "error.log"], stderr=log)
    wait_listening(p, port, log)
    return port


# ---------------------------------------------------------------------------
# a minimal RTMP player: enough of the protocol to play one live stream from nginx-rtmp


def _amf_str(s: str) -> bytes:
    b = s.encode()
    return b"\x02" + struct.pack(">H", len(b)) + b


def _amf_num(x: float) -> bytes:
    return b"\x00" + struct.pack(">d", x)


def _amf_obj(d: dict) -> bytes:
    out = b"\x03"
    for k, v in d.items():
        kb = k.encode()
        out += struct.pack(">H", len(kb)) + kb
        out += _amf_str(v) if isinstance(v, str) else _amf_num(float(v))
    return out + b"\x00\x00\x09"


def _amf_decode(b: bytes) -> list:
    """The values of an AMF0 command (numbers, strings, booleans, null, objects)."""
    out, i = [], 0

    def value(i):
        t = b[i]
        if t == 0x00:
            return struct.unpack(">d", b[i + 1:i + 9])[0], i + 9
        if t == 0x01:
            return bool(b[i + 1]), i + 2
        if t == 0x02:
            n = struct.unpack(">H", b[i + 1:i + 3])[0]
            return b[i + 3:i + 3 + n].decode(errors="replace"), i + 3 + n
        if t in (0x05, 0x06):
            return None, i + 1
        if t in (0x03, 0x08):
            i += 1 if t == 0x03 else 5
            obj = {}
            while b[i:i + 3] != b"\x00\x00\x09":
                n = struct.unpack(">H", b[i:i + 2])[0]
                k = b[i + 2:i + 2 + n].decode(errors="replace")
                obj[k], i = value(i + 2 + n)
            return obj, i + 3
        raise ValueError(f"AMF0 type {t}")

    try:
        while i < len(b):
            v, i = value(i)
            out.append(v)
    except (ValueError, IndexError, struct.error):
        pass
    return out


class VideoMessage:
    __slots__ = ("done_ns", "size", "key", "seq", "capture_ns", "ts")

    def __init__(self, done_ns: int, size: int, key: bool, ts: int):
        self.done_ns, self.size, self.key, self.ts = done_ns, size, key, ts
        self.seq = self.capture_ns = None


class RtmpPlayer(threading.Thread):
    """Plays rtmp://127.0.0.1:PORT/APP/KEY: the plain (version 0) handshake, connect,
    createStream, play; then reads the chunk stream, reassembles messages and keeps every
    AVC video message (FLV VIDEODATA, AVCPacketType 1) with the arrival of its last byte
    (the recv() that completed it) and nalcast's SEI from its NAL units. Acknowledges
    bytes as the server's window asks, and TCP segments at once (TCP_QUICKACK)."""

    def __init__(self, port: int, app: str, key: str):
        super().__init__(daemon=True)
        self.port, self.app, self.key = port, app, key
        self.videos: list = []
        self.error: Optional[str] = None
        self._halt = threading.Event()
        self.sock: Optional[socket.socket] = None
        # chunk stream state
        self._buf = bytearray()
        self._pos = 0
        self._in_chunk = 128
        # csid -> [timestamp, length, type, stream id, payload so far (None between
        # messages), extended timestamp in use, last timestamp delta]
        self._streams: dict = {}
        self._received = 0
        self._acked = 0
        self._window = 0
        self._length_size = 4
        self._results: dict = {}  # transaction id -> command values

    # -- sending
    def _send(self, csid: int, typ: int, sid: int, payload: bytes) -> None:
        # one fmt-0 chunk, then fmt-3 continuations at our chunk size (4096, announced first)
        head = bytes([csid]) + b"\0\0\0" + struct.pack(">I", len(payload))[1:] + bytes([typ]) + struct.pack("<I", sid)
        parts = [head + payload[:4096]]
        for i in range(4096, len(payload), 4096):
            parts.append(bytes([0xC0 | csid]) + payload[i:i + 4096])
        self.sock.sendall(b"".join(parts))

    def _command(self, sid: int, *values: bytes) -> None:
        self._send(3 if sid == 0 else 8, 20, sid, b"".join(values))

    # -- receiving
    def _recv(self) -> bool:
        try:
            data = self.sock.recv(1 << 18)
        except socket.timeout:
            return True
        if not data:
            return False
        t = time.time_ns()
        # Acknowledge at once (Linux clears TCP_QUICKACK as it goes: set it after every read).
        # nginx-rtmp writes to players with Nagle on, so a delayed ACK from here (up to 40 ms)
        # holds back its next small write: 1-3 % of pictures 44 ms late for every forwarder
        # alike, which would hide what the forwarders themselves do in the p99.
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
        self._received += len(data)
        if self._window and self._received - self._acked >= self._window // 2:
            self._send(2, 3, 0, struct.pack(">I", self._received & 0xFFFFFFFF))
            self._acked = self._received
        self._buf += data
        self._parse(t)
        return True

    def _parse(self, t: int) -> None:
        buf, n = self._buf, len(self._buf)
        while True:
            i = self._pos
            if i >= n:
                break
            fmt, csid = buf[i] >> 6, buf[i] & 0x3F
            i += 1
            if csid == 0:
                if i + 1 > n:
                    break
                csid, i = 64 + buf[i], i + 1
            elif csid == 1:
                if i + 2 > n:
                    break
                csid, i = 64 + buf[i] + 256 * buf[i + 1], i + 2
            st = self._streams.setdefault(csid, [0, 0, 0, 0, None, False, 0])
            hl = (11, 7, 3, 0)[fmt]
            if i + hl > n:
                break
            ts = None
            ext = st[5]  # a type-3 chunk carries the extended timestamp when its header did
            length, typ, sid = st[1], st[2], st[3]
            if fmt <= 2:
                ts = int.from_bytes(buf[i:i + 3], "big")
                ext = ts == 0xFFFFFF
            if fmt <= 1:
                length, typ = int.from_bytes(buf[i + 3:i + 6], "big"), buf[i + 6]
            if fmt == 0:
                sid = int.from_bytes(buf[i + 7:i + 11], "little")
            i += hl
            if ext:
                if i + 4 > n:
                    break
                if ts is not None:
                    ts = int.from_bytes(buf[i:i + 4], "big")
                i += 4
            starting = st[4] is None
            take = min(self._in_chunk, length - (len(st[4]) if not starting else 0))
            if i + take > n:
                break
            # the whole chunk is here: commit its header
            if fmt == 0:
                st[0] = ts
            elif fmt <= 2:
                st[6] = ts
                st[0] += ts
            elif starting and fmt == 3:
                st[0] += st[6]
            st[5] = ext
            st[1], st[2], st[3] = length, typ, sid
            if starting:
                st[4] = bytearray()
            st[4] += buf[i:i + take]
            i += take
            self._pos = i
            if len(st[4]) >= length:
                payload, st[4] = bytes(st[4]), None
                self._message(typ, sid, payload, t, st[0])
        if self._pos > (1 << 20):
            del self._buf[:self._pos]
            self._pos = 0

    def _message(self, typ: int, sid: int, payload: bytes, t: int, ts: int) -> None:
        if typ == 1:  # set chunk size
            self._in_chunk = struct.unpack(">I", payload[:4])[0] & 0x7FFFFFFF
        elif typ == 5:  # window acknowledgement size
            self._window = struct.unpack(">I", payload[:4])[0]
        elif typ == 20:  # AMF0 command
            v = _amf_decode(payload)
            if len(v) >= 2 and v[0] in ("_result", "_error") and isinstance(v[1], float):
                self._results[int(v[1])] = v
            elif v and v[0] == "onStatus":
                info = v[3] if len(v) > 3 and isinstance(v[3], dict) else {}
                if info.get("level") == "error":
                    self.error = f"nginx: {info.get('code')} {info.get('description', '')}"
        elif typ == 9 and len(payload) >= 5 and payload[0] & 0x0F == 7:
            if payload[1] == 0 and len(payload) > 9:  # AVCDecoderConfigurationRecord
                self._length_size = (payload[9] & 3) + 1
            elif payload[1] == 1:
                m = VideoMessage(t, len(payload), payload[0] >> 4 == 1, ts)
                self._nals(m, payload, 5)
                self.videos.append(m)

    def _nals(self, m: VideoMessage, p: bytes, i: int) -> None:
        ls = self._length_size
        while i + ls <= len(p):
            size = int.from_bytes(p[i:i + ls], "big")
            nal = p[i + ls:i + ls + size]
            i += ls + size
            if nal and nal[0] & 0x1F == 6 and m.seq is None:
                raw = nal[1:100]
                k = raw.find(SEI_UUID)
                if k >= 0:
                    body = unescape(raw[k + 16:])
                    if len(body) >= 18:
                        _, _, m.seq, m.capture_ns = struct.unpack(">BBQQ", body[:18])

    def _wait_result(self, txn: int, timeout: float = 10) -> list:
        deadline = time.monotonic() + timeout
        while txn not in self._results:
            if self.error:
                raise BenchError(self.error)
            if time.monotonic() > deadline or self._halt.is_set():
                raise BenchError(f"RTMP player: no answer to command {txn}")
            if not self._recv():
                raise BenchError("RTMP player: nginx closed the connection")
        v = self._results[txn]
        if v[0] != "_result":
            raise BenchError(f"RTMP player: command {txn} refused: {v[3:] if len(v) > 3 else v}")
        return v

    def run(self) -> None:
        try:
            self.sock = connect(self.port)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.sock.settimeout(0.2)
            # plain handshake: C0 C1 (time, zero version, random), S0 S1 S2, C2 = S1
            self.sock.sendall(b"\x03" + struct.pack(">II", 0, 0) + os.urandom(1528))
            got = bytearray()
            deadline = time.monotonic() + 10
            while len(got) < 1 + 1536 * 2:
                try:
                    d = self.sock.recv(8192)
                except socket.timeout:
                    d = None
                if d == b"" or time.monotonic() > deadline:
                    raise BenchError("RTMP player: handshake failed")
                got += d or b""
            self.sock.sendall(bytes(got[1:1 + 1536]))
            self._buf += got[1 + 1536 * 2:]
            self._send(2, 1, 0, struct.pack(">I", 4096))
            url = f"rtmp://127.0.0.1:{self.port}/{self.app}"
            self._command(0, _amf_str("connect"), _amf_num(1), _amf_obj(
                {"app": self.app, "flashVer": "LNX 9,0,124,2", "tcUrl": url, "fpad": 0,
                 "capabilities": 15, "audioCodecs": 0, "videoCodecs": 0x80, "videoFunction": 1}))
            self._wait_result(1)
            self._command(0, _amf_str("createStream"), _amf_num(2), b"\x05")
            v = self._wait_result(2)
            sid = int(v[3]) if len(v) > 3 and isinstance(v[3], float) else 1
            self._command(sid, _amf_str("play"), _amf_num(0), b"\x05", _amf_str(self.key), _amf_num(-1000))
            while not self._halt.is_set() and self.error is None:
                if not self._recv():
                    break
        except (OSError, BenchError) as e:
            self.error = self.error or str(e)

    def stop(self) -> None:
        self._halt.set()
        self.join(2)
        if self.sock is not None:
            self.sock.close()


# ---------------------------------------------------------------------------
# one run


def _forwarder(ctx: Context, kind: str, src: int, rtmp: str, p: dict) -> list:
    if kind == "nalcast":
        return [ctx.nalcast.path, "consume", "--from", f"tcp://127.0.0.1:{src}", "--forward", rtmp, "--quiet"]
    if kind == "c":
        return [ctx.tool("flvpush", ("-lavformat", "-lavcodec", "-lavutil")), f"tcp://127.0.0.1:{src}", rtmp, p["w"], p["h"]]
    return ["ffmpeg", "-hide_banner", "-nostdin", "-v", "error", "-fflags", "nobuffer", "-flags", "low_delay",
            "-probesize", 32, "-analyzeduration", 0, "-f", "h264", "-framerate", FPS,
            "-i", f"tcp://127.0.0.1:{src}", "-c", "copy", "-f", "flv", rtmp]


def _measure(kind: str, p: dict):
    def measure(ctx: Context) -> Sample:
        try:
            return _run(ctx, kind, p)
        except BenchError as e:
            return Sample(0, 0, 0, status=1, extra={"error": str(e)})
    return measure


def _run(ctx: Context, kind: str, p: dict) -> Sample:
    d = ctx.dir("push", f"nginx-{kind}")
    logs = ctx.dir("logs")
    src_log, fwd_log = logs / f"push-source-{kind}.stderr", logs / f"push-{kind}.stderr"
    w, h = p["w"], p["h"]
    raw_path = encode._raw(ctx, dict(w=w, h=h, frames=p["raw_frames"]))
    frame_bytes = w * h * 3 // 2
    with open(raw_path, "rb") as f, Procs() as procs:
        raw = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
        rport = _start_nginx(procs, d)
        url = f"rtmp://127.0.0.1:{rport}/live/{KEY}"
        source = procs.start([ctx.nalcast.path, "produce", "--source", "raw:-", "--input-size", f"{w}x{h}",
                              "--pix-fmt", "i420", "--input-fps", FPS, "--fps", FPS, "--preset", p["preset"],
                              "--keyint", "2s", "--bitrate", f"{KBPS}k", "--vbv-ms", 600,
                              "--listen", "tcp://127.0.0.1:0", *(["--forward", url] if kind == "produce" else [])],
                             stderr=src_log, stdin=subprocess.PIPE)
        sport = wait_serving(source, src_log)
        direct = ThreadReader(connect(sport))
        direct.start()
        # frames at 30 fps for longer than the run needs: the source never ends mid-window
        n = int((p["warm"] + p["window"] + 30) * FPS)
        feeder = threading.Thread(target=latency._feed, args=(os.dup(source.stdin.fileno()), raw, frame_bytes,
                                                              p["raw_frames"], n, [], []), daemon=True)
        source.stdin.close()
        source.stdin = None
        feeder.start()
        player = RtmpPlayer(rport, "live", KEY)  # nginx holds it until the publish starts
        player.start()
        time.sleep(0.3)
        if kind == "produce":  # the encoder pushes itself: no relay, its CPU includes the encoding
            fwd, fwd_log = source, src_log
        else:
            fwd = procs.start(_forwarder(ctx, kind, sport, url, p), stderr=fwd_log)
        if not _wait(lambda: player.videos or player.error or fwd.poll() is not None, 15) or not player.videos:
            raise BenchError(f"no video at the RTMP player (player: {player.error}; "
                             f"forwarder exit {fwd.poll()}: {stderr_tail(fwd_log)})")
        time.sleep(p["warm"])
        try:
            cpu0, t0, w0 = task_cpu_ns(fwd.pid), time.time_ns(), time.monotonic()
            time.sleep(p["window"])
            cpu1, t1, wall = task_cpu_ns(fwd.pid), time.time_ns(), time.monotonic() - w0
            hwm = rss_kib(fwd.pid)[1]
            life_cpu = cpu_s(fwd.pid)
        except (OSError, ValueError, IndexError):
            raise BenchError(f"forwarder gone (exit {fwd.poll()}: {stderr_tail(fwd_log)})")
        alive = fwd.poll() is None
        player.stop()
        direct.stop()
        code = Procs.stop(fwd)
        Procs.stop(source)  # the feeder's next write fails: it ends
        feeder.join(5)
    if not alive:
        raise BenchError(f"forwarder exited {code} during the window: {stderr_tail(fwd_log)}")
    if player.error:
        raise BenchError(f"RTMP player: {player.error}")
    videos = [m for m in player.videos if t0 <= m.done_ns <= t1]
    if not videos:
        raise BenchError("no video message in the window")
    if any(m.seq is None for m in videos):
        raise BenchError(f"{sum(m.seq is None for m in videos)} video messages without nalcast's timestamp SEI")
    arrived = {q.seq: q.done_ns for q in direct.stream.pictures if q.seq is not None}
    lat = [(m.done_ns - m.capture_ns) / 1e6 for m in videos]
    added = [(m.done_ns - arrived[m.seq]) / 1e6 for m in videos if m.seq in arrived]
    direct_lat = [(q.done_ns - q.capture_ns) / 1e6 for q in direct.stream.pictures
                  if q.seq is not None and t0 <= q.done_ns <= t1]
    # lost on the way: pictures the direct reader got, between the player's first and last
    # of the window, that the player never got (frames the source itself dropped under
    # load are gaps for both readers, and not counted)
    got = {m.seq for m in player.videos}
    first, last = videos[0].seq, videos[-1].seq
    lost = sum(1 for s in arrived if first <= s <= last and s not in got)
    if not added:
        raise BenchError("no picture of the RTMP player seen by the direct reader")
    # the FLV timestamps nginx passes on (ms): a step of 33 or 34 at 30 fps, never backwards
    steps = [b.ts - a.ts for a, b in zip(videos, videos[1:])]
    extra = dict(median_ms=median(lat), p99_ms=pct(lat, 0.99), max_ms=max(lat),
                 added_median_ms=median(added), added_p99_ms=pct(added, 0.99),
                 direct_median_ms=median(direct_lat) if direct_lat else None,
                 cpu_pct=(cpu1 - cpu0) / 1e7 / wall, life_cpu_s=life_cpu, frames=len(videos), lost=lost,
                 mbit_s=sum(m.size for m in videos) * 8 / 1e6 / wall,
                 ts_step_ms=median(steps) if steps else None, ts_backwards=sum(1 for x in steps if x <= 0),
                 latencies_ms=[round(x, 3) for x in lat], added_ms=[round(x, 3) for x in added])
    return Sample(wall, (cpu1 - cpu0) / 1e9, hwm, extra=extra)


def _wait(cond, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def cases(ctx: Context) -> list:
    p = QUICK if ctx.quick else FULL
    skip = ctx.nalcast.unavailable("produce") or ctx.nalcast.unavailable("consume")
    if skip is None and not (has_program("nginx") and RTMP_MODULE.exists()):
        skip = f"skipped (nginx or {RTMP_MODULE} missing: nginx-light, libnginx-mod-rtmp)"
    skip_f = skip or (None if has_program("ffmpeg") else "skipped (ffmpeg not installed)")
    contenders = [
        # the floor: libavformat's FLV muxer and RTMP writer alone, fed by recv() and memchr
        Contender("C flvpush (limit)", measure=_measure("c", p), role="limit", skip=skip_f),
        Contender("ffmpeg -c copy -f flv", measure=_measure("ffmpeg", p), role="ffmpeg", skip=skip_f),
        Contender("nalcast consume --forward", measure=_measure("nalcast", p), skip=skip, usage_error_skips=True),
        # not a contender of the same work: the encoder pushing itself, without the TCP hop
        Contender("(nalcast produce --forward, encoder)", measure=_measure("produce", p), skip=skip,
                  usage_error_skips=True),
    ]
    # the source's input (the encode benchmark's raw testsrc2 frames), made before any run
    warm = [] if skip else [encode._raw(ctx, dict(w=p["w"], h=p["h"], frames=p["raw_frames"]))]
    case = Case(NAME, f"push rtmp {p['w']}x{p['h']}", "", p["window"] * FPS, contenders, warm=warm,
                runs=ctx.runs_for(p["runs"]),
                figures=[("median_ms", "median", "{:.1f} ms"), ("p99_ms", "p99", "{:.1f} ms"),
                         ("added_median_ms", "added", "{:.1f} ms"), ("added_p99_ms", "added p99", "{:.1f} ms"),
                         ("cpu_pct", "CPU", "{:.2f} %"), ("mbit_s", "stream", "{:.1f} Mbit/s"), ("lost", "lost", "{:.0f}"),
                         ("ts_step_ms", "FLV step", "{:.1f} ms"), ("ts_backwards", "backwards", "{:.0f}")])
    case.notes.append(f"{case.label}: raw testsrc2 frames fed at {FPS} fps to `nalcast produce --listen` "
                      f"({p['preset']}, {KBPS} kbit/s), read from TCP by the contender and pushed to nginx-rtmp; "
                      f"over {p['window']:g} s after {p['warm']:g} s: "
                      "capture (SEI) -> last byte of its video message at an RTMP player (median, p99), "
                      "'added' = that arrival minus the same picture's arrival at a direct TCP reader of the "
                      "source; CPU s and RSS are the forwarder's (CPU over the window, peak RSS)")
    case.after = _pooled
    return [case]


def _pooled(case: Case) -> list:
    out = []
    ref = {}
    for c in case.contenders:
        lat = sorted(x for s in c.samples for x in s.extra.get("latencies_ms", []))
        add = sorted(x for s in c.samples for x in s.extra.get("added_ms", []))
        if not lat or c.failed or c.skip:
            continue
        cpu = median([s.cpu_s for s in c.samples])
        ref[c.role or c.name] = (median(lat), pct(lat, 0.99), cpu)
        out.append(f"{case.label}: {c.name}, all {len(lat)} pictures of {len(c.samples)} run(s): capture -> "
                   f"RTMP player median {median(lat):.2f} ms, p99 {pct(lat, 0.99):.2f} ms; added over the "
                   f"direct TCP reader median {median(add):.2f} ms, p99 {pct(add, 0.99):.2f} ms")
    f, n, c = ref.get("ffmpeg"), ref.get("nalcast consume --forward"), ref.get("limit")
    if f and n and f[2] > 0:
        out.append(f"{case.label}: nalcast against FFmpeg, pooled: latency median {n[0] - f[0]:+.2f} ms, "
                   f"p99 {n[1] - f[1]:+.2f} ms (target: not higher); CPU (median of runs) {n[2] / f[2]:.2f}x "
                   "(target <= 1.0x)")
    if c and c[2] > 0 and f and n:
        out.append(f"{case.label}: CPU against the C floor (libavformat's RTMP writer alone): FFmpeg {f[2] / c[2]:.2f}x, "
                   f"nalcast {n[2] / c[2]:.2f}x")
    return out
