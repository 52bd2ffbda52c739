#!/usr/bin/python3
"""An RTSP camera stand-in for nalcast's tests: GStreamer's RTSP server (gir1.2-gst-rtsp-server-1.0,
python3-gi) playing a live test pattern encoded with x264 as RTP (rtph264pay), the way an IP
camera serves its stream. Run with Debian's /usr/bin/python3.

usage: rtsp-camera-server.py PORT PATH [WIDTHxHEIGHT] [--audio]

Listens on 127.0.0.1:PORT and serves PATH (such as /cam): each client that says PLAY gets
the same live stream (one shared encoder), RTP over the RTSP connection (TCP) or UDP, as the
client asks. 30 frames per second, an IDR every 30 frames, no B-frames, pictures in several
slices (x264's sliced threads, tune=zerolatency), SPS and PPS in the SDP and repeated by the
payloader before every IDR slice (config-interval=-1), between one picture's slices, as some
cameras do. With --audio, a second track: a 440 Hz sine, 48 kHz stereo AAC as MPEG4-GENERIC
(rtpmp4gpay, AAC-hbr), as a camera with a microphone sends it. One line per event on stderr: "listening on rtsp://...",
"client connected", "client gone". Exits on SIGTERM or SIGINT.
"""
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import Gst, GstRtspServer  # noqa: E402
from gst_rtsp import log, serve  # noqa: E402


AUDIO = ("audiotestsrc is-live=true wave=sine freq=440 ! audio/x-raw,rate=48000,channels=2 "
         "! avenc_aac ! rtpmp4gpay name=pay1 pt=97 ")


def main():
    audio = "--audio" in sys.argv
    args = [a for a in sys.argv if a != "--audio"]
    if len(args) not in (3, 4):
        log(__doc__)
        return 64
    port, path = args[1], args[2]
    width, height = (args[3] if len(args) == 4 else "320x240").split("x")
    Gst.init(None)

    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(port)

    factory = GstRtspServer.RTSPMediaFactory()
    factory.set_launch(
        "( videotestsrc is-live=true pattern=ball "
        "! video/x-raw,width=%s,height=%s,framerate=30/1,format=I420 "
        "! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=30 bframes=0 "
        "! video/x-h264,profile=baseline "
        "! rtph264pay name=pay0 pt=96 config-interval=-1 %s)" % (width, height, AUDIO if audio else ""))
    factory.set_shared(True)
    server.get_mount_points().add_factory(path, factory)

    def client_connected(_server, client):
        log("client connected")
        client.connect("closed", lambda _client: log("client gone"))

    server.connect("client-connected", client_connected)
    return serve(server, port, path)


if __name__ == "__main__":
    sys.exit(main())
