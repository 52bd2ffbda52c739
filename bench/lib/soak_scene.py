"""The soak's scene: what nalcast captures and pushes to, each started and stopped by PID.

- Xvfb at the soak's size, its root a plaid (xsetroot), with two painters (c/painter.c)
  changing it all the time: a large box at 60 Hz (a busy window) and a line of "typing"
  at 10 Hz, so that capture on change (at most 30 a second) has a change in every frame
  interval: at 30 Hz, the paints and the grabs drift past each other and about one
  interval in six held no paint (21-26 fps in the first runs).
- A private PulseAudio (its own runtime directory and socket, a null sink `soak` as the
  default sink) with a continuous 440 Hz tone playing into it (FFmpeg's `sine` source into
  `-f pulse`): `produce --audio monitor` records it, and a gap in the tone is a lost sound.
- nginx with the RTMP module on a free port, restarted on demand (`restart()`): the
  `--forward rtmp://…` target. Its access log has one line per publish with the bytes
  received, which the report reads.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from live import start_xvfb, stop_group
from push import nginx_rtmp_conf

BENCH = Path(__file__).resolve().parent.parent
NGINX_MODULE = "/usr/lib/nginx/modules/ngx_rtmp_module.so"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(argv: list, log: Path, env: dict | None = None, stdin=subprocess.DEVNULL,
          append: bool = False) -> subprocess.Popen:
    """A process in a session of its own, stderr and stdout to log."""
    out = open(log, "ab" if append else "wb")
    try:
        return subprocess.Popen([str(a) for a in argv], stdin=stdin, stdout=out, stderr=subprocess.STDOUT,
                                env=env, start_new_session=True)
    finally:
        out.close()


def stop(p: subprocess.Popen | None, sig: int = signal.SIGTERM, grace: float = 5.0) -> int | None:
    """Signals p's process group (by p's PID), SIGKILL after grace; returns its exit status."""
    return None if p is None else stop_group(p, sig, grace)


def tool(work: Path, name: str, libs: tuple) -> Path:
    """bench/c/NAME.c compiled into WORK/bin/NAME."""
    exe = work / "bin" / name
    exe.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["gcc", "-O2", "-Wall", "-o", str(exe), str(BENCH / "c" / f"{name}.c"), *libs], check=True)
    return exe


def wait_until(what: str, ready, timeout: float, proc: subprocess.Popen | None = None, log: Path | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = ready()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            tail = log.read_text(errors="replace")[-1500:] if log else ""
            raise RuntimeError(f"{what}: exited {proc.returncode}\n{tail}")
        time.sleep(0.1)
    raise RuntimeError(f"{what}: not ready in {timeout:.0f} s")


class Scene:
    def __init__(self, work: Path, width: int, height: int):
        self.work, self.w, self.h = work, width, height
        self.procs: dict[str, subprocess.Popen] = {}
        self.logs = work / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.display = ""
        self.pulse_env: dict = {}
        self.rtmp_port = 0
        self.nginx_dir = work / "nginx"
        self.restarts: list[dict] = []  # {"down": t, "up": t}

    # -- X11 -------------------------------------------------------------------------------
    def start_x11(self) -> str:
        p, self.display = start_xvfb(self.w, self.h, self.logs / "xvfb.log")
        self.procs["xvfb"] = p
        subprocess.run(["xsetroot", "-display", self.display, "-mod", "8", "8", "-fg", "#c04020", "-bg", "#2040c0"],
                       check=True, stdin=subprocess.DEVNULL)
        painter = tool(self.work, "painter", ("-lxcb",))
        bw, bh = self.w * 3 // 8 // 2 * 2, self.h * 3 // 8 // 2 * 2
        self.procs["painter-box"] = start([painter, self.display, self.w // 8, self.h // 8, bw, bh, 60, 0],
                                          self.logs / "painter-box.log")
        self.procs["painter-line"] = start([painter, self.display, self.w // 8, self.h * 3 // 4, self.w * 3 // 4,
                                            max(16, self.h // 30), 10, 0], self.logs / "painter-line.log")
        return self.display

    # -- PulseAudio --------------------------------------------------------------------------
    def start_pulse(self) -> dict:
        d = self.work / "pulse"
        d.mkdir(mode=0o700, exist_ok=True)
        sock = d / "native"
        env = dict(os.environ, XDG_RUNTIME_DIR=str(d), HOME=str(d), PULSE_SERVER=f"unix:{sock}")
        for k in ("PULSE_SINK", "PULSE_SOURCE", "DISPLAY"):
            env.pop(k, None)
        p = start(["pulseaudio", "-n", "--daemonize=no", "--exit-idle-time=-1", "--use-pid-file=no",
                   "--load=module-null-sink sink_name=soak rate=48000 channels=2",
                   f"--load=module-native-protocol-unix socket={sock} auth-anonymous=1"], self.logs / "pulseaudio.log", env)
        self.procs["pulseaudio"] = p

        def answers() -> bool:
            return subprocess.run(["pactl", "info"], env=env, capture_output=True).returncode == 0
        wait_until("pulseaudio", answers, 15, p, self.logs / "pulseaudio.log")
        subprocess.run(["pactl", "set-default-sink", "soak"], env=env, check=True, capture_output=True)
        self.pulse_env = env
        # the tone: FFmpeg's pulse output blocks on the server, so it plays in real time
        self.procs["tone"] = start(["ffmpeg", "-nostdin", "-hide_banner", "-v", "error", "-f", "lavfi", "-i",
                                    "sine=frequency=440:sample_rate=48000", "-af", "volume=0.5", "-ac", "2",
                                    "-f", "pulse", "-device", "soak", "soak-tone"], self.logs / "tone.log", env)
        return env

    # -- nginx-rtmp ---------------------------------------------------------------------------
    def nginx_config(self) -> str:
        return nginx_rtmp_conf(self.nginx_dir, self.rtmp_port, connections=256)

    def start_nginx(self) -> str:
        if not os.path.exists(NGINX_MODULE):
            raise RuntimeError(f"{NGINX_MODULE} missing: apt-get install libnginx-mod-rtmp nginx-light (scripts/setup)")
        self.nginx_dir.mkdir(mode=0o700, exist_ok=True)
        self.rtmp_port = free_port()
        (self.nginx_dir / "nginx.conf").write_text(self.nginx_config())
        self._run_nginx()
        return f"rtmp://127.0.0.1:{self.rtmp_port}/live/soak"

    def _run_nginx(self) -> None:
        d = self.nginx_dir
        log = self.logs / "nginx.stderr"
        p = start(["nginx", "-p", f"{d}/", "-c", d / "nginx.conf", "-e", d / "error.log"], log, append=True)
        self.procs["nginx"] = p
        wait_until("nginx", lambda: self._listening(self.rtmp_port), 15, p, log)

    @staticmethod
    def _listening(port: int) -> bool:
        want = f":{port:04X} "
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                for line in open(table).read().splitlines()[1:]:
                    f = line.split()
                    if f[1].endswith(want.strip()) and f[3] == "0A":
                        return True
            except OSError:
                pass
        return False

    def restart_nginx(self) -> dict:
        """SIGTERM (nginx's fast shutdown, by PID), then started again on the same port."""
        down = time.time()
        stop(self.procs.get("nginx"), grace=5)
        stopped = time.time()
        self._run_nginx()
        r = {"down": down, "stopped": stopped, "up": time.time()}
        self.restarts.append(r)
        return r

    def publishes(self) -> list[dict]:
        """nginx's access log: one entry per RTMP session ended (publish: bytes received)."""
        out = []
        path = self.nginx_dir / "access.log"
        if not path.exists():
            return out
        for line in path.read_text(errors="replace").splitlines():
            f = line.split('"')
            # ADDR [TIME] COMMAND "APP" "NAME" "ARGS" - IN OUT "PAGEURL" "FLASHVER" (DURATION)
            try:
                command = f[0].split()[-1]
                bytes_in, bytes_out = (int(x) for x in f[6].split()[1:3])
                duration = line.rsplit("(", 1)[1].rstrip(")").strip()
            except (IndexError, ValueError):
                continue
            out.append({"command": command, "name": f[3], "bytes_received": bytes_in, "bytes_sent": bytes_out,
                        "session": duration})
        return out

    def publish_starts(self) -> list[str]:
        """The times nginx logged a publish starting (its error log, level info)."""
        path = self.nginx_dir / "error.log"
        if not path.exists():
            return []
        return [ln[:19] for ln in path.read_text(errors="replace").splitlines() if " publish: name=" in ln]

    def alive(self) -> list[str]:
        """The scene's processes that died (nginx is expected to be up between restarts)."""
        return [f"{name} exited {p.returncode}" for name, p in self.procs.items() if p.poll() is not None]

    def stop_all(self) -> None:
        for name in ("tone", "painter-line", "painter-box", "nginx", "pulseaudio", "xvfb"):
            stop(self.procs.get(name), grace=3)
