"""Plays a recording in headless Chromium and prints what the browser saw, as JSON.

    video_check.py PAGE_URL SEEK_SECONDS POINTS_JSON
    video_check.py PAGE_URL SEEK_SECONDS --frame-time

PAGE_URL is player.html (beside this file) served over HTTP with ?src=VIDEO; SEEK_SECONDS
is where to seek (negative: the middle); POINTS_JSON is a list of [x, y] whose colours to
read from the frame shown after the seek. Prints the object player.html's check() resolves
to (duration, width, height, seekTarget, currentTime, pixels, ended, endTime,
decodedFrames), or {"error": "..."} with exit 1. With --frame-time (a video from another
origin, whose pixels cannot be read) the object seekCheck() resolves to instead: where the
seek landed and the media time of the first frame presented after it. Debian's chromium and chromium-driver;
selenium from PyPI in the venv scripts/setup makes (~/.cache/nalcast-tools). Selenium is
given both paths, so it never looks for a browser or driver of its own.
"""

import json
import sys

from headless import chromium



def main() -> int:
    url, seek = sys.argv[1], float(sys.argv[2])
    frame_time = sys.argv[3] == "--frame-time"
    points = None if frame_time else json.loads(sys.argv[3])
    driver = chromium("--autoplay-policy=no-user-gesture-required", "--mute-audio")
    try:
        driver.set_script_timeout(90)
        driver.get(url)
        if frame_time:
            result = driver.execute_async_script(
                "const done = arguments[arguments.length - 1];"
                "seekCheck(arguments[0]).then(done, e => done({error: String(e)}));", seek)
        else:
            result = driver.execute_async_script(
                "const done = arguments[arguments.length - 1];"
                "check(arguments[0], arguments[1]).then(done, e => done({error: String(e)}));",
                seek, points)
    finally:
        driver.quit()
    print(json.dumps(result))
    return 1 if "error" in result else 0


if __name__ == "__main__":
    sys.exit(main())
