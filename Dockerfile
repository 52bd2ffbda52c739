# nalcast container image: build with the official Swift image, run on bookworm-slim with
# only the C libraries the binary links. See docs/operations.md, "Running in containers".
#
#   docker build -t nalcast .
#   docker run --rm -p 7264:7264 nalcast            # the test pattern on port 7264
#   ffplay -flags low_delay -probesize 32 -analyzeduration 0 -framerate 30 -f h264 tcp://127.0.0.1:7264
#
# scripts/container-smoke proves the runtime stage without a Docker engine: it installs the
# packages listed below (read from this file) into a debootstrapped bookworm and runs the
# binary there.

FROM swift:6.3-bookworm AS build
# The -dev packages behind the C shim targets (scripts/setup installs the same on a host).
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        pkg-config=1.8.1-1 \
        libx264-dev=2:0.164.3095+gitbaee400-3 \
        libev-dev=1:4.33-1 \
        libyuv-dev=0.0~git20230123.b2528b0-1 \
        libxcb1-dev=1.15-1 \
        libxcb-shm0-dev=1.15-1 \
        libxcb-xfixes0-dev=1.15-1 \
        libxcb-randr0-dev=1.15-1 \
        libxcb-damage0-dev=1.15-1 \
        libxcb-xinput-dev=1.15-1 \
        libxcb-xtest0-dev=1.15-1 \
        libavformat-dev=7:5.1.9-0+deb12u1 \
        libavcodec-dev=7:5.1.9-0+deb12u1 \
        libavutil-dev=7:5.1.9-0+deb12u1 \
        libswresample-dev=7:5.1.9-0+deb12u1 \
        libpulse-dev=16.1+dfsg1-2+b1 \
        libssl-dev=3.0.19-1~deb12u2 \
        libpipewire-0.3-dev=0.3.65-3+deb12u1 \
        libsystemd-dev=252.39-1~deb12u2 \
        libwayland-dev=1.21.0-1 \
        libsrtp2-dev=2.5.0-3 \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Sources ./Sources
# --static-swift-stdlib: the binary needs no Swift runtime, and it does not link Foundation.
RUN swift build -c release --static-swift-stdlib \
    && install -D -m 0755 .build/release/nalcast /out/nalcast

FROM debian:bookworm-slim AS runtime
# The version of the binary (`nalcast --version`) and of scripts/package's .deb: PackageTests
# checks that they agree.
LABEL org.opencontainers.image.title="nalcast" \
      org.opencontainers.image.version="0.1.0"
# runtime-packages: exactly what `ldd nalcast` lists beyond the base image (libc6,
# libgcc-s1 and libstdc++6 are part of every bookworm base and follow its security updates),
# then the packages of the libraries nalcast opens with dlopen only when it writes a
# container (MP4, MPEG-TS, Matroska, FLV: Sources/CMedia/containers.h) or captures sound
# (`produce --audio`: libswresample, libpulse; Sources/CMedia/audio.h) or when a WebRTC
# viewer comes (libsrtp2: Sources/CWebRTC/srtp.c), named on this line,
# which DeployFilesTests reads and checks against the SONAMEs in the binary:
# dlopen: libavformat.so.59 libavcodec.so.59 libavutil.so.57 libswresample.so.4 libpulse.so.0 libpulse-simple.so.0 libsrtp2.so.1
# libavformat59 pulls in some 110 more packages (Debian's libavcodec59 links every codec
# library it was built with); acceptable for the image. Without them nalcast still serves
# and writes Annex-B, and a container output exits 69 naming libavformat59.
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        libx264-164=2:0.164.3095+gitbaee400-3 \
        libev4=1:4.33-1 \
        libyuv0=0.0~git20230123.b2528b0-1 \
        libjpeg62-turbo=1:2.1.5-2 \
        libxcb-shm0=1.15-1 \
        libxcb-xfixes0=1.15-1 \
        libxcb-randr0=1.15-1 \
        libxcb-damage0=1.15-1 \
        libxcb-xinput0=1.15-1 \
        libxcb1=1.15-1 \
        libxau6=1:1.0.9-1 \
        libxdmcp6=1:1.1.2-3 \
        libbsd0=0.11.7-2 \
        libmd0=1.0.4-2 \
        libavformat59=7:5.1.9-0+deb12u1 \
        libavcodec59=7:5.1.9-0+deb12u1 \
        libavutil57=7:5.1.9-0+deb12u1 \
        libswresample4=7:5.1.9-0+deb12u1 \
        libpulse0=16.1+dfsg1-2+b1 \
        libssl3=3.0.19-1~deb12u2 \
        libsrtp2-1=2.5.0-3 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --user-group --home-dir /var/lib/nalcast --create-home --shell /usr/sbin/nologin nalcast \
    && install -d -o nalcast -g nalcast /var/lib/nalcast/segments
COPY --from=build /out/nalcast /usr/local/bin/nalcast
# The nalcast user, by number so that runAsNonRoot (Kubernetes) can check it.
USER 10001:10001
WORKDIR /var/lib/nalcast
# 7264: the stream; 7265: Prometheus /metrics and /healthz when --metrics is given.
EXPOSE 7264 7265
# Healthy means a decodable picture arrives from the local stream (exit 69 when not).
HEALTHCHECK --interval=30s --timeout=10s --start-period=10s --retries=3 \
    CMD ["nalcast", "probe", "--quiet", "--seconds", "0", "--timeout", "5s", "tcp://127.0.0.1:7264"]
ENTRYPOINT ["nalcast"]
CMD ["produce", "--listen", "tcp://0.0.0.0:7264", "--allow-remote"]
