"""wayland_glass: glass-to-socket on headless GNOME or sway (bench/wayland-cpu runs it).

    python3 bench/lib/wayland_glass.py NALCAST SESSION_DIR SOURCE PAINTS [SETTINGS...]

`nalcast produce --source SOURCE --idle-fps 0 SETTINGS --listen tcp://127.0.0.1:0` (SOURCE:
`pipewire:NODE` on mutter, `wlr` on sway) with one reader here (live.ThreadReader). The session's GTK client
(Tests/Fixtures/wayland/mutter-client.py) fills the monitor's halves with one of two colour
pairs PAINTS times, 250 ms apart, and says when each frame was painted and handed to
the compositor ("drawn L R NS", CLOCK_REALTIME). A paint's latency: from that instant to the last
byte of the first picture whose SEI capture time is at or after it, read from loopback TCP;
split into the time until nalcast took the compositor's picture (its capture time: the
compositor, and PipeWire or the screencopy) and from there to the socket (copy, convert, encode, send).
Nothing else moves and there are no keep-alives (`--idle-fps 0`), so every picture after
the paint is one the compositor sent for it. Prints one line: median, p99, max in ms, and the count.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from live import BenchError, Procs, ThreadReader, connect, median, pct, wait_serving  # noqa: E402

PAIRS = (("e01010", "1010e0"), ("10e010", "e0e010"))


def drawn_after(events: Path, count: int, pair: tuple, timeout: float = 5) -> int:
    """The NS of the client's first "drawn L R NS" line past `count` lines."""
    deadline = time.monotonic() + timeout
    prefix = "drawn %s %s " % pair
    while time.monotonic() < deadline:
        lines = events.read_text().splitlines()[count:]
        for line in lines:
            if line.startswith(prefix):
                return int(line.split()[3])
        time.sleep(0.005)
    raise BenchError("the client did not paint %s %s" % pair)


def main() -> None:
    nalcast, session, source, paints = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    settings = sys.argv[5:]
    events, control = session / "events", session / "control"
    log = Path(os.environ.get("TMPDIR", "/tmp")) / "nalcast-wayland-glass.stderr"
    os.environ["XDG_RUNTIME_DIR"] = str(session)
    argv = [nalcast, "produce", "--source", source, "--idle-fps", "0", *settings, "--listen", "tcp://127.0.0.1:0"]
    marks = []
    with Procs() as procs:
        proc = procs.start(argv, stderr=log)
        reader = ThreadReader(connect(wait_serving(proc, log)))
        reader.start()
        time.sleep(1)
        for i in range(paints):
            time.sleep(0.25)
            pair = PAIRS[i % 2]
            count = len(events.read_text().splitlines())
            with open(control, "w") as f:
                f.write("colors %s %s\n" % pair)
            marks.append(drawn_after(events, count, pair))
        time.sleep(0.5)
        Procs.stop(proc)
        reader.join(5)
    if reader.error:
        raise BenchError(f"reader: {reader.error}")
    pics = [q for q in reader.stream.pictures if q.capture_ns is not None and q.done_ns is not None]
    lat, taken = [], []
    for mark in marks:
        first = next((q for q in pics if q.capture_ns >= mark), None)
        if first is None:
            raise BenchError("a paint never showed up in the stream")
        lat.append((first.done_ns - mark) / 1e6)
        taken.append((first.capture_ns - mark) / 1e6)
    print("glass-to-socket median %.1f ms  p99 %.1f ms  max %.1f ms  paints %d  (of the median: %.1f ms until nalcast took "
          "the compositor's picture, %.1f ms from there to the socket)" % (median(lat), pct(lat, 0.99), max(lat), len(lat), median(taken),
                                                                  median([a - b for a, b in zip(lat, taken)])))


if __name__ == "__main__":
    main()
