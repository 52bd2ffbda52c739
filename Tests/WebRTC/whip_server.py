"""A WHIP server of aiortc's (an implementation of WebRTC independent of nalcast's), as a
test's peer: nalcast pushes to it with `--forward whip://…`.

    whip_server.py PORT_FILE POINTS_JSON [--port N] [--token TOKEN] [--passive] [--pli N] [--tls CERT --tls-key KEY]

Listens on 127.0.0.1 (port N, or one of the kernel's; https with --tls) and writes the port to
PORT_FILE once it listens. `POST /whip` with an SDP offer (application/sdp; with --token, only with
`Authorization: Bearer TOKEN`, else 401) is answered 201 with aiortc's answer and a
`Location: /whip/ID`; `DELETE /whip/ID` ends the session (200). With --passive the answer
says a=setup:passive, so that nalcast is the DTLS client (aiortc's own choice is active).
Every received video frame is decoded; with --pli N, a picture loss indication goes back
after frame N and the keyframes decoded after it are counted.

Prints one JSON line per event, flushed: {"event": "listening", "port"},
{"event": "refused", "status"}, {"event": "session", "id", "answer"}, {"event": "frames", "id",
"frames": 30} once 30 frames are decoded, {"event": "keyframe-after-pli", "id", "frame"} at the
first keyframe decoded after the PLI, and {"event": "ended", "id", "frames", "keyframes",
"keyframesAfterPLI", "width", "height", "pixels" (RGB at POINTS_JSON of the last frame that is not a white flash),
"firstFrameMs" (the POST to the first decoded frame), "firstFrameAt" (its wall-clock time), "deleted", "offer", "answer",
"audio": {"seconds", "rms", "crossingsPerSecond"} of the sound decoded, or null} when a
session ends (DELETE, or its connection closed or failed). SIGTERM closes every session
(aiortc sends its DTLS close_notify) and exits.
"""

import asyncio
import json
import os
import signal
import sys
import time
import uuid

from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription


def say(**event):
    print(json.dumps(event), flush=True)


def is_key(frame):
    return bool(getattr(frame, "key_frame", False)) or str(getattr(frame, "pict_type", "")).endswith("I")


class Session:
    def __init__(self, server, offer):
        self.id = uuid.uuid4().hex[:12]
        self.server, self.offer = server, offer
        self.pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        self.posted = time.monotonic()
        self.frames = self.keyframes = self.after_pli = 0
        self.first_ms, self.first_at, self.last, self.deleted, self.ended = None, None, None, False, False
        self.answer = ""
        self.sound = []
        self.pc.on("track", self.on_track)
        self.pc.on("connectionstatechange", self.on_state)

    async def start(self):
        await self.pc.setRemoteDescription(RTCSessionDescription(sdp=self.offer, type="offer"))
        if self.server.passive:
            for transceiver in self.pc.getTransceivers():
                transceiver.receiver.transport._set_role("server")
        await self.pc.setLocalDescription(await self.pc.createAnswer())
        self.answer = self.pc.localDescription.sdp
        return self.answer

    def on_track(self, track):
        if track.kind == "video":
            asyncio.ensure_future(self.receive(track))
        else:
            asyncio.ensure_future(self.hear(track))

    async def hear(self, track):
        while True:
            try:
                frame = await track.recv()
            except Exception:  # noqa: BLE001 - the track ended: the session reports
                return
            self.sound.append(frame.to_ndarray().reshape(-1)[0::2] / 32768.0)

    async def on_state(self):
        if self.pc.connectionState in ("failed", "closed"):
            await self.end()

    async def receive(self, track):
        receiver = next(t.receiver for t in self.pc.getTransceivers() if t.kind == "video")
        while True:
            try:
                frame = await track.recv()
            except Exception:  # noqa: BLE001 - the track ended: the session reports
                return
            self.frames += 1
            if self.first_ms is None:
                self.first_ms = round((time.monotonic() - self.posted) * 1000, 1)
                self.first_at = time.time()
            if is_key(frame):
                self.keyframes += 1
                if self.server.pli is not None and self.frames > self.server.pli:
                    self.after_pli += 1
                    if self.after_pli == 1:
                        say(event="keyframe-after-pli", id=self.id, frame=self.frames)
            if self.frames == self.server.pli:
                ssrc = next(iter(receiver._RTCRtpReceiver__remote_streams), None)
                if ssrc is not None:
                    await receiver._send_rtcp_pli(ssrc)
            # The picture whose colours are read: the last that is not one of the test
            # pattern's white flashes (a frame a second), which has no bars to check.
            if frame.to_ndarray(format="gray").mean() <= 220:
                self.last = frame
            if self.frames == 30:
                say(event="frames", id=self.id, frames=30)

    def analyse(self):
        """The sound decoded: its seconds, and over its loud 10 ms blocks (the beeps of
        `--audio tone`, the first and last block of each beep left out) the RMS and the rising
        zero crossings a second (the tone's frequency)."""
        if not self.sound:
            return None
        import numpy
        left = numpy.concatenate(self.sound)
        blocks = left[: len(left) // 480 * 480].reshape(-1, 480)
        loud = numpy.sqrt(numpy.mean(blocks ** 2, axis=1)) > 0.1
        inner = loud & numpy.roll(loud, 1) & numpy.roll(loud, -1)
        tone = blocks[inner].reshape(-1)
        if len(tone) == 0:
            return {"seconds": len(left) / 48000, "rms": 0.0, "crossingsPerSecond": 0.0}
        rms = float(numpy.sqrt(numpy.mean(tone ** 2)))
        crossings = sum(int(numpy.sum((b[:-1] < 0) & (b[1:] >= 0))) for b in blocks[inner]) / (len(tone) / 48000)
        return {"seconds": len(left) / 48000, "rms": rms, "crossingsPerSecond": crossings}

    async def end(self):
        if self.ended:
            return
        self.ended = True
        image = self.last.to_ndarray(format="rgb24") if self.last is not None else None
        pixels = [[int(v) for v in image[y][x]] for x, y in self.server.points] if image is not None else []
        say(event="ended", id=self.id, frames=self.frames, keyframes=self.keyframes, keyframesAfterPLI=self.after_pli,
            width=self.last.width if self.last else 0, height=self.last.height if self.last else 0, pixels=pixels,
            firstFrameMs=self.first_ms, firstFrameAt=self.first_at, deleted=self.deleted, offer=self.offer, answer=self.answer, audio=self.analyse())
        await self.pc.close()


class Server:
    def __init__(self, points, token, passive, pli):
        self.points, self.token, self.passive, self.pli = points, token, passive, pli
        self.sessions = {}

    async def handle(self, reader, writer):
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode().split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:] if ":" in line)}
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            status, extra, text = await self.respond(method, path, headers, body.decode())
        except Exception as error:  # noqa: BLE001 - a bad request is answered, not fatal
            status, extra, text = 400, {}, f"{type(error).__name__}: {error}\n"
        reply = f"HTTP/1.1 {status} X\r\nContent-Length: {len(text.encode())}\r\nConnection: close\r\n"
        reply += "".join(f"{k}: {v}\r\n" for k, v in extra.items()) + "\r\n"
        writer.write(reply.encode() + text.encode())
        await writer.drain()
        writer.close()

    async def respond(self, method, path, headers, body):
        if self.token is not None and headers.get("authorization") != "Bearer " + self.token:
            say(event="refused", status=401, method=method)
            return 401, {"WWW-Authenticate": "Bearer"}, "wrong or no bearer token\n"
        if method == "POST" and path == "/whip":
            if headers.get("content-type", "").split(";")[0].strip() != "application/sdp":
                return 415, {}, "expected application/sdp\n"
            session = Session(self, body)
            answer = await session.start()
            self.sessions[session.id] = session
            say(event="session", id=session.id, answer=answer)
            return 201, {"Content-Type": "application/sdp", "Location": f"/whip/{session.id}"}, answer
        if method == "DELETE" and path.startswith("/whip/") and path[6:] in self.sessions:
            session = self.sessions.pop(path[6:])
            session.deleted = True
            await session.end()
            return 200, {}, "ended\n"
        return 404, {}, "no such resource\n"

    async def close(self):
        for session in list(self.sessions.values()):
            await session.end()


async def main():
    port_file, points = sys.argv[1], json.loads(sys.argv[2])
    def option(name):
        return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None
    pli = option("--pli")
    server = Server(points, option("--token"), "--passive" in sys.argv, pli and int(pli))
    secure = None
    if option("--tls"):
        import ssl
        secure = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        secure.load_cert_chain(option("--tls"), option("--tls-key"))
    listener = await asyncio.start_server(server.handle, "127.0.0.1", int(option("--port") or 0), ssl=secure)
    port = listener.sockets[0].getsockname()[1]
    stop = asyncio.Event()
    # A test runner may start it with SIGTERM blocked (the mask is inherited).
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    with open(port_file + ".part", "w") as f:
        f.write(str(port))
    os.rename(port_file + ".part", port_file)
    say(event="listening", port=port)
    await stop.wait()
    listener.close()
    await server.close()
    # The close_notify datagrams go out on the next turns.
    await asyncio.sleep(0.2)


if __name__ == "__main__":
    asyncio.run(main())
