"""One raw WebSocket viewer of nalcast's /ws for the soak, until SIGTERM, then a clean leave.

    soak_ws.py PORT

Upgrades /ws on 127.0.0.1:PORT (as a browser would), reads every frame (binary messages
counted, a ping answered with a pong) until SIGTERM; then sends a masked close (1000),
reads on until the server's close and the end of the connection (at most 5 s), and prints
one JSON line: messages, bytes, keyframes (messages whose flags say keyframe), the close
code the server sent (`close`), who closed first (`closed_by`: "viewer" after SIGTERM, or
"server" when the server ended it first, with its code), `clean` (the server's close came
and then the end of the connection, no reset) and `error` when something broke. Exit 0.
"""

import json
import os
import selectors
import signal
import struct
import sys
import time

from ws_readers import upgrade

leave = False


def on_term(*_):
    global leave
    leave = True


def masked(opcode: int, payload: bytes) -> bytes:
    mask = os.urandom(4)
    body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return bytes([0x80 | opcode, 0x80 | len(payload)]) + mask + body


class Frames:
    """Splits the byte stream into WebSocket frames (server frames are not masked)."""

    def __init__(self):
        self.buf = bytearray()

    def feed(self, data: bytes):
        self.buf += data
        while True:
            if len(self.buf) < 2:
                return
            op, n, at = self.buf[0] & 0x0F, self.buf[1] & 0x7F, 2
            if n == 126:
                if len(self.buf) < 4:
                    return
                n, at = struct.unpack(">H", self.buf[2:4])[0], 4
            elif n == 127:
                if len(self.buf) < 10:
                    return
                n, at = struct.unpack(">Q", self.buf[2:10])[0], 10
            if len(self.buf) < at + n:
                return
            payload = bytes(self.buf[at:at + n])
            del self.buf[:at + n]
            yield op, payload


def main() -> int:
    port = int(sys.argv[1])
    signal.signal(signal.SIGTERM, on_term)
    r = {"messages": 0, "bytes": 0, "keyframes": 0, "close": None, "closed_by": None, "clean": False, "error": None}
    try:
        s, rest = upgrade(port)
        frames, sel = Frames(), selectors.DefaultSelector()
        sel.register(s, selectors.EVENT_READ)
        pending, deadline, sent_close = rest, None, False
        while True:
            if leave and not sent_close:
                s.setblocking(True)
                s.sendall(masked(0x8, struct.pack(">H", 1000)))
                s.setblocking(False)
                sent_close, deadline = True, time.monotonic() + 5
                r["closed_by"] = r["closed_by"] or "viewer"
            if deadline and time.monotonic() > deadline:
                r["error"] = "no close from the server in 5 s"
                break
            data = pending
            pending = b""
            if not data:
                if not sel.select(timeout=0.2):
                    continue
                try:
                    data = s.recv(1 << 18)
                except BlockingIOError:
                    continue
                if not data:
                    r["clean"] = r["close"] is not None
                    if r["close"] is None:
                        r["error"] = "the connection ended without a close frame"
                    break
            for op, payload in frames.feed(data):
                if op == 0x2:
                    r["messages"] += 1
                    r["bytes"] += len(payload)
                    r["keyframes"] += bool(len(payload) > 1 and payload[1] & 1)
                elif op == 0x9:
                    s.setblocking(True)
                    s.sendall(masked(0xA, payload))
                    s.setblocking(False)
                elif op == 0x8:
                    r["close"] = struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else 1005
                    if not sent_close:
                        r["closed_by"] = "server"
                        s.setblocking(True)
                        s.sendall(masked(0x8, payload[:2]))
                        s.setblocking(False)
                        sent_close, deadline = True, time.monotonic() + 5
    except ConnectionResetError:
        r["error"] = "reset by the server"
    except OSError as e:
        r["error"] = str(e)
    print(json.dumps(r), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
