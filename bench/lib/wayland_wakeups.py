"""wayland_wakeups: when PipeWire handed mutter's picture to nalcast, in a wayland_glass.py run
(a check by hand, beside wayland_floor.py; not in bench/wayland-cpu's runs).

    perf record -q -k mono -e sched:sched_switch,sched:sched_wakeup -a -o PERF_DATA &
    python3 bench/lib/wayland_glass.py NALCAST SESSION_DIR pipewire:NODE 20 SETTINGS...
    kill -INT %1; wait
    perf script -i PERF_DATA -F comm,pid,tid,cpu,time,event,trace >PERF_TEXT
    python3 bench/lib/wayland_wakeups.py PERF_TEXT SESSION_DIR/events [CONSUMER [PAINTS]]

(root; in the session's XDG_RUNTIME_DIR, as bench/wayland-cpu runs wayland_glass.py.) For each
of the last PAINTS (20) presentations the session's GTK client wrote ("presented L R NS",
CLOCK_REALTIME, moved to CLOCK_MONOTONIC by the two clocks read together here), the first
scheduler wakeup after it of a thread of the process named CONSUMER (nalcast) by PipeWire's
daemon (the thread named "pipewire": on mutter 43 the daemon wakes the ScreenCast's consumer,
mutter having woken the daemon). Nothing else moves and mutter sends a buffer only for a
change, so that wakeup is the paint's buffer handed over: presentation -> it is the same
run's floor, to set beside the run's "until nalcast took the picture" (the difference: nalcast
waking its capture thread and taking the frame).
"""

from __future__ import annotations

import re
import statistics
import sys
import time

SCHED = re.compile(r"^\s*(.+?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(sched:\S+):\s*(.*)$")


def main() -> None:
    perf, events = sys.argv[1], sys.argv[2]
    consumer = sys.argv[3] if len(sys.argv) > 3 else "nalcast"
    paints = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    offset = time.time_ns() - time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    found, pid_of, comm_of = [], {}, {}
    for line in open(perf):
        m = SCHED.match(line)
        if m:
            comm, pid, tid, cpu, t, name, rest = m.groups()
            pid_of[int(tid)] = int(pid)
            comm_of[int(tid)] = comm
            found.append((int(round(float(t) * 1e9)), comm, name, rest))
    found.sort()
    ours = {pid for tid, pid in pid_of.items() if tid == pid and comm_of[tid] == consumer}
    shown = [int(l.split()[3]) - offset for l in open(events) if l.startswith("presented ")][-paints:]
    waits = []
    for p in shown:
        for t, comm, name, rest in found:
            if t >= p and name == "sched:sched_wakeup" and comm == "pipewire":
                m = re.search(r" pid=(\d+)", rest)
                if m and pid_of.get(int(m.group(1))) in ours:
                    waits.append((t - p) / 1e6)
                    break
    if not waits:
        sys.exit("wayland_wakeups: no wakeup of %s by PipeWire's daemon after a presentation" % consumer)
    print("presentation -> PipeWire's daemon woke %s: median %.1f ms (%.1f-%.1f), %d of %d presentations" % (
        consumer, statistics.median(waits), min(waits), max(waits), len(waits), len(shown)))


if __name__ == "__main__":
    main()
