"""wayland_floor: when a bare PipeWire client has mutter's picture (bench/wayland-cpu runs it
beside each glass-to-socket run on mutter).

    python3 bench/lib/wayland_floor.py PWRECV SESSION_DIR NODE PAINTS

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

CLOCK_REALTIME throughout: the client's presentation is already on it; a pts on
CLOCK_MONOTONIC is moved by the difference of the two clocks read together at that buffer's
arrival.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from live import BenchError, Procs, median, pct  # noqa: E402
from wayland_glass import PAIRS, client_presentations, drawn_after  # noqa: E402


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


def spread(values: list) -> str:
    return "%.1f ms median (%.1f-%.1f)" % (median(values), min(values), max(values))


def main() -> None:
    pwrecv, session, node, paints = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    events, control = session / "events", session / "control"
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    out, log = tmp / "nalcast-wayland-floor.stdout", tmp / "nalcast-wayland-floor.stderr"
    os.environ["XDG_RUNTIME_DIR"] = str(session)
    marks, starts, pairs = [], [], []
    with Procs() as procs, open(out, "wb") as stdout:
        proc = procs.start([pwrecv, node, 600, "times"], stderr=log, stdout=stdout)
        time.sleep(1.5)  # connected and negotiated (nalcast's run: serving, then 1 s)
        if proc.poll() is not None:
            raise BenchError("pwrecv exited %d: %s" % (proc.returncode, log.read_text(errors="replace").strip()))
        for i in range(paints):
            time.sleep(0.25)
            pair = PAIRS[i % 2]
            count = len(events.read_text().splitlines())
            with open(control, "w") as f:
                f.write("colors %s %s\n" % pair)
            marks.append(drawn_after(events, count, pair))
            starts.append(count)
            pairs.append(pair)
        time.sleep(0.5)
        Procs.stop(proc)  # SIGTERM: pwrecv prints what it noted and exits
    # (arrival, when mutter recorded it: its pts on CLOCK_REALTIME, else the arrival, pts or None, clock)
    got = [(b[0], b[2] + (b[0] - b[1]) if b[2] is not None and b[3] == "monotonic" else b[0], b[2], b[3])
           for b in buffers(out) if b[4] > 0]
    client = client_presentations(events.read_text().splitlines(), starts, pairs)
    floor, from_commit, before_pts, after_pts, scheduled = [], [], [], [], []
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
    if not floor:
        raise BenchError("no paint had both a presentation and a buffer: %s" % "; ".join(late))
    print("floor (presentation -> pwrecv had the buffer) median %.1f ms  p99 %.1f ms  max %.1f ms  paints %d; "
          "commit -> buffer %s; commit -> presentation %s" % (
              median(floor), pct(floor, 0.99), max(floor), len(floor), spread(from_commit), spread(scheduled)))
    if before_pts:
        print("of the floor: presentation -> mutter's pts %s; pts -> pwrecv had the buffer %s" % (
            spread(before_pts), spread(after_pts)))
    print("buffers with pixels %d for %d paints; pts clock of the paints' buffers: %s; %d paints without a presentation%s" % (
        len(got), len(marks), ", ".join("%s %d" % kv for kv in sorted(clocks.items())) or "none",
        missing, "".join("; " + l for l in late)))


if __name__ == "__main__":
    main()
