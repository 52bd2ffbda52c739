"""Serves a directory on 127.0.0.1 for the browser playback test, with byte ranges.

    serve.py DIR

Prints "port N" once listening (on a port the kernel picks), then serves until SIGTERM. Python's http.server answers every request with the whole file; a browser
seeks in a video through Range requests ("bytes=START-" or "bytes=START-END"), as it would
from any real web server, so this answers those with 206 and the part asked for.
"""

import http.server
import os
import re
import signal
import sys


class RangeHandler(http.server.SimpleHTTPRequestHandler):
    def send_head(self):
        match = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        path = self.translate_path(self.path)
        if not match or not os.path.isfile(path):
            return super().send_head()
        size = os.path.getsize(path)
        start = int(match.group(1))
        end = min(int(match.group(2)), size - 1) if match.group(2) else size - 1
        if start >= size or end < start:
            self.send_error(416, "Requested Range Not Satisfiable")
            return None
        f = open(path, "rb")
        f.seek(start)
        self.send_response(206)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(end - start + 1))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        self.remaining = end - start + 1
        return f

    def copyfile(self, source, outputfile):
        remaining = getattr(self, "remaining", None)
        if remaining is None:
            return super().copyfile(source, outputfile)
        while remaining > 0:
            chunk = source.read(min(remaining, 64 * 1024))
            if not chunk:
                break
            outputfile.write(chunk)
            remaining -= len(chunk)

    def end_headers(self):
        # Whole-file answers say that ranges are welcome, as web servers do.
        if not self.headers.get("Range"):
            self.send_header("Accept-Ranges", "bytes")
        super().end_headers()

    def log_message(self, format, *args):
        pass


def main() -> None:
    # The test stops it with SIGTERM: make sure that ends it, whatever mask or disposition
    # the process that started it passed on.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    directory = sys.argv[1]
    handler = lambda *a, **k: RangeHandler(*a, directory=directory, **k)
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        print(f"port {server.server_address[1]}", flush=True)
        server.serve_forever()


if __name__ == "__main__":
    main()
