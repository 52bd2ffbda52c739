"""nginx in front of `nalcast produce --web`, for the web benchmark: deploy/nginx/nalcast-web.conf
run as Tests/CLITests/DeploySupport.swift runs it.

The site file itself, with only the lines an admin replaces swapped (the certificate and key,
the access log, the `listen` lines, the upstream `server`; each must be in the file exactly
once, so the benchmark cannot drift away from the recipe), inside a minimal nginx.conf: one
process in the foreground (`master_process off`, so its CPU is that one process's), its pid,
logs and temporary files in one directory, `nginx -p DIR -c CONF`. The certificate is an EC
P-256 one, the key type `--tls self-signed` makes, so that both sides do the same handshake.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from harness import REPO_DIR, Context
from live import BenchError, Procs, free_port, wait_listening

SITE = REPO_DIR / "deploy" / "nginx" / "nalcast-web.conf"


def nginx_path() -> str | None:
    """nginx on the PATH or in /usr/sbin (Debian's, which a user's PATH may lack)."""
    return shutil.which("nginx", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")


def nginx_missing() -> str | None:
    if not nginx_path():
        return "skipped (no nginx: Debian's nginx, scripts/setup installs it)"
    if not SITE.exists():
        return f"skipped (no {SITE.relative_to(REPO_DIR)})"
    return None


def _certificate(d: Path) -> tuple:
    cert, key = d / "cert.pem", d / "key.pem"
    if not (cert.exists() and key.exists()):
        r = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                            "-nodes", "-days", "3650", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                            "-keyout", key, "-out", cert], capture_output=True)
        if r.returncode != 0:
            raise BenchError(f"openssl req: {r.stderr.decode(errors='replace').strip()}")
    return cert, key


def _site(d: Path, cert: Path, key: Path, port: int, web: int) -> str:
    swaps = [
        ("ssl_certificate     /etc/ssl/nalcast/cert.pem;", f"ssl_certificate     {cert};"),
        ("ssl_certificate_key /etc/ssl/nalcast/key.pem;", f"ssl_certificate_key {key};"),
        ("access_log /var/log/nginx/access.log nalcast_without_query;", f"access_log {d}/access.log nalcast_without_query;"),
        ("listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;"),
        ("listen [::]:443 ssl;", ""),
        ("server 127.0.0.1:8080;", f"server 127.0.0.1:{web};"),
    ]
    site = SITE.read_text()
    for line, replacement in swaps:
        if site.count(line) != 1:
            raise BenchError(f"{SITE.relative_to(REPO_DIR)} no longer has exactly one `{line}`: update bench/lib/web_nginx.py")
        site = site.replace(line, replacement)
    return site


def start_nginx(ctx: Context, procs: Procs, web: int) -> tuple:
    """nginx terminating TLS on a free loopback port in front of the producer's --web port
    `web`; returns (process, port) once it listens."""
    d = ctx.dir("web", "nginx")
    cert, key = _certificate(d)
    port = free_port()
    (d / "nalcast-web.conf").write_text(_site(d, cert, key, port, web))
    conf = d / "nginx.conf"
    conf.write_text(f"""master_process off;
daemon off;
error_log {d}/error.log;
pid {d}/nginx.pid;
events {{}}
http {{
    access_log off;
    client_body_temp_path {d};
    proxy_temp_path {d};
    fastcgi_temp_path {d};
    uwsgi_temp_path {d};
    scgi_temp_path {d};
    include {d}/nalcast-web.conf;
}}
""")
    log = ctx.dir("logs") / "web-viewers-nginx.stderr"
    proc = procs.start([nginx_path(), "-p", d, "-c", conf], stderr=log)
    wait_listening(proc, port, log)
    return proc, port
