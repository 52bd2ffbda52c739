"""N WebSocket viewers of nalcast's /ws in one cheap process, for the web benchmark.

    ws_readers.py PORT N SECONDS [--tls]

Opens N connections to 127.0.0.1:PORT, asks each for the WebSocket upgrade of /ws (as
Tests/Browser/ws_client.py does, and as a browser would, less the Origin a page sends),
then reads and discards with one selector for SECONDS (from the last upgrade), and prints
one line per viewer: "BYTES EOF" (bytes after the upgrade; EOF 1 if the server closed it).
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


def main() -> int:
    port, n, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    try:
        viewers = [upgrade(port) for _ in range(n)]
    except OSError as e:
        print(f"ws_readers: {e}", file=sys.stderr)
        return 69
    sel = selectors.DefaultSelector()
    got = [len(first) for _, first in viewers]
    eof = [0] * n
    for i, (s, _) in enumerate(viewers):
        sel.register(s, selectors.EVENT_READ, i)
    end = time.monotonic() + seconds
    while True:
        left = end - time.monotonic()
        if left <= 0 or all(eof):
            break
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
                continue
            got[i] += len(data)
    for i in range(n):
        print(got[i], eof[i])
    return 0


if __name__ == "__main__":
    sys.exit(main())
