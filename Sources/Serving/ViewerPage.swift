/// The browser page `produce --web` serves at `/`: it plays the stream of `/ws` with
/// WebCodecs, with nothing to build and nothing fetched from elsewhere.
///
/// What it does, in the order the bytes go:
/// - a token given in the address (`?token=`) is taken once, kept in `sessionStorage` and
///   removed from the address bar (`history.replaceState`); it goes with each WebSocket
///   (`ws?token=`, a browser's WebSocket sends no `Authorization`);
/// - a WebSocket to `ws` beside the page (so a reverse proxy may mount it under a path;
///   `wss:` when the page came over https), `binaryType` arraybuffer, reconnecting by itself
///   with a backoff (0.25 s doubling to 5 s, reset once a message arrives);
/// - each message is an `AccessUnitMessage`: the 18-byte header, then Annex-B bytes;
/// - at a keyframe whose SPS differs from the one the decoder has, `VideoDecoder.configure`
///   with the codec `avc1.PPCCLL` read from that SPS (profile_idc, constraint flags,
///   level_idc), no `description` (the chunks are Annex-B) and `optimizeForLatency`;
///   until then, and after a decoder error, pictures wait for the next keyframe;
/// - one `EncodedVideoChunk` per message (timestamp: pts_90k in µs); each decoded frame is
///   drawn to the canvas at once and closed;
/// - the line under the picture: resolution, frames painted per second, and capture →
///   paint latency (`Date.now()` against the capture time, meaningful when the producer's
///   clock and the browser's agree).
///
/// - how a connection ended, told apart: "the stream ended" (a close frame 1000 or 1001 and a
///   clean closing handshake: the producer stopped, the relay's source ended; the page waits
///   for it to come back, attempts that find no server say nothing more) from "the connection
///   was lost" (1006, or no clean closing handshake: a network or server failure) and from the
///   server closing it for a reason (another code: a protocol error, no progress);
///
/// `window.nalcastViewer` holds the same figures for scripts (the end-to-end test reads it):
/// `state` (`connecting`, `playing`, `ended`, `lost`, `closed`), `closes` (each connection's
/// end: `code`, `reason`, `wasClean`; the last 20) and `problem` (the last problem stated; a
/// stream's end is none).
/// WebCodecs exists only in a secure context (https, or http from localhost/127.0.0.1):
/// elsewhere the page says so and names the fixes, `--tls` or a TLS reverse proxy, or
/// `?transport=webrtc` (WebRTC needs no secure context to receive).
///
/// Over WebRTC (`?transport=webrtc`, or by itself in a browser that has no WebCodecs even in
/// a secure context): a `recvonly` video
/// transceiver's offer POSTed to `whep` beside the page (WHEP, the token as `Authorization:
/// Bearer`), the answer set, the track played by a muted `<video>` that stays out of sight;
/// each frame it presents (`requestVideoFrameCallback`) is drawn to the same canvas, with
/// the same figures: latency is `Date.now()` against the frame's `rtpTimestamp`, which is
/// nalcast's capture time (`RTPSender`). A connection that fails or closes is
/// DELETEd and offered again with the same backoff. `window.nalcastViewer.transport` says
/// which (`websocket` or `webrtc`). The offer receives audio too: a stream with sound sends
/// it as Opus, played by an `<audio>` element (a click on the page starts it where the
/// browser refuses to play sound unasked); `audioPackets` (getStats' packetsReceived, once a
/// second) says how much came, `srtpCipher` (its transport's) how the media is protected.
public enum ViewerPage {
    public static let html = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>nalcast</title>
        <style>
          body { margin: 0; background: #111; color: #ddd; font: 14px system-ui, sans-serif; }
          canvas { display: block; max-width: 100vw; max-height: calc(100vh - 2.5em); margin: 0 auto; background: #000; }
          #line { padding: 0.5em 1em; font-variant-numeric: tabular-nums; }
          #line.problem { color: #f88; }
        </style>
        </head>
        <body>
        <canvas id="picture" width="640" height="360"></canvas>
        <video id="remote" muted playsinline autoplay style="position: fixed; left: 0; top: 0; width: 2px; height: 2px; opacity: 0.01; pointer-events: none"></video>
        <div id="line">connecting…</div>
        <script>
        'use strict';
        // A token given as ?token= (the address nalcast printed) is taken once: kept for this
        // tab (a reload still plays), sent with each WebSocket, and dropped from the address
        // bar and the history, so it is not copied, bookmarked or sent as a referrer.
        const token = (() => {
          const params = new URLSearchParams(location.search);
          const given = params.get('token');
          if (given === null) return sessionStorage.getItem('nalcast-token');
          sessionStorage.setItem('nalcast-token', given);
          params.delete('token');
          const rest = params.toString();
          history.replaceState(history.state, '', location.pathname + (rest ? '?' + rest : '') + location.hash);
          return given;
        })();
        const canvas = document.getElementById('picture');
        const context = canvas.getContext('2d');
        const line = document.getElementById('line');
        // What the page has seen, for the line below the picture and for scripts.
        const viewer = window.nalcastViewer = {
          connected: false, connects: 0, messages: 0, painted: 0, width: 0, height: 0,
          fps: 0, latencyMs: null, codec: null, errors: 0, problem: null,
          state: 'connecting', closes: [], transport: null,
        };
        let paintedThisSecond = 0, second = performance.now();

        // A picture is on the canvas: the figures, and the line under it.
        function counted(latencyMs) {
          viewer.painted++;
          viewer.width = canvas.width;
          viewer.height = canvas.height;
          if (latencyMs !== null) viewer.latencyMs = latencyMs;
          paintedThisSecond++;
          const now = performance.now();
          if (now - second >= 1000) {
            viewer.fps = paintedThisSecond * 1000 / (now - second);
            paintedThisSecond = 0;
            second = now;
          }
          say(`${viewer.width}x${viewer.height}  ${viewer.fps.toFixed(1)} fps  ` +
              (viewer.latencyMs === null ? 'latency unknown' : `latency ${viewer.latencyMs.toFixed(1)} ms (capture to paint)`) +
              (viewer.transport === 'webrtc' ? '  WebRTC' : ''));
        }

        function say(text, problem) {
          line.textContent = text;
          line.className = problem ? 'problem' : '';
          if (problem) viewer.problem = text;
        }

        // WebRTC when asked, or in a browser without WebCodecs at all; a page without it for
        // want of a secure context says why, and how to play over WebRTC instead.
        const asked = new URLSearchParams(location.search).get('transport');
        const webrtc = 'RTCPeerConnection' in window;
        if (webrtc && (asked === 'webrtc' || (window.isSecureContext && !('VideoDecoder' in window)))) {
          viewer.transport = 'webrtc';
          startWebRTC();
        } else if (!('VideoDecoder' in window)) {
          say('This browser cannot decode here: WebCodecs (VideoDecoder) needs a secure context. ' +
              'Open the page as http://localhost:PORT/ or http://127.0.0.1:PORT/ on this machine, ' +
              'or serve it over https: nalcast --tls self-signed (or --tls-cert and --tls-key), or a TLS (https) reverse proxy.' +
              (webrtc ? ' Or play it over WebRTC here: add ?transport=webrtc to the address.' : ''), true);
        } else {
          viewer.transport = 'websocket';
          start();
        }

        // WebRTC: WHEP at `whep` beside the page; the video's frames drawn to the canvas.
        function startWebRTC() {
          const video = document.getElementById('remote');
          const sound = new Audio();
          setInterval(() => pc && pc.getStats().then(report => report.forEach(s => {
            if (s.type === 'transport' && s.srtpCipher) viewer.srtpCipher = s.srtpCipher;
            if (s.type !== 'inbound-rtp' || s.kind !== 'audio') return;
            viewer.audioPackets = s.packetsReceived;
          })).catch(() => {}), 1000);
          let backoff = 250, session = null, pc = null;
          const headers = token ? { Authorization: 'Bearer ' + token } : {};

          function draw(now, frame) {
            if (canvas.width !== video.videoWidth || canvas.height !== video.videoHeight) {
              canvas.width = video.videoWidth;
              canvas.height = video.videoHeight;
            }
            context.drawImage(video, 0, 0);
            counted(latency(frame));
            video.requestVideoFrameCallback(draw);
          }

          // Capture to paint: nalcast's RTP timestamps are the capture time (CLOCK_REALTIME,
          // 90 kHz, modulo 2^32: 13 h, read as the latest such time before now, so a clock
          // step backwards reads as 13 h, never as a negative figure); Chromium's own
          // captureTime when it has none.
          function latency(frame) {
            if (frame.rtpTimestamp !== undefined) {
              const now = Date.now() * 90;
              const ticks = (now - frame.rtpTimestamp) % 4294967296;
              return (ticks < 0 ? ticks + 4294967296 : ticks) / 90;
            }
            return frame.captureTime ? performance.now() - frame.captureTime : null;
          }

          function retry(text) {
            viewer.connected = false;
            if (pc) pc.close();
            pc = null;
            if (session) fetch(session, { method: 'DELETE', headers, keepalive: true }).catch(() => {});
            session = null;
            say(`${text}; trying again in ${backoff / 1000} s`, true);
            setTimeout(offer, backoff);
            backoff = Math.min(backoff * 2, 5000);
          }

          async function offer() {
            const mine = pc = new RTCPeerConnection();
            mine.addTransceiver('video', { direction: 'recvonly' });
            mine.addTransceiver('audio', { direction: 'recvonly' });
            mine.ontrack = event => {
              if (event.track.kind === 'audio') {
                sound.srcObject = new MediaStream([event.track]);
                sound.play().catch(() => addEventListener('click', () => sound.play(), { once: true }));
                return;
              }
              // As little buffering as the browser allows: a live picture, not a smooth one.
              if ('jitterBufferTarget' in event.receiver) event.receiver.jitterBufferTarget = 0;
              if ('playoutDelayHint' in event.receiver) event.receiver.playoutDelayHint = 0;
              video.srcObject = new MediaStream([event.track]);
              video.play().catch(() => {});
            };
            mine.onconnectionstatechange = () => {
              if (pc !== mine) return;
              if (mine.connectionState === 'connected') {
                viewer.connected = true;
                viewer.connects++;
                viewer.state = 'playing';
                backoff = 250;
                say('connected (WebRTC), waiting for a picture…');
              } else if (mine.connectionState === 'failed' || mine.connectionState === 'closed') {
                viewer.state = 'lost';
                retry(`the WebRTC connection ${mine.connectionState}`);
              }
            };
            try {
              await mine.setLocalDescription(await mine.createOffer());
              const response = await fetch('whep', {
                method: 'POST', headers: Object.assign({ 'Content-Type': 'application/sdp' }, headers), body: mine.localDescription.sdp,
              });
              const text = await response.text();
              if (response.status !== 201) return retry(`WHEP answered ${response.status}: ${text.trim()}`);
              session = new URL(response.headers.get('Location'), location.href).href;
              await mine.setRemoteDescription({ type: 'answer', sdp: text });
            } catch (error) {
              retry(`WHEP failed: ${error.message}`);
            }
          }

          addEventListener('pagehide', () => { if (session) fetch(session, { method: 'DELETE', headers, keepalive: true }); });
          video.requestVideoFrameCallback(draw);
          offer();
        }

        function start() {
          let decoder = null;
          let sps = null;            // the SPS bytes the decoder is configured with, as text
          let waitingForKey = true;  // pictures are skipped up to the next keyframe
          const captureTimes = new Map();  // chunk timestamp (µs) -> capture time (ms)
          let backoff = 250;

          function makeDecoder() {
            decoder = new VideoDecoder({ output: paint, error: failed });
            sps = null;
            waitingForKey = true;
          }

          function paint(frame) {
            if (canvas.width !== frame.displayWidth || canvas.height !== frame.displayHeight) {
              canvas.width = frame.displayWidth;
              canvas.height = frame.displayHeight;
            }
            context.drawImage(frame, 0, 0);
            const captured = captureTimes.get(frame.timestamp);
            captureTimes.delete(frame.timestamp);
            frame.close();
            counted(captured !== undefined ? Date.now() - captured : null);
          }

          function failed(error) {
            viewer.errors++;
            say(`decoder error: ${error.message}; waiting for the next keyframe`, true);
            makeDecoder();
          }

          // The SPS of an Annex-B access unit (the bytes after its start code), or null.
          function findSPS(bytes) {
            for (let i = 0; i + 3 < bytes.length; i++) {
              if (bytes[i] !== 0 || bytes[i + 1] !== 0 || bytes[i + 2] !== 1) continue;
              const start = i + 3;
              if ((bytes[start] & 0x1f) !== 7) continue;
              let end = start + 1;
              while (end + 2 < bytes.length && !(bytes[end] === 0 && bytes[end + 1] === 0 && (bytes[end + 2] === 1 || bytes[end + 2] === 0))) end++;
              return bytes.subarray(start, end + 2 < bytes.length ? end : bytes.length);
            }
            return null;
          }

          function hex(byte) { return byte.toString(16).padStart(2, '0'); }

          function receive(data) {
            const view = new DataView(data);
            if (data.byteLength < 18 || view.getUint8(0) !== 1) {
              say('the server speaks another version of the stream; reload the page', true);
              return;
            }
            viewer.messages++;
            backoff = 250;
            const flags = view.getUint8(1);
            const key = (flags & 1) !== 0;
            const captureUs = (flags & 2) !== 0 ? Number(view.getBigUint64(2)) : null;
            const timestamp = Math.round(Number(view.getBigUint64(10)) * 100 / 9);
            const bytes = new Uint8Array(data, 18);
            if (key) {
              const set = findSPS(bytes);
              const text = set && Array.from(set).join(',');
              if (set && set.length >= 4 && (text !== sps || decoder.state !== 'configured')) {
                if (decoder.state === 'closed') makeDecoder();
                viewer.codec = `avc1.${hex(set[1])}${hex(set[2])}${hex(set[3])}`;
                decoder.configure({ codec: viewer.codec, optimizeForLatency: true });
                sps = text;
              }
              if (sps) waitingForKey = false;
            }
            // A decoder far behind (a slow machine) skips to the next keyframe rather than lag.
            if (!key && decoder.decodeQueueSize > 30) waitingForKey = true;
            if (waitingForKey || decoder.state !== 'configured') return;
            if (captureUs !== null) captureTimes.set(timestamp, captureUs / 1000);
            if (captureTimes.size > 300) captureTimes.delete(captureTimes.keys().next().value);
            decoder.decode(new EncodedVideoChunk({ type: key ? 'key' : 'delta', timestamp, data: bytes }));
          }

          function connect() {
            const url = new URL('ws', location.href);
            url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
            if (token) url.searchParams.set('token', token);
            const socket = new WebSocket(url);
            let opened = false;
            socket.binaryType = 'arraybuffer';
            socket.onopen = () => {
              opened = true;
              viewer.connected = true;
              viewer.connects++;
              viewer.state = 'playing';
              waitingForKey = true;
              say('connected, waiting for a picture…');
            };
            socket.onmessage = event => receive(event.data);
            socket.onclose = event => {
              viewer.connected = false;
              if (opened) ended(event); else unreachable(event);
              setTimeout(connect, backoff);
              backoff = Math.min(backoff * 2, 5000);
            };
          }

          // A connection that was open ended: the stream's end, a loss, or the server's reason.
          function ended(event) {
            const close = { code: event.code, reason: event.reason, wasClean: event.wasClean };
            viewer.closes.push(close);
            if (viewer.closes.length > 20) viewer.closes.shift();
            const why = `${event.code}${event.reason ? ': ' + event.reason : ''}`;
            const again = `trying again in ${backoff / 1000} s`;
            if (event.wasClean && (event.code === 1000 || event.code === 1001)) {
              viewer.state = 'ended';
              say(`the stream ended (${why}); waiting for it to start again`, false);
            } else if (!event.wasClean || event.code === 1006) {
              viewer.state = 'lost';
              say(`the connection was lost (${why}); ${again}`, true);
            } else {
              viewer.state = 'closed';
              say(`the server closed the connection (${why}); ${again}`, true);
            }
          }

          // An attempt that never connected: after the stream's end the server may be gone
          // for good or for a restart, which is no problem; otherwise it is one.
          function unreachable(event) {
            if (viewer.state === 'ended') return;
            say(`cannot connect (${event.code}); trying again in ${backoff / 1000} s`, true);
          }

          makeDecoder();
          connect();
        }
        </script>
        </body>
        </html>

        """
}
