"""A WHIP publisher of aiortc's (an implementation of WebRTC independent of nalcast's and of
Chromium's), as a test's peer: sends H.264 pictures of known colours, and a tone, to a WHIP
endpoint, then ends its session. Prints what happened as JSON.

    whip_publisher.py WHIP_URL SECONDS [--token TOKEN] [--colour R,G,B] [--tone HZ]
                      [--vp8-only] [--offer-only] [--no-delete | --close] [--drop N | --lose N]

The pictures are 320x240, the left half of `--colour` (default 255,0,0) and the right half
blue (0,0,255), 30 a second, for SECONDS from when the connection is up (ICE and DTLS), or
until SIGTERM ends the sending sooner. With --tone HZ an Opus track goes beside them: a
sine of HZ at -6 dBFS (amplitude 0.5), stereo, 48 kHz. --vp8-only offers VP8 alone (an offer
nalcast must refuse); --offer-only POSTs the offer, prints the answer's status and stops
(a second publisher); --no-delete goes away without DELETE (its ICE and DTLS just stop);
--close ends without DELETE too, but with DTLS's close_notify (a clean end all the same);
--drop N loses every Nth video RTP packet the first time it is sent (as a path would: the
receiver NACKs it and aiortc sends it again); --lose N never sends every Nth, not even
again (the receiver must give up on its picture and ask for a new one). Prints {"status", "location", "body",
"deleted", "framesSent", "dropped", "nacked"} or {"error": ...} (exit 1).
"""

import asyncio
import fractions
import json
import math
import os
import signal
import sys

import numpy
from av import AudioFrame, VideoFrame
from aiortc import MediaStreamTrack, RTCPeerConnection, RTCRtpSender, RTCSessionDescription

from sdp_http import http

WIDTH, HEIGHT, FPS = 320, 240, 30
DROPPED = []


class Pictures(MediaStreamTrack):
    kind = "video"

    def __init__(self, colour):
        super().__init__()
        image = numpy.zeros((HEIGHT, WIDTH, 3), numpy.uint8)
        image[:, : WIDTH // 2] = colour
        image[:, WIDTH // 2 :] = (0, 0, 255)
        self.image, self.count = image, 0
        self.start = None

    async def recv(self):
        loop = asyncio.get_running_loop()
        if self.start is None:
            self.start = loop.time()
        due = self.start + self.count / FPS
        await asyncio.sleep(max(0, due - loop.time()))
        frame = VideoFrame.from_ndarray(self.image, format="rgb24")
        frame.pts, frame.time_base = self.count * 3000, fractions.Fraction(1, 90000)
        self.count += 1
        return frame


class Tone(MediaStreamTrack):
    kind = "audio"

    def __init__(self, hz):
        super().__init__()
        self.hz, self.sample, self.start = hz, 0, None

    async def recv(self):
        loop = asyncio.get_running_loop()
        if self.start is None:
            self.start = loop.time()
        due = self.start + self.sample / 48000
        await asyncio.sleep(max(0, due - loop.time()))
        t = (numpy.arange(960) + self.sample) / 48000
        mono = (0.5 * 32767 * numpy.sin(2 * math.pi * self.hz * t)).astype(numpy.int16)
        frame = AudioFrame.from_ndarray(numpy.repeat(mono, 2).reshape(1, -1), format="s16", layout="stereo")
        frame.sample_rate, frame.pts, frame.time_base = 48000, self.sample, fractions.Fraction(1, 48000)
        self.sample += 960
        return frame


def lose_every(nth, forever=False):
    """Every nth video RTP packet is not sent the first time (a retransmission goes), or
    (forever) never."""
    sent = set()

    def patch_transport(transport):
        send = transport._send_rtp

        async def maybe(data, *args, **kwargs):
            # RTP (not RTCP: 192-223), not Opus (aiortc's payload type 111)
            if len(data) >= 12 and not 192 <= data[1] <= 223 and data[1] & 0x7F != 111:
                sequence = data[2] << 8 | data[3]
                if sequence in DROPPED and forever:
                    return
                if sequence not in sent:
                    sent.add(sequence)
                    if len(sent) % nth == 0:
                        DROPPED.append(sequence)
                        return
            return await send(data, *args, **kwargs)

        transport._send_rtp = maybe

    return patch_transport


async def connected(pc):
    """Until ICE and DTLS are up: the SECONDS of sending count from there, not from the
    answer (a loaded machine's handshake would eat into them)."""
    done = asyncio.get_running_loop().create_future()

    @pc.on("connectionstatechange")
    def changed():
        if pc.connectionState in ("connected", "failed", "closed") and not done.done():
            done.set_result(pc.connectionState)

    changed()
    state = await done
    if state != "connected":
        raise RuntimeError("the connection " + state)


async def until_term(seconds):
    """`seconds`, or less when SIGTERM comes (the test ends the sending when it is done).
    SIGTERM is blocked from the start (`main`) and let in only here, once it has a handler:
    one sent before is held, not lost; and a test runner's blocked or ignored SIGTERM, which
    its children inherit, does not keep it out."""
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    try:
        await asyncio.wait_for(stop.wait(), seconds)
    except asyncio.TimeoutError:
        pass


async def publish(args):
    pc = RTCPeerConnection()
    video = pc.addTransceiver(Pictures(args["colour"]), direction="sendonly")
    wanted = "video/VP8" if args["vp8"] else "video/H264"
    video.setCodecPreferences([c for c in RTCRtpSender.getCapabilities("video").codecs if c.mimeType == wanted])
    if args["tone"]:
        pc.addTransceiver(Tone(args["tone"]), direction="sendonly")
    await pc.setLocalDescription(await pc.createOffer())
    offer = pc.localDescription.sdp
    if args["passive"]:
        # The offer of a publisher that will be the DTLS server (FFmpeg's WHIP muxer offers
        # so): the answer must say active; aiortc then takes the server's part.
        offer = offer.replace("a=setup:actpass", "a=setup:passive")
    status, headers, body = http("POST", args["url"], offer, args["token"])
    out = {"status": status, "location": headers.get("Location"), "body": body if status != 201 else "", "answer": body if status == 201 else ""}
    if status != 201 or args["offerOnly"]:
        await pc.close()
        return out
    await pc.setRemoteDescription(RTCSessionDescription(body, "answer"))
    if args["drop"] or args["lose"]:
        lose_every(args["drop"] or args["lose"], forever=bool(args["lose"]))(video.sender.transport)
    await connected(pc)
    await until_term(args["seconds"])
    out["framesSent"] = video.sender.track.count if video.sender.track else 0
    stats = await video.sender.getStats()
    out["nacked"] = sum(getattr(s, "nackCount", 0) or 0 for s in stats.values())
    out["dropped"] = len(DROPPED)
    if args["delete"] and out["location"]:
        base = args["url"].split("/", 3)
        out["deleted"] = http("DELETE", base[0] + "//" + base[2] + out["location"], token=args["token"])[0]
        await pc.close()
    elif args["close"]:
        await pc.close()  # DTLS's close_notify, no DELETE
    else:
        # Gone without a word: the process ends with nothing more sent, not even DTLS's close_notify.
        print(json.dumps(out), flush=True)
        os._exit(0)
    return out


def main():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # until `until_term` handles it
    argv = sys.argv[1:]
    args = {"url": argv[0], "seconds": float(argv[1]), "token": None, "colour": (255, 0, 0), "tone": None, "vp8": False,
            "offerOnly": False, "delete": True, "close": False, "drop": 0, "lose": 0, "passive": False}
    rest = argv[2:]
    while rest:
        flag = rest.pop(0)
        if flag == "--token":
            args["token"] = rest.pop(0)
        elif flag == "--colour":
            args["colour"] = tuple(int(v) for v in rest.pop(0).split(","))
        elif flag == "--tone":
            args["tone"] = float(rest.pop(0))
        elif flag == "--vp8-only":
            args["vp8"] = True
        elif flag == "--offer-only":
            args["offerOnly"] = True
        elif flag == "--passive":
            args["passive"] = True
        elif flag == "--no-delete":
            args["delete"] = False
        elif flag == "--close":
            args["delete"], args["close"] = False, True
        elif flag == "--drop":
            args["drop"] = int(rest.pop(0))
        elif flag == "--lose":
            args["lose"] = int(rest.pop(0))
    try:
        print(json.dumps(asyncio.run(asyncio.wait_for(publish(args), args["seconds"] + 30))))
    except Exception as error:  # noqa: BLE001 - any failure is the test's to read
        print(json.dumps({"error": f"{type(error).__name__}: {error}"}))
        sys.exit(1)


if __name__ == "__main__":
    main()
