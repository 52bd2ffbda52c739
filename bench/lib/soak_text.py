"""The soak's summary as plain text (soak-report.txt)."""

from __future__ import annotations

from soak_report import PRODUCER_DROPS, RECORDER_DROPS


def render(s: dict) -> str:
    o = s["options"]
    out = [f"nalcast soak: {o['size']} at 30 fps, {o['duration']} s, nginx restarted every {o['restart_every']} s, "
           f"clients churning every {o['churn']} s, warm-up {o['warmup']} s, preset {o['preset']}",
           f"machine: {s['cores']} cores, load average mean {s['load']['mean']} max {s['load']['max']}; "
           f"Chromium viewer: {s['chromium']}; work: {s['work']}"]
    if s["error"]:
        out.append(f"ERROR: {s['error']}")
    for d in s["died"]:
        out.append(f"DIED: {d}")
    out += ["", "== memory and file descriptors (every sample; slopes by least squares after the warm-up)"]
    for name, p in s["processes"].items():
        if p:
            r, f = p["rss_kb"], p["fds"]
            out.append(f"{name}: RSS {r['first']} kB at start, {r['after_warmup']} after warm-up, {r['last']} at the end "
                       f"(max {r['max']}), slope {r['slope_kb_per_hour']} kB/h; fds {f['first']} -> {f['last']} "
                       f"(min {f['min']}, max {f['max']}), slope {f['slope_per_hour']}/h; threads "
                       f"{p['threads']['min']}-{p['threads']['max']}; CPU {p['cpu_percent']} % of a core; "
                       f"{p['samples']} samples")
            if "fds_less_readers" in p:
                b = p["fds_less_readers"]
                out.append(f"  producer's fds less its connected readers: {b['min']:.0f}-{b['max']:.0f}, slope "
                           f"{b['slope_per_hour']}/h")
    readers = [p for p in s["readers"].values() if p]
    if readers:
        out.append(f"readers (nalcast consume, {len(readers)} sessions sampled): RSS at most "
                   f"{max(p['rss_kb']['max'] for p in readers)} kB, at their last sample "
                   f"{min(p['rss_kb']['last'] for p in readers)}-{max(p['rss_kb']['last'] for p in readers)} kB; "
                   f"fds at most {max(p['fds']['max'] for p in readers)}")
    span = s["processes"].get("producer", {}) or {}
    if span and span.get("window_s", 0) < 600:
        out.append(f"(the slopes are fitted over {span['window_s']:.0f} s after the warm-up: under 10 minutes they "
                   f"show the warm-up's growth more than a leak; the hour-long run is the one to read)")
    p = s["producer"]
    out += ["", "== counted losses and why",
            f"producer: {p['frames_captured']:.0f} frames captured, {p['frames_encoded']:.0f} encoded "
            f"({p['keepalive_frames']:.0f} keep-alives); exit {p['exit']}"]
    rates = sorted(p["fps_by_interval"])
    if rates:
        out.append(f"encoded frame rate by 10 s interval: median {rates[len(rates) // 2]}, lowest {rates[0]}, highest "
                   f"{rates[-1]} (capture on change: a frame when the screen changed, at most 30 a second)")
    out += losses(p["counted_losses"], PRODUCER_DROPS)
    if p["drop_intervals"]:
        iv = p["drop_intervals"]
        out.append(f"frames were dropped in {len(iv)} of the 10 s intervals; in those, load average "
                   f"{min(i['load'] for i in iv)}-{max(i['load'] for i in iv)}, producer CPU "
                   f"{fmt_range([i['producer_cpu_percent'] for i in iv])} % of a core, encode mean "
                   f"{fmt_range([i['encode_ms_mean'] for i in iv])} ms (a frame is due every 33.3 ms):")
        for i in iv[:15]:
            out.append(f"  {i['t']:7.0f}-{i['to']:.0f} s: {i['dropped']} load {i['load']} CPU {i['producer_cpu_percent']} % "
                       f"encode {i['encode_ms_mean']} ms capture->encoded p99 {i['capture_to_encoded_p99_ms']} ms, "
                       f"{i['clients']} clients")
        if len(iv) > 15:
            out.append(f"  ... {len(iv) - 15} more in soak-summary.json")
    else:
        out.append("no frame dropped by the producer")
    out.append(f"reader skips: {len(p['reader_skips'])} "
               f"({sum(e.get('accessUnits') or 0 for e in p['reader_skips'])} access units); readers closed: {p['reader_closes']}")
    if p["handoff_gaps"]:
        out.append(f"handoff gaps: {p['handoff_gaps']}")
    if p["audio_events"]:
        out.append(f"audio events: {[e['event'] for e in p['audio_events']]}")
    out += [f"producer's last lines: {line}" for line in p["log_tail"]]
    f = s["forward"]
    out.append(f"push to nginx-rtmp: {f['publishes_started']} publishes started for {len(f['restarts'])} restarts "
               f"(+1 at the start); {sum(e['event'] == 'forward-disconnected' for e in f['events'])} disconnects, "
               f"{sum(e['event'] == 'forward-connected' for e in f['events'])} connects")
    for r in f["restarts"]:
        back = (f"back at {r['push_back_at']} s ({r['push_down_s']} s later)" if r["push_back_at"] is not None
                else "NEVER back (each connect lost again within 5 s)")
        out.append(f"  nginx restarted at {r['t']:.0f} s (down {r['down_s']} s): push lost at {r['push_lost_at']} s, "
                   f"{back}; disconnects before the next restart: {r['disconnects_until_next']}")
    reasons = sorted({e["reason"] for e in f["events"] if e.get("reason")})
    if reasons:
        out.append(f"  disconnect reasons: {reasons}")
    r = s["recorder"]
    out.append(f"recorder: {r['access_units']:.0f} access units, {r['audio_packets']:.0f} audio packets received; "
               f"exit {r['exit']}; events {r['events']}")
    out += losses(r["counted_losses"], RECORDER_DROPS)
    out += ["", "== readers and viewers (each joins and leaves on the churn schedule)"]
    for name, c in s["clients"].items():
        extra = {k: c[k] for k in ("messages", "closes", "painted", "painted_per_session", "decode_error_lines",
                                   "access_units", "disconnects") if k in c}
        out.append(f"{name} ({c['kind']}): {c['sessions']} sessions, ended {c['ended']}; {extra}")
        out += [f"  problem: {x}" for x in c["problems"][:5]]
    g = s["segments"]
    out += ["", "== recording",
            f"segments: {g['count']}, decoding without an error (ffmpeg -v error -f null): {g['decodable']}"
            + (f"; NOT: {g['bad']}" if g["bad"] else "")]
    if g["close_frames"]:
        cf = g["close_frames"]
        out.append(f"FFmpeg's null muxer complained {g['dts_complaints']} times of two frames on one tick (\"non "
                   f"monotonically increasing dts\", not a decode error): {len(cf)} frames came less than 30 ms after "
                   f"the one before ({sum(c['keyframe'] for c in cf)} of them IDRs; the producer forced {g['idr_forced']} "
                   f"IDRs for joining readers, each taken at once, off the 30 fps cadence): "
                   + ", ".join(f"{c['segment'][-9:-4]}@{c['at']}s +{c['ms_after_previous']}ms{' IDR' if c['keyframe'] else ''}"
                               for c in cf[:12]))
    if g["silences"]:
        first = g["silences"][0]
        if g["each"] and first["segment"] == g["each"][0]["name"] and first["from"] < 0.1:
            out.append(f"the recording starts with {first['to']} s of silence although the tone was playing "
                       f"before the producer started (sound lost at the start)")
        out.append(f"silences in the tone (sound lost): {len(g['silences'])}: {g['silences'][:10]}")
    else:
        out.append("the tone is heard all through every segment (no silence of 0.1 s or more)")
    ln = s["length"]
    if "wall_recorded_s" in ln:
        out += [f"the producer ran {ln['producer_wall_s']} s (spawn to its finished event; serving after "
                f"{ln['producer_start_s']} s); the recording starts {ln['recording_starts_after_spawn_s']} s after the "
                f"spawn, with the IDR queued for the recorder's connection ({ln['recorder_join_ms']} ms after it joined): "
                f"the gap at the start is the producer starting and the recorder connecting",
                f"from there to the stop signal: {ln['wall_recorded_s']} s of wall time; the segments hold "
                f"{ln['video_s']} s of video (ffprobe; {ln['segment_closed_events_s']} s by the recorder's segment-closed "
                f"events) and {ln['audio_s']} s of sound",
                f"gap at the end: {ln['end_gap_s']} s (wall minus video: the last frame captured before the signal, "
                f"at most a frame interval, less its own duration; the producer finished {ln['finished_after_stop_s']} s "
                f"after the signal, sending what was encoded)"]
    out += ["", "== verdict: " + ("ok" if s["ok"] else "FAILED")]
    out += [f"{'ok  ' if c['ok'] else 'FAIL'} {c['check']}" for c in s["checks"]]
    return "\n".join(out) + "\n"


def losses(counted: dict, table: list) -> list:
    out = []
    for name, why in table:
        values = counted.get(name)
        if values is None:
            continue
        shown = ", ".join(f"{k}={v:.0f}" for k, v in values.items())
        mark = "" if any(v for v in values.values()) else " (none)"
        out.append(f"  {name}: {shown}{mark}: {why}")
    return out


def fmt_range(xs: list) -> str:
    xs = [x for x in xs if x is not None]
    return f"{min(xs):.1f}-{max(xs):.1f}" if xs else "?"
