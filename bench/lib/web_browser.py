"""The end of a browser script of the web benchmarks (web_paint.py, lossy_path.py) and the
JSON result it printed last, for web.py and web_loss.py."""

from __future__ import annotations

import json
import subprocess

from live import BenchError


def finish(proc: subprocess.Popen, timeout: float, name: str) -> bytes:
    """The script's stdout once it exited; BenchError when it takes longer than `timeout`."""
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BenchError(f"{name} did not finish in time")
    return out


def browser_result(out: bytes, proc: subprocess.Popen, name: str) -> dict:
    """The JSON of the script's last line; BenchError when there is none or it says Chromium
    failed."""
    try:
        r = json.loads(out.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise BenchError(f"{name} exited {proc.returncode} without a result")
    if "error" in r:
        raise BenchError(f"Chromium: {r['error']}")
    return r
