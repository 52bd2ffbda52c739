"""The soak's readers and viewers, joining and leaving on a schedule.

Eight clients, each connected for three quarters of every churn period and away for the
rest, their phases spread over the period so that someone joins or leaves every
period / 8:

- tcp0: FFmpeg decoding every frame of the Annex-B listener (`-f h264 -i tcp://… -f null`);
  its decode errors are the lines of its log.
- tcp1-3: `nalcast consume --from tcp://… -o /dev/null` (events appended to one file each).
- ws0: nalcast's page in headless Chromium (soak_chromium.py, the Selenium venv).
- ws1-3: raw WebSocket viewers (soak_ws.py) that read every frame and leave with a close.

A leaving client gets SIGINT (nalcast) or SIGTERM (the others) at its own PID, so that it
leaves as a user's would (a close frame, a browser tab closed); what is left of its
process group after 15 s is killed. Each session is one process; its outcome is kept.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import soak_scene
from soak_scene import start

LIB = Path(__file__).resolve().parent
VENV_PYTHON = Path.home() / ".cache" / "nalcast-tools" / "bin" / "python"


def chromium_missing() -> str | None:
    for path, package in (("/usr/bin/chromium", "chromium"), ("/usr/bin/chromedriver", "chromium-driver")):
        if not os.access(path, os.X_OK):
            return f"no {path} ({package}; scripts/setup installs it)"
    if subprocess.run([str(VENV_PYTHON), "-c", "import selenium"], capture_output=True).returncode != 0:
        return f"no selenium in {VENV_PYTHON} (scripts/setup makes that venv)"
    return None


class Client:
    def __init__(self, name: str, kind: str, index: int, count: int, period: float):
        self.name, self.kind = name, kind
        self.period, self.phase = period, period * index / count
        self.proc: subprocess.Popen | None = None
        self.session: dict | None = None
        self.sessions: list[dict] = []
        self.missed_window = -1  # the churn window in which a session ended on its own

    def wants(self, t: float) -> bool:
        return (t + self.phase) % self.period < 0.75 * self.period

    def window(self, t: float) -> int:
        return int((t + self.phase) // self.period)


class Clients:
    def __init__(self, work: Path, nalcast: str, tcp_port: int, web_port: int, period: float, chromium: bool):
        self.work, self.nalcast = work, nalcast
        self.tcp, self.web = tcp_port, web_port
        self.logs = work / "clients"
        self.logs.mkdir(parents=True, exist_ok=True)
        kinds = ["ffmpeg", "nalcast", "nalcast", "nalcast", "chromium" if chromium else "ws", "ws", "ws", "ws"]
        names = ["tcp0", "tcp1", "tcp2", "tcp3", "ws0", "ws1", "ws2", "ws3"]
        self.clients = [Client(n, k, i, len(names), period) for i, (n, k) in enumerate(zip(names, kinds))]

    def argv(self, c: Client) -> list:
        if c.kind == "ffmpeg":
            return ["ffmpeg", "-nostdin", "-hide_banner", "-v", "error", "-f", "h264", "-i",
                    f"tcp://127.0.0.1:{self.tcp}", "-f", "null", "-"]
        if c.kind == "nalcast":
            return [self.nalcast, "consume", "--from", f"tcp://127.0.0.1:{self.tcp}", "-o", "/dev/null",
                    "--reconnect-timeout", "0", "--events", self.logs / f"{c.name}-events.jsonl", "--quiet"]
        if c.kind == "chromium":
            return [VENV_PYTHON, LIB / "soak_chromium.py", f"http://127.0.0.1:{self.web}/"]
        return ["python3", LIB / "soak_ws.py", self.web]

    def reap(self, now: float, t: float | None = None) -> None:
        """Notes the sessions that ended by themselves (the server closed them)."""
        for c in self.clients:
            if c.proc is not None and c.proc.poll() is not None:
                self._ended(c, now, "ended by itself")
                if t is not None:
                    c.missed_window = c.window(t)

    def tick(self, t: float, now: float) -> None:
        self.reap(now, t)
        for c in self.clients:
            if c.wants(t) and c.proc is None and c.missed_window != c.window(t):
                self._join(c, now)
            elif not c.wants(t) and c.proc is not None:
                self.leave(c, now)

    def _join(self, c: Client, now: float) -> None:
        n = len(c.sessions) + 1
        out = self.logs / f"{c.name}-{n:03d}.out"
        c.proc = start(self.argv(c), out)
        c.session = {"client": c.name, "kind": c.kind, "n": n, "joined": now, "pid": c.proc.pid, "out": str(out)}

    def leave(self, c: Client, now: float) -> None:
        if c.proc is None:
            return
        try:
            os.kill(c.proc.pid, signal.SIGINT if c.kind == "nalcast" else signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            c.proc.wait(timeout=15)
            how = "left"
        except subprocess.TimeoutExpired:
            how = "left, killed after 15 s"
        soak_scene.stop(c.proc, signal.SIGKILL, grace=5)
        try:  # what is left of its process group (a browser that outlived its driver)
            os.killpg(c.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._ended(c, now, how)

    def _ended(self, c: Client, now: float, how: str) -> None:
        s = c.session
        s.update({"left": now, "how": how, "exit": c.proc.returncode})
        text = Path(s["out"]).read_text(errors="replace")
        if c.kind in ("ws", "chromium"):
            lines = [ln for ln in text.splitlines() if ln.startswith("{")]
            s["result"] = json.loads(lines[-1]) if lines else {"error": "no result: " + text[-300:]}
        elif c.kind == "ffmpeg":
            s["decode_error_lines"] = [ln for ln in text.splitlines() if ln.strip() and "Exiting normally" not in ln]
        c.sessions.append(s)
        c.proc, c.session = None, None

    def nalcast_pids(self) -> dict:
        """The nalcast readers running now, by label (for the RSS and fd samples)."""
        return {f"{c.name}#{c.session['n']}": c.proc.pid for c in self.clients
                if c.kind == "nalcast" and c.proc is not None}

    def connected(self) -> int:
        return sum(c.proc is not None for c in self.clients)

    def leave_all(self, now: float) -> None:
        for c in self.clients:
            self.leave(c, now)

    def sessions(self) -> list[dict]:
        return [s for c in self.clients for s in c.sessions]
