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
        libavformat-dev=7:5.1.9-0+deb12u1 \
        libavcodec-dev=7:5.1.9-0+deb12u1 \
        libavutil-dev=7:5.1.9-0+deb12u1 \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Sources ./Sources
# --static-swift-stdlib: the binary needs no Swift runtime, and it does not link Foundation.
RUN swift build -c release --static-swift-stdlib \
    && install -D -m 0755 .build/release/nalcast /out/nalcast

FROM debian:bookworm-slim AS runtime
# runtime-packages: exactly what `ldd nalcast` lists beyond the base image (libc6,
# libgcc-s1 and libstdc++6 are part of every bookworm base and follow its security updates).
# Most of them come with libavformat59/libavcodec59 (the container writer's muxers):
# Debian's FFmpeg links every codec library it was built with.
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        libaom3=3.6.0-1+deb12u1 \
        libavcodec59=7:5.1.9-0+deb12u1 \
        libavformat59=7:5.1.9-0+deb12u1 \
        libavutil57=7:5.1.9-0+deb12u1 \
        libblkid1=2.38.1-5+deb12u3 \
        libbluray2=1:1.3.4-1 \
        libbrotli1=1.0.9-2+b6 \
        libbsd0=0.11.7-2 \
        libbz2-1.0=1.0.8-5+b1 \
        libcairo-gobject2=1.16.0-7 \
        libcairo2=1.16.0-7 \
        libchromaprint1=1.5.1-2+b1 \
        libcjson1=1.7.15-1+deb12u4 \
        libcodec2-1.0=1.0.5-1 \
        libcom-err2=1.47.0-2 \
        libdatrie1=0.2.13-2+b1 \
        libdav1d6=1.0.0-2+deb12u1 \
        libdrm2=2.4.114-1+b1 \
        libev4=1:4.33-1 \
        libexpat1=2.5.0-1+deb12u1 \
        libffi8=3.4.4-1 \
        libfontconfig1=2.14.1-4 \
        libfreetype6=2.12.1+dfsg-5+deb12u4 \
        libfribidi0=1.0.8-2.1 \
        libgcrypt20=1.10.1-3 \
        libgdk-pixbuf-2.0-0=2.42.10+dfsg-1+deb12u2 \
        libglib2.0-0=2.74.6-2+deb12u8 \
        libgme0=0.6.3-6 \
        libgmp10=2:6.2.1+dfsg1-1.1 \
        libgnutls30=3.7.9-2+deb12u6 \
        libgomp1=12.2.0-14+deb12u1 \
        libgpg-error0=1.46-1 \
        libgraphite2-3=1.3.14-1 \
        libgsm1=1.0.22-1 \
        libgssapi-krb5-2=1.20.1-2+deb12u3 \
        libharfbuzz0b=6.0.0+dfsg-3 \
        libhogweed6=3.8.1-2 \
        libhwy1=1.0.3-3+deb12u1 \
        libicu72=72.1-3+deb12u1 \
        libidn2-0=2.3.3-1+b1 \
        libjpeg62-turbo=1:2.1.5-2 \
        libjxl0.7=0.7.0-10+deb12u1 \
        libk5crypto3=1.20.1-2+deb12u3 \
        libkeyutils1=1.6.3-2 \
        libkrb5-3=1.20.1-2+deb12u3 \
        libkrb5support0=1.20.1-2+deb12u3 \
        liblcms2-2=2.14-2 \
        liblzma5=5.4.1-1 \
        libmbedcrypto7=2.28.3-1 \
        libmd0=1.0.4-2 \
        libmfx1=22.5.4-1 \
        libmount1=2.38.1-5+deb12u3 \
        libmp3lame0=3.100-6 \
        libmpg123-0=1.31.2-1+deb12u1 \
        libnettle8=3.8.1-2 \
        libnorm1=1.5.9+dfsg-2 \
        libnuma1=2.0.16-1 \
        libogg0=1.3.5-3 \
        libopenjp2-7=2.5.0-2+deb12u3 \
        libopenmpt0=0.6.9-1 \
        libopus0=1.3.1-3 \
        libp11-kit0=0.24.1-2 \
        libpango-1.0-0=1.50.12+ds-1 \
        libpangocairo-1.0-0=1.50.12+ds-1 \
        libpangoft2-1.0-0=1.50.12+ds-1 \
        libpcre2-8-0=10.42-1 \
        libpgm-5.3-0=5.3.128~dfsg-2 \
        libpixman-1-0=0.42.2-1 \
        libpng16-16=1.6.39-2+deb12u4 \
        librabbitmq4=0.11.0-1+deb12u3 \
        librav1e0=0.5.1-6 \
        librist4=0.2.7+dfsg-1 \
        librsvg2-2=2.54.7+dfsg-1~deb12u1 \
        libselinux1=3.4-1+b6 \
        libshine3=3.1.1-2 \
        libsnappy1v5=1.1.9-3 \
        libsodium23=1.0.18-1+deb12u1 \
        libsoxr0=0.1.3-4 \
        libspeex1=1.2.1-2 \
        libsrt1.5-gnutls=1.5.1-1+deb12u2 \
        libssh-gcrypt-4=0.10.6-0+deb12u3 \
        libssl3=3.0.19-1~deb12u2 \
        libsvtav1enc1=1.4.1+dfsg-1 \
        libswresample4=7:5.1.9-0+deb12u1 \
        libtasn1-6=4.19.0-2+deb12u1 \
        libthai0=0.1.29-1 \
        libtheora0=1.1.1+dfsg.1-16.1+deb12u1 \
        libtwolame0=0.4.0-2 \
        libudfread0=1.1.2-1 \
        libunistring2=1.0-2 \
        libva-drm2=2.17.0-1 \
        libva-x11-2=2.17.0-1 \
        libva2=2.17.0-1 \
        libvdpau1=1.5-2 \
        libvorbis0a=1.3.7-1 \
        libvorbisenc2=1.3.7-1 \
        libvorbisfile3=1.3.7-1 \
        libvpx7=1.12.0-1+deb12u5 \
        libwebp7=1.2.4-0.2+deb12u1 \
        libwebpmux3=1.2.4-0.2+deb12u1 \
        libx11-6=2:1.8.4-2+deb12u2 \
        libx11-xcb1=2:1.8.4-2+deb12u2 \
        libx264-164=2:0.164.3095+gitbaee400-3 \
        libx265-199=3.5-2+b1 \
        libxau6=1:1.0.9-1 \
        libxcb-dri3-0=1.15-1 \
        libxcb-randr0=1.15-1 \
        libxcb-render0=1.15-1 \
        libxcb-shm0=1.15-1 \
        libxcb-xfixes0=1.15-1 \
        libxcb1=1.15-1 \
        libxdmcp6=1:1.1.2-3 \
        libxext6=2:1.3.4-1+b1 \
        libxfixes3=1:6.0.0-2 \
        libxml2=2.9.14+dfsg-1.3~deb12u5 \
        libxrender1=1:0.9.10-1.1 \
        libxvidcore4=2:1.3.7-1 \
        libyuv0=0.0~git20230123.b2528b0-1 \
        libzmq5=4.3.4-6 \
        libzvbi0=0.2.41-1+deb12u1 \
        ocl-icd-libopencl1=2.3.1-1 \
        zlib1g=1:1.2.13.dfsg-1 \
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
