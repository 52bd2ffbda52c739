"""A WebSocket client by hand, for what a browser will not do: pings, a protocol error.

    ws_client.py PORT

Against produce --web on 127.0.0.1:PORT, prints one JSON object:
  status      the first viewer's status line (101 expected);
  first       version, flags of its first message (1, 3: a keyframe with a capture time);
  pong        the payload of the pong to its ping, as text;
  broken      the close code the second viewer gets for an unmasked frame (1002);
  after       binary messages the first viewer got after the second was closed and 20
              more sent random bytes (seeded) and hung up;
  closed      the code echoed to the first viewer's close (1000), and whether the server
              then closed the connection (eof).
"""

import json
import os
import random
import socket
import struct
import sys

PORT = int(sys.argv[1])


class Viewer:
    def __init__(self):
        self.sock = socket.create_connection(("127.0.0.1", PORT), timeout=10)
        self.sock.sendall(
            b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
            b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n" % PORT)
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            self.more()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        self.status = head.split(b"\r\n")[0].decode()

    def more(self):
        data = self.sock.recv(1 << 16)
        if not data:
            raise EOFError
        self.buf += data

    def need(self, n):
        while len(self.buf) < n:
            self.more()

    def frame(self):
        self.need(2)
        first, length = self.buf[0], self.buf[1] & 0x7F
        at = 2
        if length == 126:
            self.need(4)
            length, at = struct.unpack(">H", self.buf[2:4])[0], 4
        elif length == 127:
            self.need(10)
            length, at = struct.unpack(">Q", self.buf[2:10])[0], 10
        self.need(at + length)
        payload, self.buf = self.buf[at:at + length], self.buf[at + length:]
        return first & 0x0F, payload

    def until(self, opcode):
        binary = 0
        while True:
            op, payload = self.frame()
            if op == opcode:
                return payload, binary
            binary += op == 2

    def send(self, opcode, payload):
        mask = os.urandom(4)
        body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(bytes([0x80 | opcode, 0x80 | len(payload)]) + mask + body)

    def eof(self):
        try:
            while True:
                self.more()
        except EOFError:
            return True
        except OSError:
            return False


def main():
    result = {}
    a = Viewer()
    result["status"] = a.status
    op, payload = a.frame()
    result["first"] = [op, payload[0], payload[1]]
    a.send(0x9, b"are you there")
    pong, _ = a.until(0xA)
    result["pong"] = pong.decode()
    b = Viewer()
    b.sock.sendall(bytes([0x89, 0x00]))  # a ping without a mask
    close, _ = b.until(0x8)
    result["broken"] = struct.unpack(">H", close[:2])[0]
    b.eof()
    rng = random.Random(14)
    for _ in range(20):
        c = Viewer()
        c.sock.sendall(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))))
        c.sock.close()
    after = 0
    while after < 5:
        op, _ = a.frame()
        after += op == 2
    result["after"] = after
    a.send(0x8, struct.pack(">H", 1000))
    close, _ = a.until(0x8)
    result["closed"] = [struct.unpack(">H", close[:2])[0], a.eof()]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
