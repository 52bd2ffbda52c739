#!/bin/bash
# A headless GNOME session for the Wayland tests (Tests/TestSupport/MutterSession.swift), run
# as an unprivileged user inside `dbus-run-session`: PipeWire, WirePlumber, mutter with one
# virtual monitor and no X11, a GTK client (mutter-client.py) that fills the monitor with
# known colours and holds a ScreenCast of it, and xdg-desktop-portal with a backend that
# answers as a user choosing the monitor (portal-backend.py). $1 is the session's directory
# (XDG_RUNTIME_DIR), $2 the monitor's size.
set -u
dir=$1
size=${2:-1280x720}
export XDG_RUNTIME_DIR=$dir HOME=$dir XDG_CONFIG_HOME=$dir/config XDG_STATE_HOME=$dir/state
pipewire >"$dir/pipewire.log" 2>&1 &
# WirePlumber (which links streams to nodes) exits when PipeWire's socket is not there yet;
# streams are linked only once it is connected (its export client is there).
for _ in $(seq 1 200); do [ -S "$dir/pipewire-0" ] && break; sleep 0.02; done
wireplumber >"$dir/wireplumber.log" 2>&1 &
for _ in $(seq 1 250); do pw-cli ls Client 2>/dev/null | grep -q "WirePlumber \\[export\\]" && break; sleep 0.02; done
mutter --headless --virtual-monitor "$size" --wayland --no-x11 --wayland-display wayland-nalcast >"$dir/mutter.log" 2>&1 &
# mutter makes its socket when it is ready for clients; its ScreenCast name is on the bus by then.
for _ in $(seq 1 300); do [ -S "$dir/wayland-nalcast" ] && break; sleep 0.05; done
echo "$DBUS_SESSION_BUS_ADDRESS" >"$dir/bus"
# The portal: our backend on the bus first, then xdg-desktop-portal, told to use it.
mkdir -p "$dir/portals"
printf '[portal]\nDBusName=org.freedesktop.impl.portal.desktop.nalcasttest\nInterfaces=org.freedesktop.impl.portal.ScreenCast;\nUseIn=nalcast-test\n' >"$dir/portals/nalcast-test.portal"
/usr/bin/python3 "$(dirname "$0")/portal-backend.py" "$dir" >"$dir/backend.log" 2>&1 &
gdbus wait --session --timeout 10 org.freedesktop.impl.portal.desktop.nalcasttest
# xdg-desktop-portal 1.16 reads the backend's AvailableCursorModes once, at its start: a test
# that changes them (DIR/cursor-modes) writes DIR/portal-restart and stops it (DIR/portal.pid),
# and it starts again.
(while :; do
    XDG_DESKTOP_PORTAL_DIR=$dir/portals XDG_CURRENT_DESKTOP=nalcast-test /usr/libexec/xdg-desktop-portal -v >>"$dir/portal.log" 2>&1 &
    echo $! >"$dir/portal.pid"
    wait $!
    rm "$dir/portal-restart" 2>/dev/null || break
done) &
gdbus wait --session --timeout 10 org.freedesktop.portal.Desktop
WAYLAND_DISPLAY=wayland-nalcast GDK_BACKEND=wayland /usr/bin/python3 "$(dirname "$0")/mutter-client.py" "$dir" >"$dir/client.log" 2>&1 &
wait
