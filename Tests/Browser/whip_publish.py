"""Headless Chromium as a WHIP publisher: a canvas of known colours, its captureStream sent
over WebRTC as H.264, the WHIP exchange done in the page's JavaScript. Prints what the page
saw, as JSON.

    whip_publish.py WHIP_URL SECONDS [--token TOKEN]

The page (about:blank, a canvas of 320x240 made by the script) paints its left half red
(255,0,0) and its right half blue (0,0,255) every 33 ms, offers the canvas' stream sendonly
with H.264 alone (packetization-mode=1, setCodecPreferences) and the resolution kept under
congestion, POSTs the offer (application/sdp), sets the 201's answer, sends for SECONDS
from when the connection is up (ICE and DTLS), then DELETEs the session at the answer's
Location. Prints {"status", "location", "deleted", "framesEncoded", "encoder", "state",
"nackCount", "pliCount", "srtpCipher"} or {"error": ...} (exit 1).

Chromium runs with --disable-web-security: the page's origin (about:blank) is not the WHIP
endpoint's, and what a cross-origin publisher page needs of the endpoint (CORS) is not what
this test checks. Debian's chromium and chromium-driver; selenium from the venv of
scripts/setup.
"""

import json
import sys
import tempfile

from headless import chromium


PUBLISH = """
const [url, seconds, token, done] = arguments;
const result = {};
try {
  const canvas = document.createElement('canvas');
  canvas.width = 320; canvas.height = 240;
  document.body.appendChild(canvas);
  const context = canvas.getContext('2d');
  const paint = () => {
    context.fillStyle = 'rgb(255,0,0)'; context.fillRect(0, 0, 160, 240);
    context.fillStyle = 'rgb(0,0,255)'; context.fillRect(160, 0, 160, 240);
  };
  paint();
  const painter = setInterval(paint, 33);
  const stream = canvas.captureStream(30);
  const pc = new RTCPeerConnection();
  const transceiver = pc.addTransceiver(stream.getVideoTracks()[0], {direction: 'sendonly', streams: [stream]});
  const h264 = RTCRtpSender.getCapabilities('video').codecs.filter(c => c.mimeType === 'video/H264' && /packetization-mode=1/.test(c.sdpFmtpLine || ''));
  if (h264.length === 0) throw new Error('this Chromium sends no H.264');
  transceiver.setCodecPreferences(h264);
  const parameters = transceiver.sender.getParameters();
  parameters.degradationPreference = 'maintain-resolution';
  await transceiver.sender.setParameters(parameters);
  await pc.setLocalDescription(await pc.createOffer());
  const headers = {'Content-Type': 'application/sdp'};
  if (token) headers['Authorization'] = 'Bearer ' + token;
  const response = await fetch(url, {method: 'POST', headers, body: pc.localDescription.sdp});
  result.status = response.status;
  result.location = response.headers.get('Location');
  const answer = await response.text();
  if (response.status !== 201) { result.body = answer; clearInterval(painter); pc.close(); return done(result); }
  await pc.setRemoteDescription({type: 'answer', sdp: answer});
  // The seconds of sending count from when ICE and DTLS are up, not from the answer (a
  // loaded machine's handshake would eat into them).
  await new Promise((resolve, reject) => {
    const changed = () => {
      if (pc.connectionState === 'connected') resolve();
      else if (pc.connectionState === 'failed' || pc.connectionState === 'closed') reject(new Error('the connection ' + pc.connectionState));
    };
    pc.addEventListener('connectionstatechange', changed);
    changed();
  });
  await new Promise(resolve => setTimeout(resolve, seconds * 1000));
  result.state = pc.connectionState;
  (await pc.getStats()).forEach(s => {
    if (s.type === 'transport') result.srtpCipher = s.srtpCipher;
    if (s.type === 'outbound-rtp' && s.kind === 'video') {
      result.framesEncoded = s.framesEncoded; result.encoder = s.encoderImplementation;
      result.nackCount = s.nackCount; result.pliCount = s.pliCount;
      result.width = s.frameWidth; result.height = s.frameHeight;
    }
  });
  const deleted = await fetch(new URL(result.location, url), {method: 'DELETE', headers: token ? {'Authorization': 'Bearer ' + token} : {}});
  result.deleted = deleted.status;
  clearInterval(painter);
  pc.close();
} catch (error) {
  result.error = String(error);
}
done(result);
"""


def main() -> int:
    url, seconds = sys.argv[1], float(sys.argv[2])
    token = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--token" else None
    with tempfile.TemporaryDirectory(prefix="nalcast-whip-publish-") as profile:
        driver = chromium("--mute-audio", "--disable-web-security", "--user-data-dir=" + profile)
        try:
            driver.set_script_timeout(seconds + 60)
            driver.get("about:blank")
            result = driver.execute_async_script(PUBLISH, url, seconds, token)
        finally:
            driver.quit()
    print(json.dumps(result))
    return 1 if "error" in result else 0


if __name__ == "__main__":
    sys.exit(main())
