#!/usr/bin/python3
"""The relay benchmark's RTSP source: GStreamer's RTSP server (gir1.2-gst-rtsp-server-1.0,
python3-gi, so Debian's /usr/bin/python3) re-serving a live Annex-B stream read from TCP.

usage: rtsp_source.py PORT PATH SOURCE_PORT

Listens on 127.0.0.1:PORT and serves rtsp://127.0.0.1:PORT/PATH (RTP over the RTSP
connection, TCP interleaved, so that no datagram can be lost on a loaded machine): one
shared media that reads tcp://127.0.0.1:SOURCE_PORT (bench/c/relaysrc) from the first
client's PLAY on, and packetises its access units as they arrive (timestamped on arrival,
the SEI and parameter sets kept, SPS and PPS in front of every IDR). One line per event on
stderr: "listening on rtsp://...", "client connected". Exits on SIGTERM or SIGINT.
"""
import sys

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstRtsp", "1.0")
gi.require_version("GstRtspServer", "1.0")
from gi.repository import Gst, GstRtsp, GstRtspServer  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "Tests" / "Servers"))
from gst_rtsp import log, serve  # noqa: E402


def main():
    if len(sys.argv) != 4:
        log(__doc__)
        return 64
    port, path, source = sys.argv[1], sys.argv[2], int(sys.argv[3])
    Gst.init(None)

    server = GstRtspServer.RTSPServer()
    server.set_address("127.0.0.1")
    server.set_service(port)

    factory = GstRtspServer.RTSPMediaFactory()
    factory.set_shared(True)
    factory.set_protocols(GstRtsp.RTSPLowerTrans.TCP)
    factory.set_launch(
        f"( tcpclientsrc host=127.0.0.1 port={source} do-timestamp=true blocksize=1048576 "
        "! h264parse config-interval=-1 ! video/x-h264,stream-format=byte-stream,alignment=au "
        "! rtph264pay name=pay0 pt=96 aggregate-mode=zero-latency )")
    server.get_mount_points().add_factory(path, factory)
    server.connect("client-connected", lambda *_: log("client connected"))
    return serve(server, port, path)


if __name__ == "__main__":
    sys.exit(main())
