#!/bin/bash
# A headless sway for the Wayland tests (Tests/TestSupport/SwaySession.swift), run as an
# unprivileged user (sway refuses root): the headless backend with the pixman renderer (no
# GPU), one output of $2 filled by swaybg with a solid colour. $1 is its directory
# (XDG_RUNTIME_DIR); it writes the Wayland display's name to DIR/wayland and sway's IPC
# socket to DIR/ipc, then "ready" to DIR/events.
set -u
dir=$1
size=${2:-640x360}
export XDG_RUNTIME_DIR=$dir HOME=$dir XDG_CONFIG_HOME=$dir/config
mkdir -p "$dir/config/sway"
printf 'output HEADLESS-1 mode %s bg #ff0000 solid_color\n' "$size" >"$dir/config/sway/config"
WLR_BACKENDS=headless WLR_RENDERER=pixman WLR_LIBINPUT_NO_DEVICES=1 sway -c "$dir/config/sway/config" >"$dir/sway.log" 2>&1 &
for _ in $(seq 1 300); do ls "$dir"/sway-ipc.*.sock >/dev/null 2>&1 && ls "$dir"/wayland-? >/dev/null 2>&1 && break; sleep 0.05; done
basename "$(ls "$dir"/wayland-? | head -1)" >"$dir/wayland"
ls "$dir"/sway-ipc.*.sock | head -1 >"$dir/ipc"
echo ready >"$dir/events"
wait
