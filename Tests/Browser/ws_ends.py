"""How nalcast ends connections, seen from a raw client: every end must be an end of stream
(EOF) after the last byte, never a reset, even when the client had sent bytes the server did
not read (a server that closes with unread input, or that input then reaches, sends a TCP
reset, and a client that gets one drops what it had not read: a browser reports 1006).

    ws_ends.py WEB_PORT TCP_PORT PRODUCER_PID

Against `produce --web tcp://127.0.0.1:WEB_PORT --listen tcp://127.0.0.1:TCP_PORT
--max-readers 2`, in this order, prints one JSON object, one entry per end, each with what
the client saw: `eof` (the end of stream came), `reset` (a reset came: ECONNRESET, or
SO_ERROR set afterwards) and what the end said:

  refusedViewer  a third viewer past --max-readers: its status line (503), then 4 kB of
                 bytes it sends after the answer;
  refusedReader  a TCP reader past --max-readers, which sends 4 kB at once;
  protocolError  the first viewer sends an unmasked ping: the close code it gets (1002),
                 then it sends 4 kB more;
  streamEnd      the producer is sent SIGINT: the second viewer's close code (1001), then
                 it answers with its own close frame and 4 kB more.
"""

import json
import os
import signal
import socket
import struct
import sys
import time

WEB, TCP, PRODUCER = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
JUNK = bytes(range(256)) * 16


def upgrade():
    sock = socket.create_connection(("127.0.0.1", WEB), timeout=20)
    sock.sendall(
        b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
        b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n" % WEB)
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = sock.recv(1 << 16)
        if not data:
            raise EOFError("no answer to the upgrade")
        buf += data
    head, rest = buf.split(b"\r\n\r\n", 1)
    return sock, head.split(b"\r\n")[0].decode(), rest


def close_code(sock, buf):
    """Reads frames until a close frame: its code."""
    while True:
        while len(buf) < 2 or len(buf) < frame_end(buf):
            data = sock.recv(1 << 16)
            if not data:
                raise EOFError("no close frame")
            buf += data
        end = frame_end(buf)
        if buf[0] & 0x0F == 0x8:
            return struct.unpack(">H", buf[2:4])[0]
        buf = buf[end:]


def frame_end(buf):
    if len(buf) < 2:
        return 2
    length, at = buf[1] & 0x7F, 2
    if length == 126:
        if len(buf) < 4:
            return 4
        length, at = struct.unpack(">H", buf[2:4])[0], 4
    elif length == 127:
        if len(buf) < 10:
            return 10
        length, at = struct.unpack(">Q", buf[2:10])[0], 10
    return at + length


def masked(opcode, payload):
    mask = os.urandom(4)
    return bytes([0x80 | opcode, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def ending(sock):
    """Reads to the end: whether it was an end of stream, and whether a reset came."""
    eof = reset = False
    try:
        while sock.recv(1 << 16):
            pass
        eof = True
    except ConnectionResetError:
        reset = True
    # A reset that the bytes sent last brought back comes at once on loopback.
    time.sleep(0.2)
    error = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    sock.close()
    return {"eof": eof, "reset": reset or error != 0, "error": os.strerror(error) if error else None}


def main():
    result = {}
    first, status1, rest1 = upgrade()
    second, status2, rest2 = upgrade()
    assert status1.startswith("HTTP/1.1 101") and status2.startswith("HTTP/1.1 101"), (status1, status2)

    third, status, _ = upgrade()
    third.sendall(JUNK)
    result["refusedViewer"] = dict(status=status, **ending(third))

    reader = socket.create_connection(("127.0.0.1", TCP), timeout=20)
    reader.sendall(JUNK)
    result["refusedReader"] = ending(reader)

    first.sendall(bytes([0x89, 0x00]))  # a ping without a mask
    code = close_code(first, rest1)
    first.sendall(JUNK)
    result["protocolError"] = dict(code=code, **ending(first))

    os.kill(PRODUCER, signal.SIGINT)
    code = close_code(second, rest2)
    second.sendall(masked(0x8, struct.pack(">H", code)) + JUNK)
    result["streamEnd"] = dict(code=code, **ending(second))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
