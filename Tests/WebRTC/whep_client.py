"""A WHEP client of aiortc's (an implementation of WebRTC independent of nalcast's and of
Chromium's), as a test's peer: offers to receive video, plays what comes and prints what it
decoded, as JSON.

    whep_client.py WHEP_URL FRAMES POINTS_JSON [--token TOKEN] [--pli N] [--nack N] [--drop N] [--audio SECONDS] [--aes-cm-only]

POSTs its offer (application/sdp), takes the 201's answer and Location, decodes FRAMES
frames (up to 60 s; with --audio, also until the sound is decoded and the pictures have
caught up with its end; with --pli, also until a keyframe came after the PLI), reads the RGB colours at POINTS_JSON ([[x, y], ...]) of the last one,
then DELETEs the session. With --pli N it sends a picture loss indication after frame N
and counts the keyframes decoded after it ("keyframesAfterPLI"); with --nack N, after frame
N, a NACK of the two packets before the last one received and of one 2000 packets before
it (never sent, or long out of any history: "nacked"); with --drop N it loses every Nth
packet the first time it comes off ICE (aiortc then NACKs it: "dropped" counts them); with
--aes-cm-only its DTLS offers SRTP_AES128_CM_SHA1_80 alone, as a peer whose libsrtp has no
AES-GCM (nalcast prefers GCM). Prints {"frames", "width", "height",
"keyframes", "pixels", "status", "location", "deleted", "answer"} or {"error": ...} (exit 1).

With --audio SECONDS it offers to receive audio too and, beside the frames, decodes that
much sound (Opus, aiortc's decoder) and reports "audio": the seconds decoded, the RMS and
the rising zero crossings a second of the sound that is not silence (the test pattern's
beeps), and the A/V offsets: each beep's onset and each white frame (the flashes of
`--source testsrc` with `--audio tone`) placed on the wall clock by its track's last RTCP
sender report, as a browser lines the two up, and the beep nearest each flash, in ms.
"""

import asyncio
import json
import sys
import time

import aioice
from aiortc import RTCPeerConnection, RTCSessionDescription
from aiortc.rtp import RtcpSrPacket

from sdp_http import http

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


def is_key(frame):
    return bool(getattr(frame, "key_frame", False)) or str(getattr(frame, "pict_type", "")).endswith("I")


class Clock:
    """A receiver's RTP timestamps unwrapped from its frames' pts, and its last sender report."""

    def __init__(self, receiver, rate):
        self.receiver, self.rate, self.report = receiver, rate, None
        handle = receiver._handle_rtcp_packet

        async def spy(packet):
            if isinstance(packet, RtcpSrPacket):
                info = packet.sender_info
                self.report = (info.ntp_timestamp / 2**32, info.rtp_timestamp)
            await handle(packet)
        receiver._handle_rtcp_packet = spy

    def rtp(self, pts):
        return (pts + self.receiver._RTCRtpReceiver__timestamp_mapper._origin) % 2**32

    def wall(self, rtp):
        """The sender's wall clock (NTP seconds) of an RTP time, by its last report."""
        ntp, at = self.report
        delta = (rtp - at) % 2**32
        return ntp + (delta - 2**32 if delta >= 2**31 else delta) / self.rate


async def hear(track, clock, seconds):
    """Decodes `seconds` of sound: the left channel as floats with each frame's RTP time."""
    samples, frames = 0, []
    while samples < seconds * 48000:
        frame = await asyncio.wait_for(track.recv(), 20)
        left = frame.to_ndarray().reshape(-1)[0::2] / 32768.0
        frames.append((clock.rtp(frame.pts), left))
        samples += len(left)
    return frames


def pictures_behind(sound, audio_clock, video_clock, last_rtp):
    """True while the last picture decoded is older, on the sender's wall clock, than the end
    of the sound heard: a relay's first pictures are its cached GOP's, older than the sound,
    and a loaded decoder lags, so the flashes of the sound's last second may not be in yet."""
    if last_rtp is None or video_clock.report is None or audio_clock.report is None:
        return True
    rtp, samples = sound[-1]
    return video_clock.wall(last_rtp) < audio_clock.wall((rtp + len(samples)) % 2**32)


def analyse(sound, audio_clock, flashes, video_clock):
    import numpy
    left = numpy.concatenate([samples for _, samples in sound])
    rtps = numpy.concatenate([rtp + numpy.arange(len(samples)) for rtp, samples in sound]) % 2**32
    loud = numpy.flatnonzero(numpy.abs(left) > 0.1)
    # An onset: loud after half a second of quiet (or after 100 ms of it at the start).
    starts = [int(i) for k, i in enumerate(loud) if (k == 0 and i >= 4800) or (k > 0 and i - loud[k - 1] >= 24000)]
    onsets = [audio_clock.wall(int(rtps[i])) for i in starts]
    # The beeps' sound, from 5 ms after each onset to 95 ms.
    tone = numpy.concatenate([left[i + 240: i + 4560] for i in starts if i + 4560 <= len(left)] or [numpy.zeros(1)])
    rms = float(numpy.sqrt(numpy.mean(tone ** 2)))
    crossings = int(numpy.sum((tone[:-1] < 0) & (tone[1:] >= 0))) / (len(tone) / 48000)
    # The flashes whose beep the sound heard can count: an onset needs 100 ms of sound
    # before it (above), and a beep lasts 100 ms.
    first, last = audio_clock.wall(int(rtps[0])), audio_clock.wall(int(rtps[-1]))
    walls = [w for w in (video_clock.wall(rtp) for rtp in flashes) if first + 0.15 < w < last - 0.15]
    offsets = [round((min(onsets, key=lambda b: abs(b - f)) - f) * 1000, 1) for f in walls] if onsets else []
    return {"seconds": len(left) / 48000, "beeps": len(onsets), "flashes": len(walls), "rms": rms,
            "crossingsPerSecond": crossings, "offsetsMs": offsets}


async def run(url, wanted, points, token, pli_at=None, nack_at=None, audio=None):
    pc = RTCPeerConnection()
    pc.addTransceiver("video", direction="recvonly")
    if audio:
        pc.addTransceiver("audio", direction="recvonly")
    got = asyncio.get_event_loop().create_future()
    heard = asyncio.get_event_loop().create_future()

    @pc.on("track")
    def on_track(track):
        future = heard if track.kind == "audio" else got
        if not future.done():
            future.set_result(track)

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
    listening, flashes = None, []
    if audio:
        video_clock = Clock(receiver, 90000)
        audio_clock = Clock(pc.getTransceivers()[1].receiver, 48000)
        listening = asyncio.ensure_future(hear(await asyncio.wait_for(heard, 20), audio_clock, audio))
    deadline = time.time() + 60
    last_rtp = None
    # With sound, the pictures until the sound is heard too and they have caught up with its end.
    # With --pli, until a keyframe came after the PLI too: how many pictures were already on
    # their way when the sender acted on it depends on the machine's load, not on the sender.
    while (frames < wanted or (pli_at is not None and after_pli == 0)
           or (listening and (not listening.done()
                              or pictures_behind(listening.result(), audio_clock, video_clock, last_rtp)))) \
            and time.time() < deadline:
        frame = await asyncio.wait_for(track.recv(), 20)
        frames += 1
        last_rtp = video_clock.rtp(frame.pts) if audio else None
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
        # The picture whose colours are read is the last that is not one of the test
        # pattern's white flashes (a frame a second, no bars to check).
        white = frame.to_ndarray(format="gray").mean() > 220
        if not white:
            last = frame
        if audio and white:
            flashes.append(video_clock.rtp(frame.pts))
    sound = analyse(await listening, audio_clock, flashes, video_clock) if listening else None
    image = last.to_ndarray(format="rgb24") if last is not None else None
    pixels = [[int(v) for v in image[y][x]] for x, y in points] if image is not None else []
    base = url.split("/whep")[0]
    deleted, _, _ = await asyncio.to_thread(http, "DELETE", base + location, None, token)
    await pc.close()
    return {"frames": frames, "width": last.width if last else 0, "height": last.height if last else 0, "keyframes": keyframes,
            "keyframesAfterPLI": after_pli, "nacked": nacked, "dropped": len(DROPPED), "pixels": pixels, "status": status, "location": location,
            "deleted": deleted, "answer": answer, "audio": sound}


def main():
    url, wanted, points = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
    def option(name):
        return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None
    token, pli, nack, audio = option("--token"), option("--pli"), option("--nack"), option("--audio")
    if option("--drop"):
        lose_every(int(option("--drop")))
    if "--aes-cm-only" in sys.argv:
        import aiortc.rtcdtlstransport as dtls
        dtls.SRTP_PROFILES[:] = [dtls.SRTP_AES128_CM_SHA1_80]
    try:
        result = asyncio.run(asyncio.wait_for(run(url, wanted, points, token, pli and int(pli), nack and int(nack), audio and float(audio)), 90))
    except Exception as error:  # noqa: BLE001 - any failure is the test's answer
        result = {"error": f"{type(error).__name__}: {error}"}
    print(json.dumps(result))
    return 1 if "error" in result else 0


if __name__ == "__main__":
    sys.exit(main())
