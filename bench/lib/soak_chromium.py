"""nalcast's page (produce --web) open in headless Chromium for the soak, until SIGTERM.

    soak_chromium.py PAGE_URL

Run by the venv python of scripts/setup (selenium), with Debian's chromium and
chromedriver. Opens the page, reads window.nalcastViewer every second; on SIGTERM reads it
once more, navigates to about:blank (the page's WebSocket closes as a browser tab's does,
1001), quits the browser and prints one JSON line: the page's figures (painted, messages,
connects, errors, problem, width, height, fps), `first_paint_s` (page load to 1 painted
frame), and `error` when the browser or the page failed. Exit 0.
"""

import json
import signal
import sys
import time

from pathlib import Path

# The browser started as the tests' scripts start it (Tests/Browser/headless.py).
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "Tests" / "Browser"))
from headless import chromium  # noqa: E402
READ = "return Object.assign({}, window.nalcastViewer || {});"
leave = False


def on_term(*_):
    global leave
    leave = True


def main() -> int:
    signal.signal(signal.SIGTERM, on_term)
    url = sys.argv[1]
    out = {"error": None}
    driver = None
    try:
        driver = chromium("--mute-audio")
        t0 = time.monotonic()
        driver.get(url)
        viewer = {}
        while not leave:
            viewer = driver.execute_script(READ)
            if "first_paint_s" not in out and viewer.get("painted", 0) > 0:
                out["first_paint_s"] = round(time.monotonic() - t0, 2)
            time.sleep(1)
        viewer = driver.execute_script(READ)
        driver.get("about:blank")
        out.update({k: viewer.get(k) for k in ("painted", "messages", "connects", "errors", "problem", "width",
                                                "height", "fps", "latencyMs")})
    except Exception as e:  # the browser died, or the page did: say which and how
        out["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    finally:
        if driver is not None:
            try:
                driver.quit()
            except Exception:
                pass
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
