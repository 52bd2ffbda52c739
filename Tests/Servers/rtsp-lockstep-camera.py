#!/usr/bin/python3
"""A camera of the tests' own for nalcast's RTSP client: it sends RTP at moments it chooses,
so that what the client does with each packet can be checked by structure, not by time.

usage: rtsp-lockstep-camera.py PORT STREAM.h264 RELAY_PORT [--digest USER:PASS] [--no-inband-sets] [--session-timeout S]

Listens on 127.0.0.1:PORT and serves /cam (any other path is a 404): OPTIONS, DESCRIBE (an SDP with the stream's SPS
and PPS in sprop-parameter-sets), SETUP (RTP interleaved in the connection, or UDP to the
client's ports), PLAY, GET_PARAMETER, TEARDOWN. With --digest, every request needs Digest
authentication (MD5, qop=auth) with those credentials: a wrong answer is another 401.
STREAM.h264 is Annex-B with an AUD before each access unit; with --no-inband-sets its SPS
and PPS are left out of the RTP (they are only in the SDP, as some cameras do). The session
times out after S seconds (60 by default) without a request: a GET_PARAMETER or OPTIONS
after PLAY is said as "keep-alive METHOD".

After PLAY it connects to the relay nalcast serves on 127.0.0.1:RELAY_PORT as a reader,
then sends one access unit at a time (single NAL unit packets, FU-A for the big ones, the
marker bit on the last packet) and, before the first packet of the next one, waits until
the relay has handed the whole unit on (its last NAL unit has come through). A client that
waits for the next unit to end this one never gets there: after 20 s the camera says so
and stops. One line per event on stderr: "listening", "authenticated", "playing",
"lockstep: N units, each delivered before the next was sent", "first unit: SPS PPS IDR"
(the NAL unit types the relay gave of the first unit), "keep-alive GET_PARAMETER", "teardown".
"""
import base64
import hashlib
import os
import socket
import struct
import sys
import time


def log(line):
    print(line, file=sys.stderr, flush=True)


def nal_units(data):
    """The NAL units of an Annex-B stream, without their start codes."""
    out, i, start = [], 0, None
    while True:
        j = data.find(b"\x00\x00\x01", i)
        if j < 0:
            break
        if start is not None:
            end = j - 1 if j > 0 and data[j - 1] == 0 else j
            out.append(data[start:end])
        start = j + 3
        i = j + 3
    if start is not None:
        out.append(data[start:])
    return [n for n in out if n]


def access_units(nals):
    units, current = [], []
    for n in nals:
        if n[0] & 0x1F == 9:
            if current:
                units.append(current)
            current = []
        else:
            current.append(n)
    if current:
        units.append(current)
    return units


def payloads(nal, room=1200):
    if len(nal) <= room:
        return [nal]
    header, body, out = nal[0], nal[1:], []
    for at in range(0, len(body), room - 2):
        chunk = body[at:at + room - 2]
        fu = header & 0x1F | (0x80 if at == 0 else 0) | (0x40 if at + room - 2 >= len(body) else 0)
        out.append(bytes([header & 0xE0 | 28, fu]) + chunk)
    return out


class Session:
    def __init__(self, conn, args):
        self.conn, self.args = conn, args
        self.buffer = b""
        self.nonce = hashlib.md5(os.urandom(8)).hexdigest()
        self.udp = None

    def request(self):
        while b"\r\n\r\n" not in self.buffer:
            data = self.conn.recv(65536)
            if not data:
                return None
            self.buffer += data
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(self.buffer) < length:
            self.buffer += self.conn.recv(65536)
        self.buffer = self.buffer[length:]
        method, uri, _ = lines[0].split(" ", 2)
        return method, uri, headers

    def reply(self, cseq, status="200 OK", headers=(), body=b""):
        text = "RTSP/1.0 %s\r\nCSeq: %s\r\n" % (status, cseq)
        text += "".join("%s: %s\r\n" % h for h in headers)
        if body:
            text += "Content-Length: %d\r\n" % len(body)
        self.conn.sendall(text.encode() + b"\r\n" + body)

    def authorized(self, method, headers):
        if not self.args.digest:
            return True
        user, password = self.args.digest.split(":", 1)
        value = headers.get("authorization", "")
        if not value.startswith("Digest "):
            return False
        fields = {}
        for part in value[7:].split(","):
            k, _, v = part.strip().partition("=")
            fields[k.lower()] = v.strip('"')
        ha1 = hashlib.md5(("%s:%s:%s" % (user, "cam", password)).encode()).hexdigest()
        ha2 = hashlib.md5(("%s:%s" % (method, fields.get("uri", ""))).encode()).hexdigest()
        if fields.get("qop") != "auth" or fields.get("nonce") != self.nonce:
            return False
        expect = hashlib.md5(("%s:%s:%s:%s:auth:%s" % (ha1, self.nonce, fields.get("nc"), fields.get("cnonce"), ha2)).encode()).hexdigest()
        return fields.get("username") == user and fields.get("response") == expect

    def send_rtp(self, marker, seq, ts, payload):
        packet = struct.pack("!BBHII", 0x80, (0x80 if marker else 0) | 96, seq & 0xFFFF, ts & 0xFFFFFFFF, 0x1234) + payload
        if self.udp:
            self.udp[0].sendto(packet, self.udp[1])
        else:
            self.conn.sendall(struct.pack("!BBH", 0x24, 0, len(packet)) + packet)


def serve(session, units, sets):
    sdp = ("v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=lockstep\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=video 0 RTP/AVP 96\r\n"
           "a=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1;sprop-parameter-sets=%s\r\na=control:track1\r\n"
           % ",".join(base64.b64encode(s).decode() for s in sets)).encode()
    said_auth = False
    playing = False
    while True:
        r = session.request()
        if r is None:
            log("client gone")
            return
        method, uri, headers = r
        cseq = headers.get("cseq", "0")
        if not session.authorized(method, headers):
            session.reply(cseq, "401 Unauthorized", [("WWW-Authenticate", 'Digest realm="cam", nonce="%s", qop="auth"' % session.nonce)])
            continue
        if session.args.digest and not said_auth:
            said_auth = True
            log("authenticated")
        if method == "OPTIONS":
            session.reply(cseq, headers=[("Public", "OPTIONS, DESCRIBE, SETUP, PLAY, GET_PARAMETER, TEARDOWN")])
        elif method == "DESCRIBE" and not uri.rstrip("/").endswith("/cam"):
            session.reply(cseq, "404 Not Found")
        elif method == "DESCRIBE":
            session.reply(cseq, headers=[("Content-Type", "application/sdp"), ("Content-Base", "rtsp://127.0.0.1:%d/cam/" % session.args.port)], body=sdp)
        elif method == "SETUP":
            transport = headers.get("transport", "")
            if "client_port=" in transport:
                port = int(transport.split("client_port=")[1].split("-")[0].split(";")[0])
                udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                udp.bind(("127.0.0.1", 0))
                session.udp = (udp, ("127.0.0.1", port))
                answer = "RTP/AVP;unicast;client_port=%d-%d;server_port=%d-%d" % (port, port + 1, udp.getsockname()[1], udp.getsockname()[1] + 1)
            else:
                answer = "RTP/AVP/TCP;unicast;interleaved=0-1"
            session.reply(cseq, headers=[("Transport", answer), ("Session", "4242;timeout=%d" % session.args.session_timeout)])
        elif method == "PLAY":
            session.reply(cseq, headers=[("Session", "4242"), ("RTP-Info", "url=rtsp://127.0.0.1/cam/track1;seq=0;rtptime=0")])
            log("playing over " + ("udp" if session.udp else "tcp"))
            playing = True
            if not lockstep(session, units):
                return
        elif method == "TEARDOWN":
            session.reply(cseq, headers=[("Session", "4242")])
            log("teardown")
            return
        else:
            if method in ("GET_PARAMETER", "OPTIONS") and playing:
                log("keep-alive " + method)
            session.reply(cseq, headers=[("Session", "4242")])


def lockstep(session, units):
    relay = socket.create_connection(("127.0.0.1", session.args.relay), timeout=20)
    received, seq = b"", 0
    for i, unit in enumerate(units):
        sent = [n for n in unit if not (session.args.no_inband_sets and n[0] & 0x1F in (7, 8))]
        pieces = [p for n in sent for p in payloads(n)]
        for k, p in enumerate(pieces):
            session.send_rtp(k == len(pieces) - 1, seq, i * 3000, p)
            seq += 1
        deadline = time.monotonic() + 20
        while sent[-1] not in received:
            if time.monotonic() > deadline:
                log("lockstep broken: unit %d was not delivered before the next one was sent" % i)
                return False
            data = relay.recv(65536)
            if not data:
                log("relay closed")
                return False
            received += data
        if i == 0:
            log("first unit: " + " ".join({7: "SPS", 8: "PPS", 5: "IDR", 6: "SEI", 9: "AUD", 1: "P"}.get(n[0] & 0x1F, str(n[0] & 0x1F)) for n in nal_units(received)))
        received = received[received.index(sent[-1]) + len(sent[-1]):]
    log("lockstep: %d units, each delivered before the next was sent" % len(units))
    return True


class Args:
    def __init__(self, argv):
        if len(argv) < 4:
            log(__doc__)
            sys.exit(64)
        self.port, self.stream, self.relay = int(argv[1]), argv[2], int(argv[3])
        self.digest = argv[argv.index("--digest") + 1] if "--digest" in argv else None
        self.no_inband_sets = "--no-inband-sets" in argv
        self.session_timeout = int(argv[argv.index("--session-timeout") + 1]) if "--session-timeout" in argv else 60


def main():
    args = Args(sys.argv)
    with open(args.stream, "rb") as f:
        units = access_units(nal_units(f.read()))
    sets = [n for n in units[0] if n[0] & 0x1F in (7, 8)]
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", args.port))
    server.listen(4)
    log("listening on rtsp://127.0.0.1:%d/cam" % args.port)
    while True:
        conn, _ = server.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        log("client connected")
        try:
            serve(Session(conn, args), units, sets)
        except (ConnectionError, OSError) as e:
            log("client gone: %s" % e)
        conn.close()


if __name__ == "__main__":
    main()
