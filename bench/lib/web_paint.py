"""Capture -> paint latency of every frame nalcast's own page (produce --web) paints in
headless Chromium, for the web benchmark. Run by the venv python that has selenium.

    web_paint.py PAGE_URL WARM_FRAMES SECONDS

Opens the page, waits until it has painted WARM_FRAMES frames, then records the page's
capture -> paint latency of each frame painted in the next SECONDS and prints one JSON
object: {"latency_ms": [...], "painted": N, "messages": N, "errors": N, "fps": F,
"width": W, "height": H, "transport": "websocket"|"webrtc"}, or {"error": ...} with exit 1.
With PAGE_URL ending in ?transport=webrtc the page plays over WebRTC (WHEP), and its
latency is the frame's RTP timestamp (the capture clock) against Date.now().

The page keeps only the last value (window.nalcastViewer.latencyMs = Date.now() - the
capture time in the message's header, set once per painted frame); a setter put on that
property records every assignment, so no frame is missed between two polls. Both times
come from this machine's CLOCK_REALTIME (nalcast's capture time, Chromium's Date.now()).
"""

import json
import sys
import time

from pathlib import Path

# The browser started as the tests' scripts start it (Tests/Browser/headless.py).
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "Tests" / "Browser"))
from headless import chromium  # noqa: E402

READ = "return Object.assign({}, window.nalcastViewer || {});"
HOOK = """
const viewer = window.nalcastViewer;
if (!viewer) return false;
let last = viewer.latencyMs;
window.nalcastPaints = [];
Object.defineProperty(viewer, 'latencyMs', {
  configurable: true, enumerable: true,
  get() { return last; },
  set(value) { last = value; window.nalcastPaints.push(value); },
});
return true;
"""


def main() -> int:
    url, warm, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    driver = chromium("--mute-audio")
    try:
        driver.get(url)
        if not driver.execute_script(HOOK):
            print(json.dumps({"error": "the page has no window.nalcastViewer"}))
            return 1
        deadline = time.time() + 60
        viewer = driver.execute_script(READ)
        while viewer.get("painted", 0) < warm and time.time() < deadline and not viewer.get("problem"):
            time.sleep(0.1)
            viewer = driver.execute_script(READ)
        if viewer.get("painted", 0) < warm:
            print(json.dumps({"error": f"fewer than {warm} frames painted in 60 s", "viewer": viewer}))
            return 1
        start = driver.execute_script("window.nalcastPaints = []; return Object.assign({}, window.nalcastViewer);")
        time.sleep(seconds)
        values, end = driver.execute_script(
            "return [window.nalcastPaints, Object.assign({}, window.nalcastViewer)];")
    finally:
        driver.quit()
    print(json.dumps({"latency_ms": values, "painted": end["painted"] - start["painted"],
                      "messages": end["messages"] - start["messages"], "errors": end["errors"] - start["errors"],
                      "fps": end.get("fps"), "width": end.get("width"), "height": end.get("height"),
                      "problem": end.get("problem"), "transport": end.get("transport")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
