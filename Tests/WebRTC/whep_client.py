"""A WHEP client of aiortc's (an implementation of WebRTC independent of nalcast's and of
Chromium's), as a test's peer: offers to receive video, plays what comes and prints what it
decoded, as JSON.

    whep_client.py WHEP_URL FRAMES POINTS_JSON [--token TOKEN] [--pli N] [--nack N] [--drop N]

POSTs its offer (application/sdp), takes the 201's answer and Location, decodes FRAMES
frames (up to 60 s), reads the RGB colours at POINTS_JSON ([[x, y], ...]) of the last one,
then DELETEs the session. With --pli N it sends a picture loss indication after frame N
and counts the keyframes decoded after it ("keyframesAfterPLI"); with --nack N, after frame
N, a NACK of the two packets before the last one received and of one 2000 packets before
it (never sent, or long out of any history: "nacked"); with --drop N it loses every Nth
packet the first time it comes off ICE (aiortc then NACKs it: "dropped" counts them). Prints {"frames", "width", "height",
"keyframes", "pixels", "status", "location", "deleted", "answer"} or {"error": ...} (exit 1).
"""

import asyncio
import json
import sys
import time
import urllib.request

import aioice
from aiortc import RTCPeerConnection, RTCSessionDescription

DROPPED = []


def lose_every(nth):
    """Every nth RTP packet is lost the first time it arrives: the datagram is dropped as it
    comes off ICE (aioice), before SRTP sees it (as on the path: its retransmission is then
    no replay), and gets through when sent again."""
    original = aioice.Connection.recv
    seen = set()

    async def lossy(self):
        while True:
            data = await original(self)
            # SRTP (RFC 7983's 128-191), not SRTCP (RFC 5761's payload types 192-223)
            if len(data) >= 12 and 127 < data[0] < 192 and not 192 <= data[1] <= 223:
                sequence = data[2] << 8 | data[3]
                if sequence not in seen:
                    seen.add(sequence)
                    if len(seen) % nth == 0:
                        DROPPED.append(sequence)
                        continue
            return data

    aioice.Connection.recv = lossy


def http(method, url, body=None, token=None):
    headers = {"Content-Type": "application/sdp"} if body is not None else {}
    if token:
        headers["Authorization"] = "Bearer " + token
    request = urllib.request.Request(url, data=body.encode() if body is not None else None, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()


def is_key(frame):
    return bool(getattr(frame, "key_frame", False)) or str(getattr(frame, "pict_type", "")).endswith("I")


async def run(url, wanted, points, token, pli_at=None, nack_at=None):
    pc = RTCPeerConnection()
    pc.addTransceiver("video", direction="recvonly")
    got = asyncio.get_event_loop().create_future()

    @pc.on("track")
    def on_track(track):
        if not got.done():
            got.set_result(track)

    await pc.setLocalDescription(await pc.createOffer())
    status, headers, answer = await asyncio.to_thread(http, "POST", url, pc.localDescription.sdp, token)
    if status != 201:
        return {"error": f"POST answered {status}: {answer.strip()}", "status": status}
    location = headers.get("Location", "")
    await pc.setRemoteDescription(RTCSessionDescription(sdp=answer, type="answer"))
    track = await asyncio.wait_for(got, 20)
    receiver = pc.getTransceivers()[0].receiver
    ssrc = int(next(line.split()[0].split(":")[1] for line in answer.splitlines() if line.startswith("a=ssrc:")))
    frames, keyframes, after_pli, nacked, last = 0, 0, 0, [], None
    deadline = time.time() + 60
    while frames < wanted and time.time() < deadline:
        frame = await asyncio.wait_for(track.recv(), 20)
        frames += 1
        if is_key(frame):
            keyframes += 1
            if pli_at is not None and frames > pli_at:
                after_pli += 1
        if frames == pli_at:
            await receiver._send_rtcp_pli(ssrc)
        if frames == nack_at:
            newest = receiver._RTCRtpReceiver__remote_streams[ssrc].max_seq
            nacked = [(newest - 2) % 65536, (newest - 1) % 65536, (newest - 2000) % 65536]
            # Two NACKs: aiortc packs one's lost packets as a bitmask after the first.
            await receiver._send_rtcp_nack(ssrc, nacked[:2])
            await receiver._send_rtcp_nack(ssrc, nacked[2:])
        last = frame
    image = last.to_ndarray(format="rgb24") if last is not None else None
    pixels = [[int(v) for v in image[y][x]] for x, y in points] if image is not None else []
    base = url.split("/whep")[0]
    deleted, _, _ = await asyncio.to_thread(http, "DELETE", base + location, None, token)
    await pc.close()
    return {"frames": frames, "width": last.width if last else 0, "height": last.height if last else 0, "keyframes": keyframes,
            "keyframesAfterPLI": after_pli, "nacked": nacked, "dropped": len(DROPPED), "pixels": pixels, "status": status, "location": location,
            "deleted": deleted, "answer": answer}


def main():
    url, wanted, points = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
    def option(name):
        return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None
    token, pli, nack = option("--token"), option("--pli"), option("--nack")
    if option("--drop"):
        lose_every(int(option("--drop")))
    try:
        result = asyncio.run(asyncio.wait_for(run(url, wanted, points, token, pli and int(pli), nack and int(nack)), 90))
    except Exception as error:  # noqa: BLE001 - any failure is the test's answer
        result = {"error": f"{type(error).__name__}: {error}"}
    print(json.dumps(result))
    return 1 if "error" in result else 0


if __name__ == "__main__":
    sys.exit(main())
