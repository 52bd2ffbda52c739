"""Plays nalcast's page in headless Chromium through a delaying forwarder, inside the lossy
network namespace of Tests/WebRTC/lossy-netns, and prints what the picture did, as JSON.
Run by the venv python (selenium) under `ip netns exec NAME`.

    lossy_path.py PAGE_URL SECONDS PATH_JSON [GOAL_JSON]

PATH_JSON: {"delayMs": 30, "forwardFrom": F, "tcp": [[HOST, PORT, UPHOST, UPPORT], ...],
"udp": [[HOST, PORT, UPHOST, UPPORT], ...]}: each TCP connection to HOST:PORT is carried to
UPHOST:UPPORT and each UDP datagram to HOST:PORT goes to UPHOST:UPPORT from address F (the
one the namespace lets UDP leave from), and back; every byte held delayMs each way (the
kernel here has no netem). PAGE_URL is the page at the forwarder's address.

Once the page has painted 30 frames, it records for at least SECONDS when each frame was
painted (performance.now() at each of the page's capture -> paint figures, a setter on
window.nalcastViewer.latencyMs) and its latency, then goes on (up to 60 s more) until
Chromium's getStats of the video (inbound-rtp) counts at least GOAL_JSON's figures since the
start ({"nackCount": 3}) and, with "metricsUrl" (nalcast's /metrics, reached directly) and
"metrics" ({"nalcast_webrtc_retransmitted_packets_total": 3}), nalcast's counters theirs. Prints {"painted", "seconds", "maxGapMs", "gapsOver200Ms",
"stillSeconds" (whole seconds with no frame painted), "latencyMs": {"median", "p99", "all"},
"stats": the getStats differences (and the last roundTripTime of the video's remote-outbound-rtp,
Chromium's round trip from nalcast's DLRRs), "transport", "problem"}, or {"error": ...} with exit 1.
"""

import collections
import json
import socket
import sys
import threading
import time
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

# Before the page's own script: keep every RTCPeerConnection (for getStats) and every
# capture -> paint figure with the time it was painted. In a function of its own: the page's
# top-level names (its own `viewer`) share the global scope with a script's.
EARLY = """
(() => {
window.nalcastPeers = [];
window.nalcastPaints = [];
const Original = window.RTCPeerConnection;
if (Original) {
  window.RTCPeerConnection = function (...args) { const pc = new Original(...args); window.nalcastPeers.push(pc); return pc; };
  window.RTCPeerConnection.prototype = Original.prototype;
}
let viewer;
Object.defineProperty(window, 'nalcastViewer', {
  configurable: true,
  get() { return viewer; },
  set(value) {
    viewer = value;
    let last = value.latencyMs;
    Object.defineProperty(value, 'latencyMs', {
      configurable: true, enumerable: true,
      get() { return last; },
      set(v) { last = v; window.nalcastPaints.push([performance.now(), v]); },
    });
  },
});
})();
"""
READ = "return Object.assign({}, window.nalcastViewer || {});"
STATS = """
const done = arguments[arguments.length - 1];
const pc = window.nalcastPeers[window.nalcastPeers.length - 1];
if (!pc) return done({});
pc.getStats().then(report => {
  let video = {}, remote = {};
  report.forEach(s => { if (s.type === 'inbound-rtp' && s.kind === 'video') video = s; });
  report.forEach(s => { if (s.type === 'remote-outbound-rtp' && s.kind === 'video') remote = s; });
  const out = {};
  for (const name of ['nackCount', 'pliCount', 'firCount', 'framesDropped', 'freezeCount', 'totalFreezesDuration',
                      'packetsLost', 'packetsReceived', 'framesDecoded', 'keyFramesDecoded']) {
    if (typeof video[name] === 'number') out[name] = video[name];
  }
  // The round trip Chromium measured from the sender's DLRRs (RFC 3611; a receiver that
  // sends nothing has no other): the count, and (not a count) the last one.
  if (typeof remote.roundTripTimeMeasurements === 'number') out.roundTripTimeMeasurements = remote.roundTripTimeMeasurements;
  if (typeof remote.roundTripTime === 'number') out.roundTripTime = remote.roundTripTime;
  done(out);
}).catch(() => done({}));
"""


class Delayed:
    """Sends what it is given `delay` seconds later, in order, on its own thread. A datagram
    the namespace's nftables drops on its way out fails its sendto (EPERM): lost, as meant,
    and the next one goes (`datagrams`); a stream's error ends it."""

    def __init__(self, delay, send, name, datagrams=False):
        self.delay, self.send, self.datagrams = delay, send, datagrams
        self.queue, self.ready = collections.deque(), threading.Condition()
        threading.Thread(target=self.run, name=name, daemon=True).start()

    def put(self, item):
        with self.ready:
            self.queue.append((time.monotonic() + self.delay, item))
            self.ready.notify()

    def run(self):
        while True:
            with self.ready:
                while not self.queue:
                    self.ready.wait()
                due, item = self.queue.popleft()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            try:
                if self.send(item) is False:
                    return
            except OSError:
                if not self.datagrams:
                    return


def forward_udp(host, port, up_host, up_port, out_host, delay):
    front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    front.bind((host, port))
    back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    back.bind((out_host, 0))
    for s in (front, back):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    client = [None]
    upward = Delayed(delay, lambda data: back.sendto(data, (up_host, up_port)), "udp-up", datagrams=True)
    downward = Delayed(delay, lambda data: client[0] and front.sendto(data, client[0]), "udp-down", datagrams=True)

    def from_client():
        while True:
            data, address = front.recvfrom(65536)
            client[0] = address
            upward.put(data)

    def from_server():
        while True:
            data, _ = back.recvfrom(65536)
            downward.put(data)

    threading.Thread(target=from_client, name="udp-from-client", daemon=True).start()
    threading.Thread(target=from_server, name="udp-from-server", daemon=True).start()


def forward_tcp(host, port, up_host, up_port, delay):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(64)

    def pump(source, sink):
        def send(chunk):
            if chunk is None:
                sink.shutdown(socket.SHUT_WR)
                return False
            sink.sendall(chunk)
        delayed = Delayed(delay, send, "tcp-send")
        while True:
            try:
                chunk = source.recv(65536)
            except OSError:
                chunk = b""
            delayed.put(chunk or None)
            if not chunk:
                return

    def accept():
        while True:
            client, _ = listener.accept()
            server = socket.create_connection((up_host, up_port))
            for s in (client, server):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=pump, args=(client, server), name="tcp-up", daemon=True).start()
            threading.Thread(target=pump, args=(server, client), name="tcp-down", daemon=True).start()

    threading.Thread(target=accept, name="tcp-accept", daemon=True).start()


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] if ordered else None


def metrics(url):
    """nalcast's /metrics as {name: value}; {} when it cannot be read now."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            text = response.read().decode()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def reached(stats, start, goal):
    """Chromium's getStats figures since the start, and nalcast's metrics, at their goals."""
    wanted = {name: value for name, value in goal.items() if name not in ("metricsUrl", "metrics")}
    if not all(stats.get(name, 0) - start.get(name, 0) >= value for name, value in wanted.items()):
        return False
    if "metricsUrl" not in goal:
        return True
    now = metrics(goal["metricsUrl"])
    return all(now.get(name, 0) >= value for name, value in goal.get("metrics", {}).items())


def main() -> int:
    url, seconds, path = sys.argv[1], float(sys.argv[2]), json.loads(sys.argv[3])
    goal = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
    delay = path.get("delayMs", 30) / 1000
    for host, port, up_host, up_port in path.get("udp", []):
        forward_udp(host, port, up_host, up_port, path["forwardFrom"], delay)
    for host, port, up_host, up_port in path.get("tcp", []):
        forward_tcp(host, port, up_host, up_port, delay)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    # WebCodecs (the page over its WebSocket) needs a secure context, which plain http to an
    # address that is not loopback is not: this origin is taken for one.
    origin = "/".join(url.split("/")[:3])
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--mute-audio",
                 f"--unsafely-treat-insecure-origin-as-secure={origin}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": EARLY})
        driver.get(url)
        deadline = time.time() + 60
        viewer = driver.execute_script(READ)
        while viewer.get("painted", 0) < 30 and time.time() < deadline:
            time.sleep(0.1)
            viewer = driver.execute_script(READ)
        if viewer.get("painted", 0) < 30:
            print(json.dumps({"error": "fewer than 30 frames painted in 60 s", "viewer": viewer}))
            return 1
        start_stats = driver.execute_async_script(STATS)
        window_start = driver.execute_script("window.nalcastPaints = []; return performance.now();")
        began = time.time()
        stats = start_stats
        while time.time() - began < seconds + 60:
            time.sleep(0.5)
            stats = driver.execute_async_script(STATS)
            if time.time() - began >= seconds and reached(stats, start_stats, goal):
                break
        paints, viewer, window_end = driver.execute_script(
            "return [window.nalcastPaints, Object.assign({}, window.nalcastViewer), performance.now()];")
    finally:
        driver.quit()
    times = [t for t, _ in paints]
    latencies = [v for _, v in paints if v is not None]
    # Over the whole window: from its start to the first paint and from the last to its end too.
    edges = [window_start] + times + [window_end]
    gaps = [b - a for a, b in zip(edges, edges[1:])]
    still = sum(1 for s in range(int((window_end - window_start) / 1000)) if not any(
        window_start + s * 1000 <= t < window_start + (s + 1) * 1000 for t in times))
    print(json.dumps({
        "painted": len(paints), "seconds": (window_end - window_start) / 1000,
        "maxGapMs": max(gaps), "gapsOver200Ms": [round(g) for g in gaps if g > 200],
        "stillSeconds": still,
        "latencyMs": {"median": percentile(latencies, 0.5), "p99": percentile(latencies, 0.99), "all": latencies},
        "stats": {name: stats[name] if name == "roundTripTime" else stats.get(name, 0) - start_stats.get(name, 0) for name in stats},
        "transport": viewer.get("transport"), "problem": viewer.get("problem"),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
