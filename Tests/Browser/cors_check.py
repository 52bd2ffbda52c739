"""Opens PAGE_URL in headless Chromium and prints window.result once the page sets it (up to
30 s), as JSON; {"error": ...} with exit 1 when it never does. For Tests/Browser/whep_cors.html.

    cors_check.py PAGE_URL
"""

import json
import sys
import time

from headless import chromium


def main() -> int:
    driver = chromium()
    try:
        driver.get(sys.argv[1])
        deadline = time.time() + 30
        result = None
        while result is None and time.time() < deadline:
            time.sleep(0.1)
            result = driver.execute_script("return window.result || null;")
    finally:
        driver.quit()
    print(json.dumps(result if result is not None else {"error": "no result in 30 s"}))
    return 0 if result is not None else 1


if __name__ == "__main__":
    sys.exit(main())
