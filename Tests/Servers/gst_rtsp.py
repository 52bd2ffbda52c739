"""What nalcast's GStreamer RTSP servers share (the tests' camera stand-in and record server,
and the relay benchmark's source): one line per event on stderr, and the serving loop that
listens, says where, and ends on SIGTERM or SIGINT. Imported by scripts run with Debian's
/usr/bin/python3 (python3-gi, gir1.2-gst-rtsp-server-1.0)."""
import signal
import sys

from gi.repository import GLib


def log(line):
    print(line, file=sys.stderr, flush=True)


def serve(server, port, path):
    """Attaches `server` (already set up on 127.0.0.1:PORT with PATH mounted) and runs until
    SIGTERM or SIGINT. Returns the exit code: 0, or 69 when the port cannot be had."""
    if server.attach(None) == 0:
        log("error: cannot listen on 127.0.0.1:%s" % port)
        return 69
    loop = GLib.MainLoop()
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGTERM, loop.quit)
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGINT, loop.quit)
    log("listening on rtsp://127.0.0.1:%s%s" % (port, path))
    loop.run()
    log("stopped")
    return 0
