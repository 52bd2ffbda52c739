"""The soak's report: the run's samples, events and segments turned into figures and words.

report(run, work) -> (summary dict for soak-summary.json, the text of soak-report.txt).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from soak_sample import family, slope_per_hour, total

PRODUCER_DROPS = [
    ("nalcast_frames_dropped_total", "frames dropped by the producer (rate: faster than --fps; late: capture behind "
                                     "the clock, the encoder too slow; handoff: the serving thread behind)"),
    ("nalcast_reader_skips_total", "times a reader fell behind and skipped to the next IDR"),
    ("nalcast_reader_skipped_access_units_total", "access units readers skipped"),
    ("nalcast_readers_timed_out_total", "readers closed for making no progress"),
    ("nalcast_readers_refused_total", "readers refused (--max-readers)"),
    ("nalcast_ts_access_units_dropped_total", "access units the MPEG-TS listener left out"),
    ("nalcast_ts_audio_packets_dropped_total", "audio packets the MPEG-TS listener left out"),
    ("nalcast_sink_dropped_access_units_total", "access units the push (--forward) dropped while nginx was away"),
    ("nalcast_sink_dropped_audio_packets_total", "audio packets the push did not send"),
    ("nalcast_audio_dropped_samples_total", "sound samples lost (late: a source delivered after they were encoded; "
                                            "overflow: a source ran ahead)"),
    ("nalcast_audio_unsent_packets_total", "audio packets no output took"),
    ("nalcast_audio_source_losses_total", "times the sound server went away"),
]
RECORDER_DROPS = [
    ("nalcast_consumer_waiting_access_units_total", "access units dropped waiting for an IDR"),
    ("nalcast_consumer_unfinished_access_units_total", "access units cut off by a failed connection"),
    ("nalcast_consumer_dropped_audio_packets_total", "audio packets dropped (before the first picture, out of order)"),
    ("nalcast_consumer_malformed_packets_total", "malformed packets"),
    ("nalcast_consumer_reconnects_total", "reconnects"),
    ("nalcast_consumer_stalls_total", "stalls"),
    ("nalcast_sink_skipped_access_units_total", "access units the segment writer skipped to catch up"),
    ("nalcast_sink_dropped_access_units_total", "access units the segment writer dropped"),
    ("nalcast_sink_dropped_audio_packets_total", "audio packets the segment writer did not write"),
]


def events(path: Path) -> list:
    if not path.exists():
        return []
    out = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def process_figures(samples: list, label: str, warmup: float) -> dict | None:
    pts = [(s["t"], s["procs"][label]) for s in samples if label in s["procs"]]
    if not pts:
        return None
    after = [(t, p) for t, p in pts if t >= warmup] or pts
    rss = [(t, p["rss_kb"]) for t, p in after]
    fds = [(t, p["fds"]) for t, p in after]
    (t0, p0), (t1, p1) = pts[0], pts[-1]
    cpu = (p1["cpu_s"] - p0["cpu_s"]) / (t1 - t0) * 100 if t1 > t0 else None
    return {"samples": len(pts), "samples_after_warmup": len(after), "window_s": round(after[-1][0] - after[0][0], 1),
            "rss_kb": {"first": p0["rss_kb"], "after_warmup": after[0][1]["rss_kb"], "last": p1["rss_kb"],
                       "max": max(p["rss_kb"] for _, p in pts), "slope_kb_per_hour": r1(slope_per_hour(rss))},
            "fds": {"first": p0["fds"], "min": min(p["fds"] for _, p in pts), "max": max(p["fds"] for _, p in pts),
                    "last": p1["fds"], "slope_per_hour": r1(slope_per_hour(fds))},
            "threads": {"min": min(p["threads"] for _, p in pts), "max": max(p["threads"] for _, p in pts)},
            "cpu_percent": r1(cpu)}


def r1(x):
    return None if x is None else round(x, 1)


def drop_intervals(samples: list) -> list:
    """The sampling intervals in which the producer dropped frames, with the machine's state."""
    out = []
    for a, b in zip(samples, samples[1:]):
        pa, pb = a.get("producer"), b.get("producer")
        if not pa or not pb:
            continue
        da, db = family(pa, "nalcast_frames_dropped_total"), family(pb, "nalcast_frames_dropped_total")
        delta = {k.split('"')[1] if '"' in k else k: int(db[k] - da.get(k, 0)) for k in db if db[k] > da.get(k, 0)}
        if not delta:
            continue
        ca, cb = a["procs"].get("producer"), b["procs"].get("producer")
        cpu = (cb["cpu_s"] - ca["cpu_s"]) / (b["t"] - a["t"]) * 100 if ca and cb else None
        enc = family(pb, "nalcast_encode_milliseconds")
        lat = family(pb, "nalcast_capture_to_encoded_milliseconds")
        out.append({"t": a["t"], "to": b["t"], "dropped": delta, "load": b["load"], "producer_cpu_percent": r1(cpu),
                    "encode_ms_mean": enc.get('stat="mean"'), "capture_to_encoded_p99_ms": lat.get('quantile="0.99"'),
                    "clients": b["clients"]})
    return out


def frame_rates(samples: list) -> list:
    """Frames encoded per second in each sampling interval."""
    out = []
    for a, b in zip(samples, samples[1:]):
        if a.get("producer") and b.get("producer") and b["t"] > a["t"]:
            n = total(b["producer"], "nalcast_frames_encoded_total") - total(a["producer"], "nalcast_frames_encoded_total")
            out.append(round(n / (b["t"] - a["t"]), 2))
    return out


def counters(m: dict | None, table: list) -> dict:
    out = {}
    for name, _ in table:
        fam = family(m, name)
        if fam:
            out[name] = {k or "total": v for k, v in fam.items()}
    return out


def forward_story(run: dict, pev: list) -> dict:
    t0 = run.get("t0", 0)
    fw = [{"t": round(e["time"] - t0, 2), "event": e["event"], "reason": e.get("reason")}
          for e in pev if e["event"].startswith("forward-")]
    restarts = [{"t": round(r["down"] - t0, 2), "down_s": round(r["up"] - r["down"], 2)} for r in run.get("restarts", [])]
    for r in restarts:
        nxt = r["t"] + run["options"]["restart_every"] - 1
        after = [e for e in fw if r["t"] - 1 <= e["t"] < nxt]
        disc = next((e for e in after if e["event"] == "forward-disconnected"), None)
        r["push_lost_at"] = disc and disc["t"]
        # back: a connect that is not lost again within 5 s
        back = None
        for i, e in enumerate(after):
            if e["event"] == "forward-connected" and (disc is None or e["t"] >= disc["t"]):
                lost = next((x for x in after[i + 1:] if x["event"] == "forward-disconnected"), None)
                if lost is None or lost["t"] - e["t"] >= 5:
                    back = e
                    break
        r["push_back_at"] = back and back["t"]
        r["push_down_s"] = round(back["t"] - disc["t"], 2) if disc and back else None
        r["disconnects_until_next"] = sum(1 for e in after if e["event"] == "forward-disconnected")
    return {"events": fw, "restarts": restarts, "publishes_started": len(run.get("publish_starts", [])),
            "sessions_logged_by_nginx": run.get("publishes", [])}


def clients_story(sessions: list, work: Path) -> dict:
    out = {}
    for s in sessions:
        c = out.setdefault(s["client"], {"kind": s["kind"], "sessions": 0, "ended": Counter(), "problems": []})
        c["sessions"] += 1
        c["ended"][s["how"]] += 1
        r = s.get("result") or {}
        if s["kind"] == "ws":
            c["messages"] = c.get("messages", 0) + r.get("messages", 0)
            c.setdefault("closes", Counter())[f"{r.get('closed_by')} {r.get('close')} clean={r.get('clean')}"] += 1
            if r.get("error") or r.get("messages", 0) == 0:
                c["problems"].append(f"session {s['n']}: {r.get('error') or 'no message'}")
        elif s["kind"] == "chromium":
            c["painted"] = c.get("painted", 0) + (r.get("painted") or 0)
            c.setdefault("painted_per_session", []).append(r.get("painted"))
            if r.get("error") or r.get("problem") or not r.get("painted"):
                c["problems"].append(f"session {s['n']}: {r.get('error') or r.get('problem') or 'nothing painted'}")
        elif s["kind"] == "ffmpeg":
            errs = s.get("decode_error_lines", [])
            c["decode_error_lines"] = c.get("decode_error_lines", 0) + len(errs)
            if errs:
                c["problems"].append(f"session {s['n']}: {len(errs)} error lines, first: {errs[0][:160]}")
        elif s["kind"] == "nalcast" and s["exit"] not in (0, None):
            c["problems"].append(f"session {s['n']}: exit {s['exit']}")
    for name, c in out.items():
        c["ended"] = dict(c["ended"])
        if "closes" in c:
            c["closes"] = dict(c["closes"])
        if c["kind"] == "nalcast":
            ev = events(work / "clients" / f"{name}-events.jsonl")
            c["access_units"] = sum(e.get("accessUnits", 0) for e in ev if e["event"] == "stopped")
            c["disconnects"] = dict(Counter(e.get("reason") for e in ev if e["event"] == "disconnected"))
    return out


def length_story(run: dict, pev: list, rev: list, segs: list) -> dict:
    """The recording against the wall clock. It starts with the IDR the producer queued for
    the recorder's connection (its reader-started event: that picture was captured just
    before) and ends with the last picture captured before the stop signal."""
    spawn, stop_sent = run.get("producer_spawned"), run.get("stop_sent")
    finished = next((e["time"] for e in pev if e["event"] == "finished"), None)
    ts_reader = next((e["reader"] for e in pev if e["event"] == "reader-joined" and "(mpegts)" in e.get("peer", "")), None)
    started = next((e for e in pev if e["event"] == "reader-started" and e.get("reader") == ts_reader), None)
    done = [s for s in segs if not s.get("unfinished")]
    video = sum(s.get("video_duration", 0) for s in done)
    audio = sum(s.get("audio_duration", 0) for s in done)
    by_events = sum(e.get("duration", 0) for e in rev if e["event"] == "segment-closed")
    if not (spawn and stop_sent and started):
        return {"video_s": video}
    covered = stop_sent - started["time"]
    return {"producer_wall_s": round((finished or stop_sent) - spawn, 3),
            "producer_start_s": round(run["producer_ready"] - spawn, 3),
            "recording_starts_after_spawn_s": round(started["time"] - spawn, 3), "recorder_join_ms": started.get("joinMs"),
            "wall_recorded_s": round(covered, 3), "video_s": round(video, 3), "audio_s": round(audio, 3),
            "segment_closed_events_s": round(by_events, 3), "end_gap_s": round(covered - video, 3),
            "finished_after_stop_s": round(finished - stop_sent, 3) if finished else None}


def report(run: dict, work: Path) -> tuple[dict, str]:
    samples, warm = run.get("samples", []), run["options"]["warmup"]
    pev, rev = events(work / "producer-events.jsonl"), events(work / "recorder-events.jsonl")
    segs = run.get("segments", [])
    final_p = run.get("final_producer") or (samples[-1]["producer"] if samples else None)
    final_r = run.get("final_recorder") or (samples[-1]["recorder"] if samples else None)
    labels = sorted({k for s in samples for k in s["procs"]})
    procs = {k: process_figures(samples, k, warm) for k in labels}
    if procs.get("producer"):
        # its fds less one per reader or viewer connected then: what a leak would raise
        base = [(x["t"], x["procs"]["producer"]["fds"] - total(x["producer"], "nalcast_readers")) for x in samples
                if "producer" in x["procs"] and x.get("producer") and x["t"] >= warm]
        procs["producer"]["fds_less_readers"] = {"min": min((v for _, v in base), default=None),
                                                 "max": max((v for _, v in base), default=None),
                                                 "slope_per_hour": r1(slope_per_hour(base))}
    bad = [s for s in segs if s.get("unfinished") or s.get("decode_errors") or s.get("decode_exit")]
    length = length_story(run, pev, rev, segs)
    summary = {
        "options": run["options"], "work": str(work), "cores": run["cores"], "chromium": run["chromium"],
        "error": run.get("error"), "died": run.get("died", []),
        "load": {"mean": r1(sum(s["load"] for s in samples) / len(samples)) if samples else None,
                 "max": max((s["load"] for s in samples), default=None)},
        "processes": {k: v for k, v in procs.items() if k in ("producer", "recorder")},
        "readers": {k: v for k, v in procs.items() if k not in ("producer", "recorder")},
        "producer": {"frames_captured": total(final_p, "nalcast_frames_captured_total"),
                     "frames_encoded": total(final_p, "nalcast_frames_encoded_total"),
                     "keepalive_frames": total(final_p, "nalcast_keepalive_frames_total"),
                     "counted_losses": counters(final_p, PRODUCER_DROPS),
                     "drop_intervals": drop_intervals(samples), "fps_by_interval": frame_rates(samples),
                     "reader_skips": [{k: e.get(k) for k in ("time", "reader", "accessUnits")} for e in pev
                                      if e["event"] == "reader-skipped"],
                     "reader_closes": dict(Counter(e.get("reason") for e in pev if e["event"] == "reader-closed")),
                     "handoff_gaps": [e for e in pev if e["event"].startswith("handoff")],
                     "audio_events": [e for e in pev if e["event"].startswith("audio")],
                     "exit": run.get("producer_exit"), "log_tail": tail(work / "producer.log")},
        "forward": forward_story(run, pev),
        "recorder": {"counted_losses": counters(final_r, RECORDER_DROPS), "exit": run.get("recorder_exit"),
                     "access_units": total(final_r, "nalcast_consumer_access_units_total"),
                     "audio_packets": total(final_r, "nalcast_consumer_audio_packets_total"),
                     "events": dict(Counter(e["event"] for e in rev))},
        "clients": clients_story(run.get("sessions", []), work),
        "segments": {"count": len(segs), "decodable": len(segs) - len(bad), "bad": [s["name"] for s in bad],
                     "silences": [{"segment": s["name"], "from": a, "to": b} for s in segs for a, b in s.get("silences", [])],
                     "dts_complaints": sum(s.get("dts_complaints", 0) for s in segs),
                     "close_frames": [{"segment": s["name"], "at": c[0], "ms_after_previous": c[1], "keyframe": c[2]}
                                      for s in segs for c in s.get("close_frames", [])],
                     "idr_forced": sum(1 for e in pev if e["event"] == "idr-forced"),
                     "each": segs},
        "length": length,
    }
    summary["checks"] = checks(run, summary, bad, segs)
    summary["ok"] = all(c["ok"] for c in summary["checks"])
    return summary, text(summary)


def checks(run: dict, s: dict, bad: list, segs: list) -> list:
    gap = s["length"].get("end_gap_s")
    restarts = s["forward"]["restarts"]
    sessions = run.get("sessions", [])
    empty = [f"{x['client']}#{x['n']}" for x in sessions if x["kind"] in ("ws", "chromium")
             and not ((x.get("result") or {}).get("messages") or (x.get("result") or {}).get("painted"))]
    resets = [f"{x['client']}#{x['n']}" for x in sessions if x["kind"] == "ws" and not (x.get("result") or {}).get("clean")]
    c = [("the producer and the recorder ran to the end and exited 0",
          not run.get("error") and not run.get("died") and run.get("producer_exit") == 0 and run.get("recorder_exit") == 0),
         (f"every segment decodes ({len(segs)} segments)", bool(segs) and not bad),
         (f"the recording's length is the wall time within 1 s (end gap {gap} s)", gap is not None and abs(gap) <= 1.0),
         (f"the push came back after every nginx restart ({len(restarts)})", all(r["push_back_at"] is not None for r in restarts)),
         ("the tone is heard all through the recording", not s["segments"]["silences"]),
         ("every viewer session got pictures" + (f" (not: {empty})" if empty else ""), not empty),
         ("every raw WebSocket session ended with a close handshake" + (f" (not: {resets})" if resets else ""), not resets)]
    return [{"check": name, "ok": bool(ok)} for name, ok in c]


def tail(path: Path, n: int = 3) -> list:
    return path.read_text(errors="replace").splitlines()[-n:] if path.exists() else []


def text(s: dict) -> str:
    import soak_text
    return soak_text.render(s)
