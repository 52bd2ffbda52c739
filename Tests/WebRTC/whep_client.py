"""A WHEP client of aiortc's (an implementation of WebRTC independent of nalcast's and of
Chromium's), as a test's peer: offers to receive video, plays what comes and prints what it
decoded, as JSON.

    whep_client.py WHEP_URL FRAMES POINTS_JSON [--token TOKEN] [--pli N]

POSTs its offer (application/sdp), takes the 201's answer and Location, decodes FRAMES
frames (up to 60 s), reads the RGB colours at POINTS_JSON ([[x, y], ...]) of the last one,
then DELETEs the session. With --pli N it sends a picture loss indication after frame N and
reports the frames up to the next keyframe. Prints {"frames", "width", "height",
"keyframes", "pixels", "status", "location", "deleted", "answer"} or {"error": ...} (exit 1).
"""

import asyncio
import json
import sys
import time
import urllib.request

from aiortc import RTCPeerConnection, RTCSessionDescription


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


async def run(url, wanted, points, token):
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
    frames, keyframes, last = 0, 0, None
    deadline = time.time() + 60
    while frames < wanted and time.time() < deadline:
        frame = await asyncio.wait_for(track.recv(), 20)
        frames += 1
        if getattr(frame, "key_frame", False):
            keyframes += 1
        last = frame
    image = last.to_ndarray(format="rgb24") if last is not None else None
    pixels = [[int(v) for v in image[y][x]] for x, y in points] if image is not None else []
    base = url.split("/whep")[0]
    deleted, _, _ = await asyncio.to_thread(http, "DELETE", base + location, None, token)
    await pc.close()
    return {"frames": frames, "width": last.width if last else 0, "height": last.height if last else 0,
            "pixels": pixels, "status": status, "location": location, "deleted": deleted, "answer": answer}


def main():
    url, wanted, points = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
    token = sys.argv[sys.argv.index("--token") + 1] if "--token" in sys.argv else None
    try:
        result = asyncio.run(asyncio.wait_for(run(url, wanted, points, token), 90))
    except Exception as error:  # noqa: BLE001 - any failure is the test's answer
        result = {"error": f"{type(error).__name__}: {error}"}
    print(json.dumps(result))
    return 1 if "error" in result else 0


if __name__ == "__main__":
    sys.exit(main())
