"""The measuring side of bench/run: contenders, cases, runs, the table.

A benchmark is a module with NAME, ABOUT and `cases(ctx) -> list[Case]`. Each Case is
one row group of the table: the same work (`work` units of `unit`) done by several
contenders side by side. Runs are interleaved (run 1 of every contender, then run 2,
...; from run 2 on in a seeded shuffled order) so that drift on the machine hits every
row alike; the table shows medians.

A contender is normally one process, measured by the tiny C launcher `c/rusage.c`
(wall time, user+sys CPU, peak RSS of exactly that process). A benchmark that needs
something else (several processes, a latency probe) gives the contender a `measure`
function returning a Sample instead.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import random
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

BENCH_DIR = Path(__file__).resolve().parent.parent
REPO_DIR = BENCH_DIR.parent
EX_USAGE = 64


def log(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr, flush=True)


@dataclass
class Sample:
    """One run of one contender."""

    wall_s: float
    cpu_s: float  # user + sys
    rss_kib: int  # peak resident set
    status: int = 0  # exit status (0 ok)
    extra: dict = field(default_factory=dict)


@dataclass
class Contender:
    name: str
    argv: Optional[list] = None
    stdin: Optional[Path] = None  # a file; None means /dev/null
    stdout: Optional[Path] = None  # a file; None means /dev/null
    output: Optional[Path] = None  # the file its result lands in, when not stdout
    role: str = ""  # "limit" (the physical limit row) or "ffmpeg" (the reference tool)
    skip: Optional[str] = None  # reason, when it cannot run here
    # nalcast rows: exit 64 (unknown option) means "not there yet", not "broken"
    usage_error_skips: bool = False
    # post-run check of the last run: returns an error message or None
    check: Optional[Callable[["Contender"], Optional[str]]] = None
    # custom measurement instead of one process under the launcher
    measure: Optional[Callable[["Context"], Sample]] = None
    # a live program that runs until stopped: the launcher sends it SIGINT after this
    # many seconds (`rusage -t`), and the exit of a stopped program counts as clean
    duration_s: Optional[float] = None
    def result_file(self) -> Optional[Path]:
        return self.output or self.stdout

    # filled in by the runner
    samples: list = field(default_factory=list)
    failed: Optional[str] = None
    stderr_path: Optional[Path] = None


@dataclass
class Case:
    bench: str  # benchmark name, what --only selects
    label: str  # e.g. "scan 1.0 GB", "encode 1080p ultrafast"
    unit: str  # "MB/s", "fps"
    work: float  # units of work done per run: rate = work / wall
    contenders: list
    warm: list = field(default_factory=list)  # files to read once into the page cache
    notes: list = field(default_factory=list)
    # after all runs: returns notes (e.g. a fairness check across contenders)
    after: Optional[Callable[["Case"], list]] = None
    # runs of this case, when not ctx.runs (a live case that takes its own samples)
    runs: Optional[int] = None
    # figures a `measure` function puts in Sample.extra, shown as medians in the last
    # column: (key, label, format), e.g. ("join_ms", "join", "{:.1f} ms")
    figures: list = field(default_factory=list)


class Nalcast:
    """The nalcast binary under test, and which subcommands it has."""

    def __init__(self, path: Optional[Path], why_missing: str = ""):
        self.path = path
        self.why_missing = why_missing
        self._help: dict = {}

    def help(self, sub: str) -> Optional[str]:
        """Text of `nalcast SUB --help` if it exits 0 and names SUB, else None
        (a program that ignores its arguments has no subcommand SUB)."""
        if self.path is None:
            return None
        if sub not in self._help:
            try:
                p = subprocess.run([str(self.path), sub, "--help"], capture_output=True,
                                   text=True, timeout=20, stdin=subprocess.DEVNULL)
                text = p.stdout + p.stderr
                self._help[sub] = text if p.returncode == 0 and sub in text else None
            except (OSError, subprocess.TimeoutExpired):
                self._help[sub] = None
        return self._help[sub]

    def unavailable(self, sub: str) -> Optional[str]:
        """Why `nalcast SUB` cannot be benchmarked, or None if it can."""
        if self.path is None:
            return f"skipped (nalcast not available: {self.why_missing})"
        if self.help(sub) is None:
            return f"skipped (nalcast {sub} not available)"
        return None


@dataclass
class Context:
    quick: bool
    runs: int
    out: Path  # bench/out, created on demand
    nalcast: Nalcast
    timeout_s: float
    # -n given on the command line: it then overrides a live case's own (smaller) count
    runs_given: bool = False

    def runs_for(self, cap: int) -> int:
        """Runs of a live case that takes `cap` by default (each run is long)."""
        return self.runs if self.runs_given else min(self.runs, cap)

    def dir(self, *parts: str) -> Path:
        d = self.out.joinpath(*parts)
        d.mkdir(parents=True, exist_ok=True)
        return d

    def tool(self, name: str, libs: tuple = ()) -> Path:
        """bench/c/NAME.c compiled with gcc -O2 into out/bin/NAME (rebuilt when it or a header
        of bench/c is newer)."""
        src = BENCH_DIR / "c" / f"{name}.c"
        exe = self.dir("bin") / name
        newest = max(f.stat().st_mtime for f in [src, *(BENCH_DIR / "c").glob("*.h")])
        if not exe.exists() or exe.stat().st_mtime < newest:
            cmd = ["gcc", "-O2", "-Wall", "-o", str(exe), str(src), *libs]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                raise RuntimeError(f"cannot compile {src.name}: {p.stderr.strip()}")
        return exe


def cached(path: Path, make: Callable[[Path], None]) -> Path:
    """Returns path, making it first (through path.part, renamed when complete)."""
    if path.exists():
        return path
    part = path.with_name(path.name + ".part")
    log(f"generating {path.relative_to(BENCH_DIR)} (once; reused by later runs)")
    make(part)
    part.rename(path)
    return path


def sh(argv: list, **kw) -> None:
    """Runs a preparation command; raises with its stderr if it fails."""
    p = subprocess.run([str(a) for a in argv], capture_output=True, **kw)
    if p.returncode != 0:
        err = p.stderr.decode(errors="replace").strip().splitlines()[-3:] if p.stderr else []
        raise RuntimeError(f"{argv[0]} failed ({p.returncode}): {' | '.join(err)}")


def warm(path: Path) -> None:
    """Reads a file once so that every contender finds it in the page cache."""
    with open(path, "rb", buffering=0) as f:
        while f.read(8 << 20):
            pass


def has_program(name: str) -> bool:
    return shutil.which(name) is not None


def gst_has(element: str) -> bool:
    if not has_program("gst-inspect-1.0"):
        return False
    p = subprocess.run(["gst-inspect-1.0", "--exists", element], capture_output=True)
    return p.returncode == 0


# ---------------------------------------------------------------------------
# running


# How programs stopped by SIGINT end: 0 (nalcast, gst-launch -e), 255 (FFmpeg), 130 or
# killed by the signal itself (-2).
STOPPED_EXITS = (0, 255, 130, -signal.SIGINT)


def launch(ctx: Context, c: Contender, stderr_path: Path, probe: Optional[Callable] = None) -> Sample:
    """Runs c.argv under the launcher and returns its cost. `probe(launcher)`, if given,
    is called once the launcher has started (the program is its only child) and may watch
    the program while it runs; the dict it returns goes into Sample.extra."""
    rusage = ctx.tool("rusage")
    result = ctx.dir("tmp") / "rusage.txt"
    limit = ["-t", f"{c.duration_s:g}"] if c.duration_s else []
    stdin = open(c.stdin, "rb") if c.stdin else subprocess.DEVNULL
    stdout = open(c.stdout, "wb") if c.stdout else subprocess.DEVNULL
    try:
        with open(stderr_path, "wb") as err:
            p = subprocess.Popen([str(rusage), *limit, str(result), *[str(a) for a in c.argv]],
                                 stdin=stdin, stdout=stdout, stderr=err, start_new_session=True)
            seen = probe(p) if probe else {}
            try:
                p.wait(timeout=ctx.timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                return Sample(0, 0, 0, status=-1, extra={"error": f"timed out after {ctx.timeout_s:.0f} s"})
    finally:
        for f in (stdin, stdout):
            if hasattr(f, "close"):
                f.close()
    try:
        wall_ns, ut, st, rss, wstatus = (int(x) for x in result.read_text().split())
    except (OSError, ValueError):
        return Sample(0, 0, 0, status=p.returncode or -1, extra={"error": "launcher wrote no result"})
    code = os.waitstatus_to_exitcode(wstatus)
    if c.duration_s and code in STOPPED_EXITS and wall_ns >= c.duration_s * 1e9:
        code = 0  # stopped by the launcher, as asked, not failed
    # user and system time apart too: a case may show them (Case.figures)
    return Sample(wall_ns / 1e9, (ut + st) / 1e6, rss, status=code,
                  extra={"user_s": ut / 1e6, "sys_s": st / 1e6, **seen})


def _last_line(path: Optional[Path]) -> str:
    try:
        lines = [l for l in path.read_text(errors="replace").splitlines() if l.strip()]
        return lines[-1].strip() if lines else ""
    except (OSError, AttributeError):
        return ""


def run_case(ctx: Context, case: Case) -> None:
    for path in case.warm:
        warm(path)
    logs = ctx.dir("logs")
    runs = case.runs or ctx.runs
    for i in range(runs):
        # The first run in table order, later ones shuffled (seeded: reproducible), so no
        # contender always runs right after the same heavy neighbour.
        order = list(case.contenders)
        if i > 0:
            random.Random(i).shuffle(order)
        for c in order:
            if c.skip or c.failed:
                continue
            slug = f"{case.label}-{c.name}".replace(" ", "_").replace("/", "_")
            c.stderr_path = logs / f"{slug}.stderr"
            s = c.measure(ctx) if c.measure else launch(ctx, c, c.stderr_path)
            shown = "".join(f", {label} " + fmt.format(s.extra[key]) for key, label, fmt in case.figures
                            if isinstance(s.extra.get(key), (int, float)))
            log(f"{case.label} | {c.name} run {i + 1}/{runs}: "
                + (f"{s.wall_s:.3f} s, CPU {s.cpu_s:.2f} s, RSS {s.rss_kib / 1024:.1f} MiB{shown}"
                   if s.status == 0 else f"exit {s.status}" + (f": {s.extra['error']}" if s.extra.get("error") else "")))
            if s.status != 0:
                line = s.extra.get("error") or _last_line(c.stderr_path)
                if c.usage_error_skips and s.status == EX_USAGE:
                    c.skip = f"skipped (exit 64: {line})"
                else:
                    c.failed = f"FAILED (exit {s.status}: {line})"
                continue
            c.samples.append(s)
            if c.check and i == 0:
                problem = c.check(c)
                if problem:
                    c.failed = f"FAILED ({problem})"
    if case.after:
        case.notes.extend(case.after(case))


# ---------------------------------------------------------------------------
# summarizing


def median_wall(c: Contender) -> Optional[float]:
    """The median wall time of a contender's runs, None without any."""
    return statistics.median(s.wall_s for s in c.samples) if c.samples else None


def summary(case: Case, c: Contender) -> dict:
    row = {"benchmark": case.label, "bench": case.bench, "contender": c.name, "role": c.role,
           "unit": case.unit, "work": case.work, "figure_labels": case.figures}
    if c.skip or c.failed or not c.samples:
        row["status"] = c.skip or c.failed or "no samples"
        return row
    wall = median_wall(c)
    row.update(status="ok", runs=len(c.samples), wall_s=wall, rate=case.work / wall,
               cpu_s=statistics.median(s.cpu_s for s in c.samples),
               rss_mib=statistics.median(s.rss_kib for s in c.samples) / 1024,
               samples=[vars(s) for s in c.samples])
    figures = {}
    for key, _, _ in case.figures:
        values = [s.extra[key] for s in c.samples if isinstance(s.extra.get(key), (int, float))]
        if values:
            figures[key] = statistics.median(values)
    row["figures"] = figures
    return row


def add_ratios(rows: list) -> None:
    ref = {role: next((r for r in rows if r["role"] == role and r["status"] == "ok"), None)
           for role in ("limit", "ffmpeg")}
    for r in rows:
        if r["status"] != "ok":
            continue
        if ref["limit"] and r["unit"]:
            lim = ref["limit"]
            r["rate_vs_limit"] = r["rate"] / lim["rate"]
            r["cpu_vs_limit"] = r["cpu_s"] / lim["cpu_s"] if lim["cpu_s"] > 0 else None
            r["rss_minus_limit_mib"] = r["rss_mib"] - lim["rss_mib"]
        if ref["ffmpeg"] and r["unit"]:
            r["rate_vs_ffmpeg"] = r["rate"] / ref["ffmpeg"]["rate"]


COLUMNS = ["benchmark", "contender", "wall s", "rate", "CPU s", "RSS MiB",
           "rate/limit", "rate/ffmpeg", "CPU/limit", "RSS-limit", "figures"]


def cells(r: dict) -> list:
    def f(key, fmt):
        v = r.get(key)
        return fmt.format(v) if isinstance(v, (int, float)) else "-"
    name = r["contender"] + (f" ({r['role']})" if r["role"] else "")
    if r["status"] != "ok":
        return [r["benchmark"], name, r["status"]] + [""] * (len(COLUMNS) - 3)
    figures = ", ".join(f"{label} {fmt.format(r['figures'][key])}"
                        for key, label, fmt in r.get("figure_labels", ()) if key in r.get("figures", {}))
    return [r["benchmark"], name, f("wall_s", "{:.3f}"),
            f"{r['rate']:.1f} {r['unit']}" if r["unit"] else "-",
            f("cpu_s", "{:.2f}"), f("rss_mib", "{:.1f}"), f("rate_vs_limit", "{:.2f}x"),
            f("rate_vs_ffmpeg", "{:.2f}x"), f("cpu_vs_limit", "{:.2f}x"),
            f("rss_minus_limit_mib", "{:+.1f}"), figures or "-"]


def text_table(rows: list) -> str:
    table = [COLUMNS] + [cells(r) for r in rows]
    # a skip/fail message spans the numeric columns: don't let it widen them
    widths = [max(len(t[i]) for t in table if i < 2 or t[3] != "" or t is table[0])
              for i in range(len(COLUMNS))]
    lines = []
    for t in table:
        if t[3] == "" and t is not table[0]:
            lines.append("  ".join([t[0].ljust(widths[0]), t[1].ljust(widths[1]), t[2]]))
        else:
            lines.append("  ".join(v.ljust(w) if i < 2 or i == len(t) - 1 else v.rjust(w)
                                   for i, (v, w) in enumerate(zip(t, widths))).rstrip())
    return "\n".join(lines)


def markdown_table(rows: list) -> str:
    out = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        out.append("| " + " | ".join(v.replace("|", "\\|") for v in cells(r)) + " |")
    return "\n".join(out)


def write_results(ctx: Context, rows: list, notes: list, meta: dict) -> tuple:
    results = ctx.dir("results")
    stamp = time.strftime("%Y%m%d-%H%M%S") + ("-quick" if ctx.quick else "")
    n = 1
    while (results / f"{stamp}.json").exists():
        n += 1
        stamp = stamp.split("+")[0] + f"+{n}"
    data = {"meta": meta, "rows": rows, "notes": notes}
    js = results / f"{stamp}.json"
    md = results / f"{stamp}.md"
    js.write_text(json.dumps(data, indent=2) + "\n")
    body = [f"# bench results {stamp}", "",
            "Medians of {runs} run(s){q}; nalcast: {nalcast}.".format(
                runs=meta["runs"], q=" (--quick)" if meta["quick"] else "", nalcast=meta["nalcast"]),
            "", markdown_table(rows), ""]
    body += [f"- {n}" for n in notes]
    md.write_text("\n".join(body) + "\n")
    for p in (js, md):
        latest = results / (f"latest-quick{p.suffix}" if ctx.quick else f"latest{p.suffix}")
        latest.write_text(p.read_text())
    return js, md
