"""N WebSocket viewers of nalcast's /ws in one cheap process, for the web benchmark.

    ws_readers.py PORT N SECONDS [--tls]

Opens N connections to 127.0.0.1:PORT, asks each for the WebSocket upgrade of /ws (as
Tests/Browser/ws_client.py does, and as a browser would, less the Origin a page sends),
then reads and discards with one selector for SECONDS (from the last upgrade), and prints
one line per viewer: "BYTES EOF MS" (EOF 1 if the server closed it; MS the milliseconds BYTES
were counted over). BYTES counts from the moment
every viewer has its first picture: the producer gives joining readers an IDR at most once per
--idr-min-interval (250 ms), and over TLS the upgrades take a handshake each, so the last
viewers may wait for the next IDR while the first already get pictures; counted from their
upgrades, the first would have up to 250 ms more.
With --tls, each connection is TLS first (the certificate not checked: the producer's
--tls self-signed). Exit 0, or 69 when a connection or an upgrade fails. The WebSocket frames are not parsed:
like c/readers.c for the TCP readers, it must cost the machine as little as it can while the
producer's CPU is measured.
"""

import selectors
import socket
import ssl
import sys
import time

KEY = b"dGhlIHNhbXBsZSBub25jZQ=="
TLS = "--tls" in sys.argv[4:]


def upgrade(port: int) -> tuple:
    """A viewer of /ws on loopback: its socket (non-blocking) and the bytes that came behind the 101."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    if TLS:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        s = context.wrap_socket(s)
    s.sendall(b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
              b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\n\r\n" % (port, KEY))
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = s.recv(1 << 16)
        if not data:
            raise OSError("closed during the upgrade")
        buf += data
    head, rest = buf.split(b"\r\n\r\n", 1)
    status = head.split(b"\r\n")[0].decode(errors="replace")
    if " 101 " not in status + " ":
        raise OSError(f"upgrade answered {status!r}")
    s.setblocking(False)
    return s, rest


def read(sel, until: float, got: list, eof: list, count: bool, stop=lambda: False) -> None:
    """Reads every viewer until `until` (or `stop()`), adding to `got` when `count`, or marking
    `got[i]` 1 for a viewer that got something when not."""
    while not all(eof) and not stop():
        left = until - time.monotonic()
        if left <= 0:
            return
        for key, _ in sel.select(timeout=left):
            i = key.data
            try:
                data = key.fileobj.recv(1 << 18)
                # TLS: what OpenSSL already decrypted wakes no selector.
                while TLS and key.fileobj.pending():
                    data += key.fileobj.recv(1 << 18)
            except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                continue
            except OSError:
                data = b""
            if not data:
                eof[i] = 1
                sel.unregister(key.fileobj)
            elif count:
                got[i] += len(data)
            else:
                got[i] = 1


def main() -> int:
    port, n, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    try:
        viewers = [upgrade(port) for _ in range(n)]
    except OSError as e:
        print(f"ws_readers: {e}", file=sys.stderr)
        return 69
    end = time.monotonic() + seconds
    sel = selectors.DefaultSelector()
    for i, (s, _) in enumerate(viewers):
        sel.register(s, selectors.EVENT_READ, i)
    got, eof = [0] * n, [0] * n
    # Not counted: until every viewer has its first picture (the last ones to join may wait
    # for the producer's next IDR, --idr-min-interval after the first's), then what is left
    # in the sockets.
    seen = [1 if first else 0 for _, first in viewers]
    read(sel, end, seen, eof, count=False, stop=lambda: all(seen))
    read(sel, time.monotonic() + 0.05, [0] * n, eof, count=False)
    counted = time.monotonic()
    read(sel, end, got, eof, count=True)
    ms = round(1000 * (time.monotonic() - counted))
    for i in range(n):
        print(got[i], eof[i], ms)
    return 0


if __name__ == "__main__":
    sys.exit(main())
