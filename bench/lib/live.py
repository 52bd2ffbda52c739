"""Helpers for the live benchmarks (serve, latency, produce): processes that are cleaned
up even on failure, /proc sampling, and an incremental Annex-B reader that times every
picture's arrival and decodes nalcast's timestamp SEI.

Times are CLOCK_REALTIME nanoseconds (time.time_ns()), the clock of the SEI's
capture_time_ns, so a reader can compare the two directly.
"""

from __future__ import annotations

import bisect
import os
import re
import signal
import socket
import statistics
import struct
import subprocess
import threading
import time
from pathlib import Path
from typing import Optional

SEI_UUID = bytes.fromhex("0d64dd68597344ac92826e380b34dcd1")
CLK_TCK = os.sysconf("SC_CLK_TCK")


class BenchError(Exception):
    """A contender broke: the message goes into the table as FAILED (...). With status 64
    (EX_USAGE: nalcast rejected an option it does not have yet) a row whose Contender has
    usage_error_skips is shown as skipped instead."""

    def __init__(self, message: str, status: int = 1):
        super().__init__(message)
        self.status = status


# ---------------------------------------------------------------------------
# processes


def stop_group(p: subprocess.Popen, sig: int = signal.SIGTERM, grace: float = 2.0) -> Optional[int]:
    """Signals p's process group (by p's PID), SIGKILL after grace; returns its exit status."""
    if p.poll() is None:
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            pass
        try:
            p.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
    return p.returncode


class Procs:
    """Starts processes in their own session and kills each one's process group on exit
    (SIGTERM, then SIGKILL after a grace period), whatever happened in between."""

    def __init__(self):
        self.procs: list = []
        self.files: list = []

    def __enter__(self):
        return self

    def start(self, argv: list, stderr: Optional[Path] = None, stdin=subprocess.DEVNULL,
              stdout=subprocess.DEVNULL) -> subprocess.Popen:
        err = open(stderr, "wb") if stderr else subprocess.DEVNULL
        if stderr:
            self.files.append(err)
        p = subprocess.Popen([str(a) for a in argv], stdin=stdin, stdout=stdout, stderr=err,
                             start_new_session=True)
        self.procs.append(p)
        return p

    @staticmethod
    def stop(p: subprocess.Popen, grace: float = 2.0) -> Optional[int]:
        return stop_group(p, grace=grace)

    def __exit__(self, *exc):
        for p in reversed(self.procs):
            self.stop(p)
            for f in (p.stdin, p.stdout):
                if f:
                    try:
                        f.close()
                    except OSError:
                        pass
        for f in self.files:
            f.close()
        return False


def alive(proc, log: Path) -> None:
    """Raises BenchError with the tail of its stderr when the producer has exited."""
    if proc.poll() is not None:
        raise BenchError(f"producer exited {proc.returncode}: {stderr_tail(log)}")


def guard(fn):
    """A measure function: BenchError (or any error) becomes a failed sample."""
    from harness import Sample

    def measure(ctx):
        try:
            return fn(ctx)
        except BenchError as e:
            return Sample(0, 0, 0, status=e.status, extra={"error": str(e)})
        except Exception as e:  # a bug here must not leave the table half-made
            return Sample(0, 0, 0, status=1, extra={"error": f"{type(e).__name__}: {e}"})
    return measure


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stderr_tail(path: Optional[Path], n: int = 2) -> str:
    try:
        lines = [l.strip() for l in path.read_text(errors="replace").splitlines() if l.strip()]
        return " | ".join(lines[-n:])
    except (OSError, AttributeError):
        return ""


def wait_serving(p: subprocess.Popen, stderr: Path, timeout: float = 10) -> int:
    """The port nalcast printed as "serving tcp://127.0.0.1:NNNN" on stderr."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = re.search(r"serving tcp://127\.0\.0\.1:(\d+)", stderr.read_text(errors="replace"))
        if m:
            return int(m.group(1))
        if p.poll() is not None:
            raise BenchError(f"exit {p.returncode}: {stderr_tail(stderr)}")
        time.sleep(0.02)
    raise BenchError(f"no 'serving tcp://...' line on stderr in {timeout:.0f} s")


def wait_listening(p: subprocess.Popen, port: int, stderr: Path, timeout: float = 10) -> None:
    """Waits until 127.0.0.1:port is listening, without connecting to it (a connection
    would be a reader): /proc/net/tcp state 0A."""
    deadline = time.monotonic() + timeout
    needle = f":{port:04X} 00000000:0000 0A"
    while time.monotonic() < deadline:
        with open("/proc/net/tcp") as f:
            if needle in f.read():
                return
        if p.poll() is not None:
            raise BenchError(f"exit {p.returncode}: {stderr_tail(stderr)}")
        time.sleep(0.02)
    raise BenchError(f"nothing listens on 127.0.0.1:{port} after {timeout:.0f} s")


def connect(port: int, rcvbuf: Optional[int] = None, timeout: float = 5) -> socket.socket:
    deadline = time.monotonic() + timeout
    while True:
        s = socket.socket()
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        try:
            s.connect(("127.0.0.1", port))
            return s
        except OSError:
            s.close()
            if time.monotonic() > deadline:
                raise BenchError(f"cannot connect to 127.0.0.1:{port}")
            time.sleep(0.02)


def cpu_s(pid: int) -> float:
    """user + system CPU seconds of a live process (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def task_cpu_ns(pid: int) -> int:
    """CPU time of a live process in nanoseconds: the sum over its threads of
    /proc/PID/task/TID/schedstat (time on a CPU). /proc/PID/stat counts 10 ms ticks, too
    coarse for a forwarder that spends under 1 % of a core; a thread that ends in between
    takes its time with it (both forwarders keep theirs for the whole run)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def rss_kib(pid: int) -> tuple:
    """(VmRSS, VmHWM) in KiB."""
    vals = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                k, v = line.split(":")
                vals[k] = int(v.split()[0])
    return vals.get("VmRSS", 0), vals.get("VmHWM", 0)


def pct(values: list, q: float) -> float:
    """The q-quantile (0..1) of values, nearest rank."""
    v = sorted(values)
    return v[min(len(v) - 1, max(0, int(round(q * (len(v) - 1)))))]


def median(values: list) -> float:
    return statistics.median(values)


# ---------------------------------------------------------------------------
# reading an Annex-B stream as it arrives


def unescape(b: bytes) -> bytes:
    """Removes emulation prevention bytes (00 00 03 -> 00 00)."""
    return b.replace(b"\x00\x00\x03", b"\x00\x00")


class Picture:
    __slots__ = ("start", "idr", "seq", "capture_ns", "flags", "done_ns", "decodable")

    def __init__(self, start: int, idr: bool):
        self.start, self.idr = start, idr
        self.seq = self.capture_ns = self.flags = None
        self.done_ns = None  # arrival of its last byte
        self.decodable = False  # SPS, PPS and an IDR seen up to here


class StreamReader:
    """Feeds on chunks as they arrive, finds NAL units and pictures (a slice with
    first_mb_in_slice 0 starts one; x264's sliced threads put several slices in one
    picture), attaches the nalcast SEI in front of a picture to it, and times each
    picture by the arrival of the chunk holding its last byte (known once the next NAL
    unit after it starts, or at the end of the stream)."""

    def __init__(self):
        self.buf = bytearray()
        self.ends: list = []  # cumulative end offset of each chunk
        self.times: list = []  # its arrival, ns
        self.pos = 0
        self.pictures: list = []
        self.open: Optional[Picture] = None  # last picture, end not seen yet
        self.pending_sei: list = []
        self.have_sps = self.have_pps = self.have_idr = False
        self.nal_types: dict = {}

    def _time_of(self, offset: int) -> int:
        return self.times[bisect.bisect_right(self.ends, offset)]

    def feed(self, data: bytes, t_ns: int) -> None:
        self.buf += data
        self.ends.append(len(self.buf))
        self.times.append(t_ns)
        buf = self.buf
        while True:
            i = buf.find(b"\x00\x00\x01", self.pos)
            if i < 0 or i + 5 > len(buf):
                self.pos = max(self.pos, len(buf) - 4)
                return
            self.pos = i + 3
            self._nal(i, buf[i + 3] & 0x1F, buf[i + 4])

    def _nal(self, at: int, typ: int, first: int) -> None:
        self.nal_types[typ] = self.nal_types.get(typ, 0) + 1
        start = at - 1 if at > 0 and self.buf[at - 1] == 0 else at
        if typ in (1, 5) and not first & 0x80 and self.open is not None:
            return  # another slice of the open picture
        if self.open is not None:  # anything else ends the open picture
            self.open.done_ns = self._time_of(start - 1)
            self.pictures.append(self.open)
            self.open = None
        if typ == 7:
            self.have_sps = True
        elif typ == 8:
            self.have_pps = True
        elif typ == 6:
            self.pending_sei.append(at)
        elif typ in (1, 5):
            pic = Picture(start, typ == 5)
            if typ == 5 and self.have_sps and self.have_pps:
                self.have_idr = True
            pic.decodable = self.have_idr
            for sei in self.pending_sei:  # x264's own SEI may come first
                self._sei(pic, sei)
            self.pending_sei = []
            self.open = pic

    def _is_closing_picture(self, pic: Optional[Picture]) -> bool:
        """A non-reference slice without a timestamp SEI, last in the stream, behind pictures
        that had one: what `AccessUnitDelimiting.closing` writes."""
        if pic is None or pic.seq is not None or not self.pictures or self.pictures[-1].seq is None:
            return False
        return self.buf[pic.start + (4 if self.buf[pic.start + 2] == 0 else 3)] == 0x01

    def _sei(self, pic: Picture, at: int) -> None:
        raw = bytes(self.buf[at + 4:at + 4 + 80])
        k = raw.find(SEI_UUID)
        if k < 0 or pic.seq is not None:
            return
        body = unescape(raw[k + 16:])
        if len(body) >= 26:
            _, pic.flags, pic.seq, pic.capture_ns = struct.unpack(">BBQQ", body[:18])

    def finish(self, t_ns: Optional[int] = None) -> None:
        """End of stream: the open picture is complete. A nalcast stream whose end was not
        known in advance ends with a redundant picture behind its last one (no timestamp SEI,
        not a reference: docs/architecture.md, "Each access unit ends at once"), which decoders drop: not counted."""
        if self._is_closing_picture(self.open):
            self.open = None
        if self.open is not None:
            self.open.done_ns = self.times[-1] if self.times else t_ns
            self.pictures.append(self.open)
            self.open = None


class ThreadReader(threading.Thread):
    """Reads a socket (or any fd) into a StreamReader until EOF or stop()."""

    def __init__(self, sock: Optional[socket.socket] = None, fd: Optional[int] = None,
                 port: Optional[int] = None):
        """Reads sock, or fd, or connects to 127.0.0.1:port itself (retrying for 10 s)."""
        super().__init__(daemon=True)
        self.sock, self.fd, self.port = sock, fd, port
        self.stream = StreamReader()
        self.bytes = 0
        self.eof = False
        self._halt = threading.Event()
        self.error: Optional[str] = None

    def run(self) -> None:
        try:
            if self.port is not None:
                self.sock = connect(self.port, timeout=10)
            if self.sock is not None:
                self.sock.settimeout(0.2)
            while not self._halt.is_set():
                try:
                    data = self.sock.recv(1 << 18) if self.sock is not None else os.read(self.fd, 1 << 18)
                except socket.timeout:
                    continue
                t = time.time_ns()
                if not data:
                    self.eof = True
                    break
                self.bytes += len(data)
                self.stream.feed(data, t)
        except (OSError, BenchError) as e:
            self.error = str(e)
        finally:
            self.stream.finish()

    def stop(self) -> None:
        self.stopped_ns = time.time_ns()
        self._halt.set()
        self.join(2)
        if self.sock is not None:
            self.sock.close()


def readers_result(rproc: subprocess.Popen) -> list:
    """(bytes, closed by the server) per reader of a `c/readers.c` process, once it is done."""
    out, _ = rproc.communicate(timeout=10)
    if rproc.returncode != 0:
        raise BenchError(f"c/readers.c exited {rproc.returncode}")
    return [tuple(map(int, l.split())) for l in out.decode().split("\n") if l.strip()]


def check_readers(per_reader: list, seconds: float, slack_s: float = 0) -> int:
    """The fewest bytes any reader got; BenchError when the server closed one, or when one
    got less than 90 % of the most, less `slack_s` seconds of the stream (a server that starts
    each reader at a keyframe: one GOP)."""
    closed = sum(1 for r in per_reader if r[1])
    if closed:
        raise BenchError(f"{closed} of {len(per_reader)} readers were closed by the server")
    most = max(r[0] for r in per_reader)
    least = min(r[0] for r in per_reader)
    if least < 0.9 * most - most / seconds * slack_s:
        raise BenchError(f"uneven readers: {least} bytes against {most}")
    return least


def check_contiguous(pictures: list) -> Optional[str]:
    """None if every picture carries a nalcast SEI and the sequence numbers have no gap."""
    seqs = [p.seq for p in pictures]
    if not seqs:
        return "no pictures"
    if any(s is None for s in seqs):
        return f"{seqs.count(None)} of {len(seqs)} pictures without a timestamp SEI"
    gaps = [(a, b) for a, b in zip(seqs, seqs[1:]) if b != a + 1]
    if gaps:
        return f"{len(gaps)} gaps in the SEI sequence (first {gaps[0][0]} -> {gaps[0][1]})"
    return None


# ---------------------------------------------------------------------------
# joining a live stream


def join_once(port: int, burst_ms: float = 100, timeout: float = 6) -> dict:
    """One reader joining a live stream: connect -> first decodable picture (`join_ms`, SPS,
    PPS and an IDR all received), the pictures that arrive in the `burst_ms` from that one on
    (`burst`; about 3-4 at live pace, more from a server that sends a backlog at once), the
    pictures before it that could not be decoded (`undecodable`), and, when the stream carries
    nalcast's timestamp SEI, how far behind live the first picture and the last one of the
    burst arrived (`behind_ms`, `behind_last_ms`: its arrival minus its capture time)."""
    t0 = time.time_ns()
    s = connect(port)
    s.settimeout(0.1)
    st = StreamReader()
    first = None
    try:
        while True:
            if time.time_ns() - t0 > timeout * 1e9:
                raise BenchError(f"no decodable picture within {timeout:.0f} s of connecting")
            try:
                data = s.recv(1 << 18)
            except OSError:
                continue
            t = time.time_ns()
            if not data:
                raise BenchError("the server closed the connection before a decodable picture")
            st.feed(data, t)
            if first is None:
                first = next((q for q in st.pictures if q.decodable), None)
            if first is not None and t - first.done_ns > burst_ms * 1e6:
                break
    finally:
        s.close()
    pics = [q for q in st.pictures if q.decodable]
    burst = sum(1 for q in pics if q.done_ns - first.done_ns <= burst_ms * 1e6)
    skipped = sum(1 for q in st.pictures if not q.decodable)
    r = dict(join_ms=(first.done_ns - t0) / 1e6, burst=burst, undecodable=skipped)
    if first.capture_ns:
        r["behind_ms"] = (first.done_ns - first.capture_ns) / 1e6
    last = [q for q in pics if q.done_ns - first.done_ns <= burst_ms * 1e6][-1]
    if last.capture_ns:
        r["behind_last_ms"] = (last.done_ns - last.capture_ns) / 1e6
    return r


def start_xvfb(w: int, h: int, log: Optional[Path] = None) -> tuple:
    """Starts an Xvfb of that size on a free display (-displayfd: the server writes its number
    once it is ready), in a session of its own, its stderr to `log` (else nowhere); returns
    (process, ':N'). The caller stops it."""
    r, wfd = os.pipe()
    err = open(log, "wb") if log else subprocess.DEVNULL
    p = subprocess.Popen(["Xvfb", "-displayfd", str(wfd), "-screen", "0", f"{w}x{h}x24", "-noreset", "-nolisten", "tcp"],
                         pass_fds=(wfd,), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=err, start_new_session=True)
    if log:
        err.close()
    os.close(wfd)
    text = b""
    while not text.endswith(b"\n"):
        chunk = os.read(r, 16)
        if not chunk:
            break
        text += chunk
    os.close(r)
    if not text.strip().isdigit():
        p.kill()
        p.wait()
        raise RuntimeError(f"Xvfb did not start (exit {p.poll()})")
    return p, ":" + text.decode().strip()
