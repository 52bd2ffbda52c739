"""A viewer with a good token plays while a loop of bad tokens knocks on the same server.

    token_brute.py PORT GOOD_TOKEN ATTEMPTS [--tls]

Against produce --web on 127.0.0.1:PORT (https with --tls, the certificate not checked),
every connection from 127.0.0.2 (one host, whose failures nothing else shares), prints one
JSON object:
  viewer      the good viewer's status line (101 expected);
  waits       for each bad attempt (GET /ws?token=bad-N, one after another), the seconds
              from sending it to its status line;
  statuses    the status line of each bad attempt (401 expected);
  during      binary messages the good viewer got while the bad attempts ran;
  late        the status line of a second good viewer opened after the bad attempts (101).
"""

import json
import socket
import ssl
import sys
import threading
import time

PORT = int(sys.argv[1])
GOOD = sys.argv[2]
ATTEMPTS = int(sys.argv[3])
TLS = "--tls" in sys.argv[4:]


def connect():
    sock = socket.create_connection(("127.0.0.1", PORT), timeout=30, source_address=("127.0.0.2", 0))
    if TLS:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        sock = context.wrap_socket(sock)
    return sock


def upgrade(token):
    sock = connect()
    sock.sendall(
        b"GET /ws?token=%s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
        b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n" % (token.encode(), PORT))
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = sock.recv(1 << 16)
        if not data:
            return sock, "(closed)", b""
        buf += data
    head, rest = buf.split(b"\r\n\r\n", 1)
    return sock, head.split(b"\r\n")[0].decode(), rest


class Counter(threading.Thread):
    """Reads the good viewer's frames and counts the binary messages."""

    def __init__(self, sock, rest):
        super().__init__(daemon=True)
        self.sock, self.buf, self.messages, self.stop = sock, rest, 0, False

    def need(self, n):
        while len(self.buf) < n:
            data = self.sock.recv(1 << 16)
            if not data:
                raise EOFError
            self.buf += data

    def run(self):
        try:
            while not self.stop:
                self.need(2)
                op, length, at = self.buf[0] & 0x0F, self.buf[1] & 0x7F, 2
                if length == 126:
                    self.need(4)
                    length, at = int.from_bytes(self.buf[2:4], "big"), 4
                elif length == 127:
                    self.need(10)
                    length, at = int.from_bytes(self.buf[2:10], "big"), 10
                self.need(at + length)
                self.buf = self.buf[at + length:]
                self.messages += op == 2
        except (EOFError, OSError):
            pass


def main():
    result = {}
    sock, status, rest = upgrade(GOOD)
    result["viewer"] = status
    counter = Counter(sock, rest)
    counter.start()
    # The viewer is playing before the loop starts.
    deadline = time.time() + 20
    while counter.messages < 5 and time.time() < deadline:
        time.sleep(0.05)
    before = counter.messages
    result["waits"], result["statuses"] = [], []
    for n in range(ATTEMPTS):
        started = time.time()
        bad, status, _ = upgrade("bad-%d-0123456789abcdef" % n)
        result["waits"].append(round(time.time() - started, 3))
        result["statuses"].append(status)
        bad.close()
    result["during"] = counter.messages - before
    late, status, _ = upgrade(GOOD)
    result["late"] = status
    late.close()
    counter.stop = True
    print(json.dumps(result))


if __name__ == "__main__":
    main()
