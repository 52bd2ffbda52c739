"""wayland_floor: when a bare PipeWire client has mutter's picture (bench/wayland-cpu runs it
beside each glass-to-socket run on mutter).

    python3 bench/lib/wayland_floor.py PWRECV SESSION_DIR NODE PAINTS [sched] [cursor]

The same paints as wayland_glass.py (the session's GTK client fills the monitor's halves with
one of two colour pairs PAINTS times, 250 ms apart, and says when it committed each frame and
when mutter presented the output frame that holds it), read by `PWRECV NODE 600 times`
(bench/c/pwrecv.c: nalcast's own stream parameters, each buffer taken and given back at once,
its arrival noted first thing in the process callback) in place of nalcast. A paint's buffer:
the first with pixels that arrived at or after the paint's commit and, where it carries a
pts on CLOCK_MONOTONIC, was recorded at or after the commit (nothing else moves, so every
buffer mutter records after the paint is for it; the pts keeps a paint from taking the
previous paint's buffer when mutter hands that over late, under load); one recorded (without a
pts: arrived) only after the next paint's commit is not the paint's: counted and said, the
paint left out. Per paint:

  presentation -> buffer arrived: what any PipeWire client of this ScreenCast waits after the
      picture is on the glass, the floor under wayland_glass.py's "until nalcast took the
      picture" (which adds nalcast's own waking and taking);
  and, where the buffer carries spa_meta_header's pts on CLOCK_MONOTONIC (mutter 43 stamps it
      when it begins to record the frame), that wait split at the pts: presentation -> pts
      (before mutter records) and pts -> arrival (mutter's recording and PipeWire's hand-over).

With `cursor`, pwrecv asks for the pointer's metadata too, as nalcast does by default (without
it, the buffers and damage only). With `sched` (root, perf; not in bench/wayland-cpu's runs): `perf record -k mono -e
sched:sched_switch,sched:sched_wakeup -a` during the paints, and per paint pts -> the first
wakeup of one of pwrecv's threads (PipeWire telling the client; by whom) -> the arrival, and
the CPU time mutter's threads (its main thread; the others: llvmpipe's) and every other
process ran between the pts and that wakeup, and the CPUs' idle time in it: whether that
wait is mutter working or waiting for the CPUs.

CLOCK_REALTIME throughout: the client's presentation is already on it; a pts on
CLOCK_MONOTONIC is moved by the difference of the two clocks read together at that buffer's
arrival.
"""

from __future__ import annotations

import collections
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from live import BenchError, Procs, median, pct  # noqa: E402
from wayland_glass import client_presentations, paint  # noqa: E402


def buffers(out: Path) -> list:
    """pwrecv's `buffer` lines: (arrival realtime, arrival monotonic, pts or None, clock, size)."""
    found = []
    for line in out.read_text().splitlines():
        f = line.split()
        if f[0] != "buffer":
            continue
        pts = None if f[3] == "-" else int(f[3])
        found.append((int(f[1]), int(f[2]), pts, f[4], int(f[6])))
    return found


SCHED = re.compile(r"^\s*(.+?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(sched:\S+):\s*(.*)$")


def session_mutter(session: Path) -> int:
    """The PID of the mutter whose XDG_RUNTIME_DIR is the session's."""
    for p in Path("/proc").iterdir():
        try:
            if p.name.isdigit() and (p / "comm").read_text().strip() == "mutter" and \
                    ("XDG_RUNTIME_DIR=%s" % session).encode() in (p / "environ").read_bytes().split(b"\0"):
                return int(p.name)
        except OSError:
            continue
    raise BenchError("no mutter in the session")


def sched_split(perf_data: Path, spans: list, mutter: int, pwrecv: int) -> list:
    """Per (pts, arrival) on CLOCK_MONOTONIC: (pts -> pwrecv woken ms, its waker, woken ->
    arrival ms, mutter's main thread's CPU ms in pts -> woken, its other threads', other
    processes', idle)."""
    text = subprocess.run(["perf", "script", "-i", str(perf_data), "-F", "comm,pid,tid,cpu,time,event,trace"],
                          capture_output=True, text=True).stdout
    events, pid_of = [], {0: 0}
    for line in text.splitlines():
        m = SCHED.match(line)
        if m:
            comm, pid, tid, cpu, t, name, rest = m.groups()
            pid_of[int(tid)] = int(pid)
            events.append((int(round(float(t) * 1e9)), int(cpu), comm, name, rest, int(pid), int(tid)))
    events.sort()
    found = []
    for pts, arrival in spans:
        woken, waker, waker_tid = arrival, "-", None
        for t, cpu, comm, name, rest, pid, tid in events:
            if pts <= t <= arrival and name == "sched:sched_wakeup":
                m = re.search(r" pid=(\d+)", rest)
                if m and pid_of.get(int(m.group(1))) == pwrecv:
                    woken, waker, waker_tid = t, comm, tid
                    break
        # The waker's own last wakeup before it woke pwrecv (the step before it, when the
        # waker is not mutter: PipeWire's daemon): when and by whom.
        step = None
        if waker_tid is not None and pid_of.get(waker_tid) != mutter:
            for t, cpu, comm, name, rest, pid, tid in events:
                if t > woken:
                    break
                if t >= pts and name == "sched:sched_wakeup" and re.search(r" pid=%d " % waker_tid, rest + " "):
                    step = (t, "mutter" if pid == mutter else comm)
        if step:
            waker = "%s, itself woken %.2f ms before by %s" % (waker, (woken - step[0]) / 1e6, step[1])
        ran, running = collections.Counter(), {}
        for t, cpu, comm, name, rest, pid, tid in events:
            if t > woken:
                break
            if name != "sched:sched_switch":
                continue
            if cpu in running and t > max(running[cpu][1], pts):
                ran[running[cpu][0]] += t - max(running[cpu][1], pts)
            running[cpu] = (int(re.search(r"next_pid=(\d+)", rest).group(1)), t)
        for tid, since in running.values():
            if woken > max(since, pts):
                ran[tid] += woken - max(since, pts)
        main = ran[mutter]
        others = sum(v for k, v in ran.items() if k != mutter and pid_of.get(k) == mutter)
        rest_ = sum(v for k, v in ran.items() if k != 0 and pid_of.get(k) != mutter)
        found.append(((woken - pts) / 1e6, waker, (arrival - woken) / 1e6, main / 1e6, others / 1e6, rest_ / 1e6, ran[0] / 1e6))
    return found


def spread(values: list) -> str:
    return "%.1f ms median (%.1f-%.1f)" % (median(values), min(values), max(values))


def main() -> None:
    pwrecv, session, node, paints = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    sched, cursor = "sched" in sys.argv[5:], "cursor" in sys.argv[5:]
    events, control = session / "events", session / "control"
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    out, log = tmp / "nalcast-wayland-floor.stdout", tmp / "nalcast-wayland-floor.stderr"
    os.environ["XDG_RUNTIME_DIR"] = str(session)
    with Procs() as procs, open(out, "wb") as stdout:
        proc = procs.start([pwrecv, node, 600, "times"] + (["cursor"] if cursor else []), stderr=log, stdout=stdout)
        time.sleep(1.5)  # connected and negotiated (nalcast's run: serving, then 1 s)
        if proc.poll() is not None:
            raise BenchError("pwrecv exited %d: %s" % (proc.returncode, log.read_text(errors="replace").strip()))
        if sched:
            perf_data = tmp / "nalcast-wayland-floor.perf"
            perf = procs.start(["perf", "record", "-q", "-k", "mono", "-e", "sched:sched_switch,sched:sched_wakeup", "-a",
                                "-o", perf_data], stderr=tmp / "nalcast-wayland-floor.perf.stderr")
            time.sleep(0.5)
        marks, starts, pairs = paint(events, control, paints)
        time.sleep(0.5)
        if sched:
            os.kill(perf.pid, signal.SIGINT)  # perf writes its file at SIGINT
            perf.wait(30)
        Procs.stop(proc)  # SIGTERM: pwrecv prints what it noted and exits
    # (arrival, when mutter recorded it: its pts on CLOCK_REALTIME, else the arrival, pts or None, clock)
    got = [(b[0], b[2] + (b[0] - b[1]) if b[2] is not None and b[3] == "monotonic" else b[0], b[2], b[3])
           for b in buffers(out) if b[4] > 0]
    client = client_presentations(events.read_text().splitlines(), starts, pairs)
    floor, from_commit, before_pts, after_pts, scheduled, spans = [], [], [], [], [], []
    missing, late, clocks = 0, [], {}
    for i, mark in enumerate(marks):
        following = marks[i + 1] if i + 1 < len(marks) else None
        first = next((b for b in got if b[0] >= mark and b[1] >= mark), None)
        if first is None or (following is not None and first[1] >= following):
            late.append("paint %d: no buffer recorded before the next paint" % (i + 1))
            continue
        from_commit.append((first[0] - mark) / 1e6)
        clocks[first[3]] = clocks.get(first[3], 0) + 1
        shown = client[i]
        if shown is None:
            missing += 1
            continue
        scheduled.append((shown - mark) / 1e6)
        floor.append((first[0] - shown) / 1e6)
        if first[2] is not None and first[3] == "monotonic":
            before_pts.append((first[1] - shown) / 1e6)
            after_pts.append((first[0] - first[1]) / 1e6)
            spans.append((first[2], first[0] - (first[1] - first[2])))  # (pts, arrival) on CLOCK_MONOTONIC
    if not floor:
        raise BenchError("no paint had both a presentation and a buffer: %s" % "; ".join(late))
    print("floor (presentation -> pwrecv had the buffer) median %.1f ms  p99 %.1f ms  max %.1f ms  paints %d; "
          "commit -> buffer %s; commit -> presentation %s" % (
              median(floor), pct(floor, 0.99), max(floor), len(floor), spread(from_commit), spread(scheduled)))
    if before_pts:
        print("of the floor: presentation -> mutter's pts %s; pts -> pwrecv had the buffer %s" % (
            spread(before_pts), spread(after_pts)))
    if sched and spans:
        split = sched_split(perf_data, spans, session_mutter(session), proc.pid)
        col = list(zip(*split))
        wakers = collections.Counter(re.sub(r" [\d.]+ ms", " N ms", w) for w in col[1])
        print("of pts -> pwrecv had the buffer (perf sched): pts -> PipeWire woke pwrecv %s (woken by %s), woken -> the buffer "
              "in the process callback %.2f ms median (%.2f-%.2f); in pts -> woken, CPU ms median: mutter's main thread %.1f, "
              "its other threads %.1f, other processes %.1f, idle %.1f" % (
                  spread(col[0]), ", ".join("%s %d" % kv for kv in wakers.most_common()), median(col[2]), min(col[2]), max(col[2]),
                  median(col[3]), median(col[4]), median(col[5]), median(col[6])))
        for i, row in enumerate(split):
            print("  paint buffer %d: pts -> woken %.1f ms (%s), woken -> arrival %.2f; CPU ms: mutter main %.1f, "
                  "mutter others %.1f, other processes %.1f, idle %.1f" % ((i + 1, row[0], row[1]) + row[2:]))
    print("buffers with pixels %d for %d paints; pts clock of the paints' buffers: %s; %d paints without a presentation%s" % (
        len(got), len(marks), ", ".join("%s %d" % kv for kv in sorted(clocks.items())) or "none",
        missing, "".join("; " + l for l in late)))


if __name__ == "__main__":
    main()
