"""Samples for the soak: each nalcast process's RSS, fds, threads and CPU from /proc, the
Prometheus text of the producer and the recorder, the machine's load; and the
least-squares slope of a series."""

from __future__ import annotations

import os
import re
import urllib.request

SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?)\s+(\S+)")
TICKS = os.sysconf("SC_CLK_TCK")


def proc_stats(pid: int) -> dict | None:
    """rss_kb, fds, threads, cpu_s of a live process; None once it is gone."""
    try:
        status = open(f"/proc/{pid}/status").read()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        stat = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    if fields.get("State", "").strip().startswith("Z"):
        return None
    return {"rss_kb": int(fields["VmRSS"].split()[0]), "fds": fds, "threads": int(fields["Threads"]),
            "cpu_s": (int(stat[11]) + int(stat[12])) / TICKS}


def metrics(port: int, host: str = "127.0.0.1") -> dict | None:
    """name{labels} -> value from http://HOST:PORT/metrics; None when it does not answer."""
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return None
    out = {}
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if m and not line.startswith("#"):
            try:
                out[m.group(1)] = float(m.group(2))
            except ValueError:
                pass
    return out


def loadavg() -> float:
    return float(open("/proc/loadavg").read().split()[0])


def slope_per_hour(points: list) -> float | None:
    """Least-squares slope of [(t seconds, value)], in value per hour; None under 3 points."""
    if len(points) < 3:
        return None
    n = len(points)
    mt = sum(t for t, _ in points) / n
    mv = sum(v for _, v in points) / n
    den = sum((t - mt) ** 2 for t, _ in points)
    if den == 0:
        return None
    return sum((t - mt) * (v - mv) for t, v in points) / den * 3600


def family(m: dict | None, name: str) -> dict:
    """The samples of one metric: {labels text or '': value}."""
    out = {}
    for key, value in (m or {}).items():
        if key == name:
            out[""] = value
        elif key.startswith(name + "{"):
            out[key[len(name) + 1:-1]] = value
    return out


def total(m: dict | None, name: str) -> float:
    return sum(family(m, name).values())
