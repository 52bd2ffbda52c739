"""wayland_wakeups: when PipeWire handed mutter's picture to nalcast, in a wayland_glass.py run
(a check by hand, beside wayland_floor.py; not in bench/wayland-cpu's runs).

    perf record -q -k mono -e sched:sched_switch,sched:sched_wakeup -a -o PERF_DATA &
    python3 bench/lib/wayland_glass.py NALCAST SESSION_DIR pipewire:NODE 20 SETTINGS... &
    (note nalcast's PID: the process named nalcast whose XDG_RUNTIME_DIR is SESSION_DIR)
    wait for the glass run; kill -INT the perf; wait
    perf script -i PERF_DATA -F comm,pid,tid,cpu,time,event,trace >PERF_TEXT
    python3 bench/lib/wayland_wakeups.py PERF_TEXT SESSION_DIR/events PID [PAINTS]

(root; in the session's XDG_RUNTIME_DIR, as bench/wayland-cpu runs wayland_glass.py.) For each
of the last PAINTS (20) presentations the session's GTK client wrote ("presented L R NS",
CLOCK_REALTIME, moved to CLOCK_MONOTONIC by the two clocks read together here), the first
scheduler wakeup after it of one of PID's threads that PipeWire's daemon wakes (those the
thread named "pipewire" woke at least once in the trace: the stream's data thread and
thread loop), by anyone (a wakeup sent to another CPU is recorded as woken from that CPU's
idle task, not from the daemon). Nothing else moves and mutter sends a buffer only for a
change, so that wakeup is the paint's buffer handed over: presentation -> it is the same
run's floor, to set beside the run's "until nalcast took the picture" (the difference: nalcast
waking its capture thread and taking the frame). Then the CPU time each process ran (named by
its main thread; "swapper" 0: the CPUs idle) between the presentation and that wakeup, median
over the paints, the six busiest: whether the wait was mutter working or the CPUs taken by
something else.
"""

from __future__ import annotations

import collections
import re
import statistics
import sys
import time

SCHED = re.compile(r"^\s*(.+?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(sched:\S+):\s*(.*)$")


def main() -> None:
    perf, events, consumer = sys.argv[1], sys.argv[2], int(sys.argv[3])
    paints = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    offset = time.time_ns() - time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    found, pid_of, comm_of = [], {0: 0}, {0: "idle"}
    for line in open(perf):
        m = SCHED.match(line)
        if m:
            comm, pid, tid, cpu, t, name, rest = m.groups()
            pid_of[int(tid)] = int(pid)
            comm_of[int(tid)] = comm
            found.append((int(round(float(t) * 1e9)), int(cpu), comm, name, rest))
    found.sort()
    ours = set()
    for t, cpu, comm, name, rest in found:
        m = re.search(r" pid=(\d+)", rest)
        if name == "sched:sched_wakeup" and comm == "pipewire" and m and pid_of.get(int(m.group(1))) == consumer:
            ours.add(int(m.group(1)))
    shown = [int(l.split()[3]) - offset for l in open(events) if l.startswith("presented ")][-paints:]
    waits, ran = [], []
    for p in shown:
        woken = None
        for t, cpu, comm, name, rest in found:
            if t >= p and name == "sched:sched_wakeup":
                m = re.search(r" pid=(\d+)", rest)
                if m and int(m.group(1)) in ours:
                    woken = t
                    break
        if woken is None:
            continue
        waits.append((woken - p) / 1e6)
        # CPU time per process from the presentation to the wakeup (pid 0: the CPUs idle)
        per, running = collections.Counter(), {}
        for t, cpu, comm, name, rest in found:
            if t > woken:
                break
            if name != "sched:sched_switch":
                continue
            if cpu in running and t > max(running[cpu][1], p):
                per[pid_of.get(running[cpu][0], -1)] += t - max(running[cpu][1], p)
            running[cpu] = (int(re.search(r"next_pid=(\d+)", rest).group(1)), t)
        for tid, since in running.values():
            if woken > max(since, p):
                per[pid_of.get(tid, -1)] += woken - max(since, p)
        ran.append(per)
    if not waits:
        sys.exit("wayland_wakeups: no wakeup of %d's PipeWire threads after a presentation" % consumer)
    print("presentation -> PipeWire woke %d (threads %s): median %.1f ms (%.1f-%.1f), %d of %d presentations" % (
        consumer, ",".join(map(str, sorted(ours))), statistics.median(waits), min(waits), max(waits), len(waits), len(shown)))
    busiest = collections.Counter()
    for per in ran:
        busiest.update(per)
    print("in it, CPU ms median per process: " + ", ".join(
        "%s %d %.1f" % (comm_of.get(pid, "?"), pid, statistics.median(per[pid] / 1e6 for per in ran))
        for pid, _ in busiest.most_common(6)))


if __name__ == "__main__":
    main()
