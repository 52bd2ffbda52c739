"""N WebRTC viewers of a producer's WHEP endpoint in one process, for the web benchmark's
CPU rows: each is an aiortc peer (ICE, DTLS-SRTP, SRTCP, its jitter buffer and NACKs, as a
browser's network side) whose decoder is replaced by one that decodes nothing, so that the
viewers cost the machine their network work only, as ws_readers.py's WebSocket viewers do.
Run by the venv python of scripts/setup (aiortc).

    webrtc_readers.py WHEP_URL N SECONDS [--aes-cm-only]

Each viewer POSTs its offer and counts the bytes of the access units it is handed (its
depacketized frames); counting starts once every viewer had its first frame and lasts
SECONDS. Prints one line per viewer, "BYTES 0 COUNTED_MS" (the second field: 1 when the
server ended it, as ws_readers.py says a close), or exits 1 with a line on stderr. With
--aes-cm-only the viewers' DTLS offers SRTP_AES128_CM_SHA1_80 alone (a peer whose libsrtp
has no AES-GCM, which nalcast otherwise takes first).
"""

import asyncio
import sys
import time
import urllib.request

import aiortc.rtcrtpreceiver as receiver_module
from aiortc import RTCPeerConnection, RTCSessionDescription

COUNTS = {}
STARTED = None


class Counting:
    """A decoder that decodes nothing: counts the access units' bytes (one per receiver)."""

    def __init__(self):
        COUNTS[id(self)] = 0

    def decode(self, encoded_frame):
        if STARTED is not None and time.monotonic() >= STARTED:
            COUNTS[id(self)] += len(encoded_frame.data)
        return []


def post(url, sdp):
    request = urllib.request.Request(url, data=sdp.encode(), method="POST", headers={"Content-Type": "application/sdp"})
    with urllib.request.urlopen(request, timeout=20) as response:
        return response.status, response.read().decode()


async def viewer(url, index, first):
    pc = RTCPeerConnection()
    pc.addTransceiver("video", direction="recvonly")

    @pc.on("track")
    def on_track(track):
        async def pull():
            await track.recv()  # never returns: nothing is decoded
        asyncio.ensure_future(pull())

    await pc.setLocalDescription(await pc.createOffer())
    status, answer = await asyncio.to_thread(post, url, pc.localDescription.sdp)
    if status != 201:
        raise SystemExit(f"viewer {index}: POST answered {status}")
    await pc.setRemoteDescription(RTCSessionDescription(sdp=answer, type="answer"))
    while pc.connectionState != "connected":
        await asyncio.sleep(0.05)
    first.set_result(True) if not first.done() else None
    return pc


async def run(url, n, seconds):
    global STARTED
    # Each viewer's receiver asks get_decoder once, in its decoder thread.
    receiver_module.get_decoder = lambda codec: Counting()
    firsts = [asyncio.get_event_loop().create_future() for _ in range(n)]
    pcs = await asyncio.gather(*(viewer(url, i, firsts[i]) for i in range(n)))
    await asyncio.gather(*firsts)
    await asyncio.sleep(0.5)
    start = time.monotonic()
    STARTED = start
    await asyncio.sleep(seconds)
    counted = (time.monotonic() - start) * 1000
    totals = sorted(COUNTS.values(), reverse=True)
    for pc in pcs:
        await pc.close()
    if len(totals) < n:
        raise SystemExit(f"{len(totals)} of {n} viewers got a frame")
    for value in totals[:n]:
        print(f"{value} 0 {counted:.0f}")


def main():
    url, n, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    if "--aes-cm-only" in sys.argv:
        import aiortc.rtcdtlstransport as dtls
        dtls.SRTP_PROFILES[:] = [dtls.SRTP_AES128_CM_SHA1_80]
    asyncio.run(run(url, n, seconds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
