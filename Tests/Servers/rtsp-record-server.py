#!/usr/bin/python3
"""An RTSP server that takes publishes of H.264 (ANNOUNCE, SETUP, RECORD, with RTP
interleaved on the RTSP connection), for nalcast's tests: GStreamer's RTSP server
(gir1.2-gst-rtsp-server-1.0, python3-gi), run with Debian's /usr/bin/python3.

usage: rtsp-record-server.py PORT PATH PREFIX [--audio]

Listens on 127.0.0.1:PORT and takes publishes to PATH (such as /live), one after another
or at once, each written to a file of its own, PREFIX + "NN.h264" (NN = 01, 02... in the
order they are announced): the H.264 as received, in Annex B byte-stream form, written
unbuffered so that a kill loses nothing already received.

With --audio a publish is H.264 and AAC, as FFmpeg's RTSP muxer (nalcast's push) announces
them: "m=video 0 RTP/AVP 96", H264/90000, packetization-mode=1, then "m=audio 0 RTP/AVP 97",
MPEG4-GENERIC/48000/2, mode=AAC-hbr;sizelength=13;indexlength=3;indexdeltalength=3 and the
AudioSpecificConfig in config=. Both go into one
MPEG-TS file, PREFIX + "NN.ts", with the times RTP and RTCP gave them (the two tracks
put on one clock by their sender reports), again unbuffered. One line per event on stderr:
"listening on rtsp://...", "publish N started: FILE", "publish N ended" (once everything
received is in the file). Exits on SIGTERM or SIGINT.
"""
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtsp", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import Gst, GstRtsp, GstRtspServer  # noqa: E402
from gst_rtsp import log, serve  # noqa: E402

# depay0 names the stream the ANNOUNCE's SDP describes; h264parse turns the depayloaded
# access units into Annex B with SPS and PPS in front of every IDR.
PIPELINE = (
    "( rtph264depay name=depay0 ! h264parse config-interval=-1 "
    "! video/x-h264,stream-format=byte-stream,alignment=au "
    "! filesink name=sink sync=false async=false buffer-mode=unbuffered )"
)

# The same video, and depay1 for the AAC stream: rtpmp4gdepay takes RFC 3640's
# MPEG4-GENERIC (mode AAC-hbr, what FFmpeg sends), aacparse frames it for mpegtsmux (which
# writes each frame with an ADTS header). Queues keep one track from stalling the other.
AUDIO_PIPELINE = (
    "( mpegtsmux name=mux ! filesink name=sink sync=false async=false buffer-mode=unbuffered "
    "rtph264depay name=depay0 ! h264parse config-interval=-1 "
    "! video/x-h264,stream-format=byte-stream,alignment=au ! queue ! mux. "
    "rtpmp4gdepay name=depay1 ! aacparse ! queue ! mux. )"
)


def rtpbin_added(_pipeline, element):
    """The publish's rtpbin times each packet by its RTP timestamp, the tracks put on one
    clock by their sender reports (buffer-mode none): what the sender stamped, however late a
    loaded machine hands packets on (the default, slave mode, follows arrival times: a
    delayed burst moved one track by 100 ms against the other)."""
    factory = element.get_factory()
    if factory is not None and factory.get_name() == "rtpbin":
        element.set_property("buffer-mode", 0)
        log("rtpbin: buffer-mode none")


def main():
    audio = sys.argv[4:] == ["--audio"]
    if len(sys.argv) != 4 and not audio:
        log(__doc__)
        return 64
    port, path, prefix = sys.argv[1], sys.argv[2], sys.argv[3]
    extension = "ts" if audio else "h264"
    Gst.init(None)

    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(port)

    factory = GstRtspServer.RTSPMediaFactory()
    factory.set_transport_mode(GstRtspServer.RTSPTransportMode.RECORD)
    factory.set_protocols(GstRtsp.RTSPLowerTrans.TCP)
    factory.set_launch(AUDIO_PIPELINE if audio else PIPELINE)
    factory.set_latency(200)
    # A publish that ends (TEARDOWN, or the connection closed) is torn down with an EOS sent
    # through the pipeline first, and "unprepared" comes once it reached the file: the jitter
    # buffer hands on what it still holds (its latency's worth, the last pictures) instead of
    # dropping it as the pipeline stops.
    factory.set_eos_shutdown(True)

    publishes = [0]

    def constructed(_factory, media):
        publishes[0] += 1
        number = publishes[0]
        name = "%s%02d.%s" % (prefix, number, extension)
        media.get_element().get_by_name("sink").set_property("location", name)
        pipeline = media.get_element().get_parent()
        if pipeline is not None:
            pipeline.connect("element-added", rtpbin_added)
        log("publish %d started: %s" % (number, name))
        media.connect("unprepared", lambda _media: log("publish %d ended" % number))

    factory.connect("media-constructed", constructed)
    server.get_mount_points().add_factory(path, factory)
    return serve(server, port, path)


if __name__ == "__main__":
    sys.exit(main())
