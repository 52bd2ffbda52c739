"""Opens nalcast's own page (produce --web) in headless Chromium and prints what it saw, as JSON.

    web_check.py PAGE_URL POINTS_JSON [WAIT_FOR_JSON]
    web_check.py PAGE_URL --problem

Waits (up to 60 s) until the page has painted 30 frames, then reads the colours at
POINTS_JSON (a list of [x, y] in the canvas' own pixels) from its canvas and prints
window.nalcastViewer with "pixels" and "href" (the address bar then) added. With
WAIT_FOR_JSON (an object of figures, e.g. {"connects": 2, "width": 320}), it then goes on
reading the page's figures every 100 ms and prints them once each figure named is at least
(numbers) or equal to (others) the value given, and each figure in its "exactly" object
equal to the value there ({"exactly": {"width": 320}}: a picture that became smaller): what
a test that restarts the producer waits for ({"state": "ended"}: until the stream ended,
the close that ended it in "closes"). With --problem it waits (up to 20 s) only for the
page to state a problem (window.nalcastViewer.problem), and prints the figures: what a page
that cannot decode must do. It prints {"error": ..., "viewer": ...} with exit 1 when the
page never gets there. PAGE_URL @FILE: the browser starts first (it says "browser started"
on stderr), then the page is the URL written to FILE (up to 60 s): for a stream that ends
soon after it begins, so that the browser's own start, slow on a loaded machine, does not
eat into it. Debian's chromium and chromium-driver; selenium from the venv scripts/setup
makes, given both paths.
"""

import json
import os
import sys
import time

from headless import chromium


READ = "return Object.assign({}, window.nalcastViewer || {});"
PIXELS = """
const canvas = document.getElementById('picture');
const context = canvas.getContext('2d');
return arguments[0].map(([x, y]) => Array.from(context.getImageData(x, y, 1, 1).data.slice(0, 3)));
"""


def wait(driver, reached, seconds):
    deadline = time.time() + seconds
    viewer = driver.execute_script(READ)
    while time.time() < deadline:
        if reached(viewer):
            return viewer, True
        time.sleep(0.1)
        viewer = driver.execute_script(READ)
    return viewer, reached(viewer)


def meets(viewer, goal):
    for name, value in goal.items():
        if name == "exactly":
            if any(viewer.get(key) != wanted for key, wanted in value.items()):
                return False
            continue
        seen = viewer.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if not isinstance(seen, (int, float)) or seen < value:
                return False
        elif seen != value:
            return False
    return True


def page_url(argument):
    """The URL given, or the one a test writes to the file named after '@' once it knows it."""
    if not argument.startswith("@"):
        return argument
    path, deadline = argument[1:], time.time() + 60
    while time.time() < deadline:
        if os.path.exists(path):
            with open(path) as f:
                url = f.read().strip()
            if url:
                return url
        time.sleep(0.05)
    raise SystemExit(json.dumps({"error": f"no URL in {path} in 60 s"}))


def main() -> int:
    url, problem = sys.argv[1], sys.argv[2] == "--problem"
    points = [] if problem else json.loads(sys.argv[2])
    goal = json.loads(sys.argv[3]) if len(sys.argv) > 3 else None
    # The TLS proxy test serves the page with a certificate of its own making.
    driver = chromium("--mute-audio", "--ignore-certificate-errors")
    try:
        print("browser started", file=sys.stderr, flush=True)
        driver.get(page_url(url))
        if problem:
            viewer, ok = wait(driver, lambda v: v.get("problem") is not None, 20)
            print(json.dumps(viewer if ok else {"error": "no problem stated in 20 s", "viewer": viewer}))
            return 0 if ok else 1
        viewer, ok = wait(driver, lambda v: v.get("painted", 0) >= 30, 60)
        if not ok:
            print(json.dumps({"error": "fewer than 30 frames painted in 60 s", "viewer": viewer}))
            return 1
        viewer["pixels"] = driver.execute_script(PIXELS, points)
        viewer["href"] = driver.current_url
        if goal is not None:
            # Tell the caller the first part is done (it may now restart the producer).
            print(json.dumps(viewer), flush=True)
            viewer, ok = wait(driver, lambda v: meets(v, goal), 60)
            if not ok:
                print(json.dumps({"error": f"never reached {goal}", "viewer": viewer}))
                return 1
            viewer["pixels"] = driver.execute_script(PIXELS, points)
    finally:
        driver.quit()
    print(json.dumps(viewer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
