"""wayland_glass: glass-to-socket on headless GNOME or sway (bench/wayland-cpu runs it).

    python3 bench/lib/wayland_glass.py NALCAST SESSION_DIR SOURCE PAINTS [SETTINGS...]

`nalcast produce --source SOURCE --idle-fps 0 SETTINGS --listen tcp://127.0.0.1:0` (SOURCE:
`pipewire:NODE` on mutter, `wlr` on sway) with one reader here (live.ThreadReader). The session's GTK client
(Tests/Fixtures/wayland/mutter-client.py) fills the monitor's halves with one of two colour pairs
PAINTS times, 250 ms apart, and says when each frame was painted and handed to the compositor
("drawn L R NS": its commit) and, where the compositor answers wp_presentation, when the
compositor presented the output frame that holds it ("presented L R NS FLAGS"; CLOCK_REALTIME
both). A paint's picture: the first whose SEI capture time is at or after the commit, its time
the arrival of its last byte, read from loopback TCP. Two measures of the same pictures:

  commit-to-socket: from the client's commit (what this printed as glass-to-socket before
      2026-12-02 14:00), split at nalcast's capture time into the compositor's part (scheduling
      its next output frame, compositing, and the PipeWire buffer or the screencopy) and nalcast's;
  glass-to-socket: from the presentation of the output frame with the paint (the picture on
      the glass), split into presentation -> nalcast took the picture -> socket. The wait from
      the commit to the presentation is the compositor's frame scheduling, which every client
      and the user's eyes pay, not the capture's.

Where the presentation comes from: the client's wp_presentation feedback where the compositor
answers it (mutter). wlroots 0.15's headless backend (sway 1.7 here) signals an output frame as
presented inside the output's commit, before the commit that wp_presentation's feedback waits
for, so sway never answers the client's feedback; there (SOURCE `wlr`) nalcast runs with
WAYLAND_DEBUG=client and the presentation is the timestamp of sway's screencopy `ready` event,
which wlroots sends from that same output commit ("the time at which presentation happened",
the protocol says; CLOCK_MONOTONIC), the first at or after the commit. A paint with no
presentation is counted and said, and left out of glass-to-socket only. A presentation after
nalcast's capture time of the same picture would mean the two are not the same frame: counted
and said, the paint listed.
Nothing else moves and there are no keep-alives (`--idle-fps 0`), so every picture after
the paint is one the compositor sent for it.
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from live import BenchError, Procs, ThreadReader, connect, median, pct, wait_serving  # noqa: E402

PAIRS = (("e01010", "1010e0"), ("10e010", "e0e010"))
# WAYLAND_DEBUG's line: "[MS.US]" (libwayland 1.21: CLOCK_REALTIME in microseconds, its low 32
# bits), then the event.
READY = re.compile(r"\[\s*(\d+)\.(\d+)\] zwlr_screencopy_frame_v1@\d+\.ready\((\d+), (\d+), (\d+)\)")


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


def client_presentations(lines: list, starts: list, pairs: list) -> list:
    """Per paint: the NS of its "presented" line (None: "discarded", or no answer before the
    same colours were painted again)."""
    found = []
    for i, (start, pair) in enumerate(zip(starts, pairs)):
        end = starts[i + 2] if i + 2 < len(starts) else len(lines)
        shown = None
        for line in lines[start:end]:
            if line.startswith("presented %s %s " % pair):
                shown = int(line.split()[3])
                break
            if line == "discarded %s %s" % pair:
                break
        found.append(shown)
    return found


def screencopy_presentations(log: Path, offset: int) -> list:
    """The `ready` events nalcast's connection received (WAYLAND_DEBUG): (the presentation they
    carry, as CLOCK_REALTIME; when nalcast read the event, CLOCK_REALTIME), by presentation."""
    found = []
    for ms, us, hi, lo, ns in READY.findall(log.read_text(errors="replace")):
        shown = (int(hi) << 32 | int(lo)) * 1_000_000_000 + int(ns) + offset
        read = shown + ((int(ms) * 1000 + int(us) - shown // 1000) % (1 << 32)) * 1000
        found.append((shown, read))
    return sorted(found)


def paint(events: Path, control: Path, paints: int) -> tuple:
    """Has the client paint PAINTS times, 250 ms apart, the two colour pairs in turn: per paint
    its commit (the "drawn" NS), the events line it was asked at, and its colours."""
    marks, starts, pairs = [], [], []
    for i in range(paints):
        time.sleep(0.25)
        pair = PAIRS[i % 2]
        count = len(events.read_text().splitlines())
        with open(control, "w") as f:
            f.write("colors %s %s\n" % pair)
        marks.append(drawn_after(events, count, pair))
        starts.append(count)
        pairs.append(pair)
    return marks, starts, pairs


def summary(lat: list, taken: list) -> str:
    return "median %.1f ms  p99 %.1f ms  max %.1f ms  paints %d  (of the median: %.1f ms until nalcast took the picture, %.1f ms from there to the socket)" % (
        median(lat), pct(lat, 0.99), max(lat), len(lat), median(taken), median([a - b for a, b in zip(lat, taken)]))


def main() -> None:
    nalcast, session, source, paints = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    settings = sys.argv[5:]
    events, control = session / "events", session / "control"
    log = Path(os.environ.get("TMPDIR", "/tmp")) / "nalcast-wayland-glass.stderr"
    os.environ["XDG_RUNTIME_DIR"] = str(session)
    screencopy = source.split(":")[0] == "wlr"
    if screencopy:
        os.environ["WAYLAND_DEBUG"] = "client"
    argv = [nalcast, "produce", "--source", source, "--idle-fps", "0", *settings, "--listen", "tcp://127.0.0.1:0"]
    with Procs() as procs:
        proc = procs.start(argv, stderr=log)
        os.environ.pop("WAYLAND_DEBUG", None)
        reader = ThreadReader(connect(wait_serving(proc, log)))
        reader.start()
        time.sleep(1)
        marks, starts, pairs = paint(events, control, paints)
        time.sleep(0.5)
        Procs.stop(proc)
        reader.join(5)
    if reader.error:
        raise BenchError(f"reader: {reader.error}")
    # CLOCK_MONOTONIC (the compositor's presentation clock, wlroots and mutter alike) to
    # CLOCK_REALTIME, read together now; the two move apart only by NTP's slew.
    offset = time.time_ns() - time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    lines = events.read_text().splitlines()
    client = client_presentations(lines, starts, pairs)
    ready = screencopy_presentations(log, offset) if screencopy else []
    pics = [q for q in reader.stream.pictures if q.capture_ns is not None and q.done_ns is not None]
    lat, taken, glass, glass_taken, scheduled, late, agree = [], [], [], [], [], [], []
    missing = from_ready = 0
    copy_read, read_took = [], []  # presentation -> nalcast read sway's ready event -> took the picture
    for i, mark in enumerate(marks):
        first = next((q for q in pics if q.capture_ns >= mark), None)
        if first is None:
            raise BenchError("a paint never showed up in the stream")
        lat.append((first.done_ns - mark) / 1e6)
        taken.append((first.capture_ns - mark) / 1e6)
        event = next((t for t in ready if t[0] >= mark), None)
        copied = event[0] if event else None
        if client[i] is not None and copied is not None:
            agree.append((copied - client[i]) / 1e6)
        shown = client[i] if client[i] is not None else copied
        from_ready += client[i] is None and copied is not None
        if shown is None:
            missing += 1
            continue
        if shown > first.capture_ns:
            late.append("paint %d: presented %.1f ms after the commit, captured %.1f ms after it" % (
                i + 1, (shown - mark) / 1e6, (first.capture_ns - mark) / 1e6))
            continue
        scheduled.append((shown - mark) / 1e6)
        if event and shown == copied:
            copy_read.append((event[1] - shown) / 1e6)
            read_took.append((first.capture_ns - event[1]) / 1e6)
        glass.append((first.done_ns - shown) / 1e6)
        glass_taken.append((first.capture_ns - shown) / 1e6)
    print("commit-to-socket " + summary(lat, taken))
    what = "the client's wp_presentation" if not screencopy or any(c is not None for c in client) else "sway's screencopy ready"
    if glass:
        print("glass-to-socket (presentation: %s) " % what + summary(glass, glass_taken)
              + "; commit to presentation median %.1f ms (%.1f-%.1f)" % (median(scheduled), min(scheduled), max(scheduled)))
    print("presentations: %d of %d paints from the client's wp_presentation, %d from screencopy ready; %d paints without one%s; "
          "%d presented after nalcast's capture of their picture (left out)%s" % (
              sum(c is not None for c in client), len(marks), from_ready,
              missing, " (left out of glass-to-socket)" if missing else "", len(late), "".join("; " + l for l in late)))
    if copy_read:
        print("of presentation -> nalcast took the picture: sway's copy into nalcast's buffer and its ready event read by nalcast %.1f ms "
              "median (%.1f-%.1f), nalcast taking it from there %.1f ms median (%.1f-%.1f)" % (
                  median(copy_read), min(copy_read), max(copy_read), median(read_took), min(read_took), max(read_took)))
    if agree:
        print("client's presentation against screencopy's ready for the same paints: median %+.3f ms" % median(agree))


if __name__ == "__main__":
    main()
