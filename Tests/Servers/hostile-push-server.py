#!/usr/bin/python3
"""A media server that answers a push badly: the peer of the tests that check that nalcast's
--forward gives up within its timeouts and never hangs or crashes.

    hostile-push-server.py MODE PORT [SEED]

Listens on 127.0.0.1:PORT and serves every connection in a thread, logging one line per
event to stdout ("connection N", "closed N after B bytes"). MODE:

  rtmp-garbage    an RTMP version byte (3), then random bytes for as long as the client reads
  rtmp-stall      the RTMP handshake done right (S0, S1, S2 echoing C1), then nothing: the
                  client's connect command is read and never answered
  rtsp-garbage    every request answered with random bytes (no status line)
  rtsp-stall      OPTIONS answered 200 with the methods of a record server, then nothing:
                  the ANNOUNCE is read and never answered
  rtsp-endless    each request answered "RTSP/1.0 200 OK" with its CSeq and a Content-Length
                  of 100 MB, then random bytes of that body, slowly, for ever

Random bytes come from a generator seeded with SEED (default 1): the same garbage every run.
"""
import random
import socket
import sys
import threading
import time

mode, port = sys.argv[1], int(sys.argv[2])
seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1
lock = threading.Lock()
count = 0


def say(text):
    with lock:
        print(text, flush=True)


def read_request(conn, pending):
    """One RTSP request head (and its body, by Content-Length); None when the peer closed."""
    while b"\r\n\r\n" not in pending[0]:
        data = conn.recv(65536)
        if not data:
            return None
        pending[0] += data
    head, rest = pending[0].split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    while len(rest) < length:
        data = conn.recv(65536)
        if not data:
            return None
        rest += data
    pending[0] = rest[length:]
    return head.decode("latin-1")


def cseq(head):
    for line in head.split("\r\n"):
        if line.lower().startswith("cseq:"):
            return line.split(":", 1)[1].strip()
    return "0"


def drain(conn):
    """Reads and drops whatever comes until the peer closes (a server that never answers)."""
    while conn.recv(65536):
        pass


def serve(conn, n, rng):
    if mode == "rtmp-garbage":
        conn.sendall(b"\x03")
        while True:
            conn.sendall(rng.randbytes(4096))
            time.sleep(0.01)
    elif mode == "rtmp-stall":
        c0c1 = b""
        while len(c0c1) < 1537:
            data = conn.recv(1537 - len(c0c1))
            if not data:
                return
            c0c1 += data
        conn.sendall(b"\x03" + bytes(8) + rng.randbytes(1528) + c0c1[1:])
        say(f"handshake {n}")
        drain(conn)
    elif mode == "rtsp-garbage":
        pending = [b""]
        while read_request(conn, pending) is not None:
            conn.sendall(rng.randbytes(2048))
    elif mode == "rtsp-stall":
        pending = [b""]
        head = read_request(conn, pending)
        if head is None:
            return
        say(f"request {n}: {head.splitlines()[0]}")
        conn.sendall(f"RTSP/1.0 200 OK\r\nCSeq: {cseq(head)}\r\nPublic: OPTIONS, ANNOUNCE, SETUP, RECORD, TEARDOWN\r\n\r\n".encode())
        head = read_request(conn, pending)
        if head is not None:
            say(f"request {n}: {head.splitlines()[0]}")
        drain(conn)
    elif mode == "rtsp-endless":
        pending = [b""]
        head = read_request(conn, pending)
        if head is None:
            return
        conn.sendall(f"RTSP/1.0 200 OK\r\nCSeq: {cseq(head)}\r\nContent-Length: 100000000\r\n\r\n".encode())
        while True:
            conn.sendall(rng.randbytes(1024))
            time.sleep(0.05)
    else:
        raise SystemExit(f"unknown mode {mode}")


def connection(conn, n):
    rng = random.Random(seed * 1000 + n)
    try:
        serve(conn, n, rng)
    except OSError as error:
        say(f"error {n}: {error}")
    finally:
        conn.close()
        say(f"closed {n}")


listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", port))
listener.listen(16)
say(f"listening {port} {mode}")
while True:
    conn, _ = listener.accept()
    count += 1
    say(f"connection {count}")
    threading.Thread(target=connection, args=(conn, count), daemon=True).start()
