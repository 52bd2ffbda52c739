# Sourced by bench/relay-switches, relay-warm, relay-instructions, relay-footprint,
# relay-profile, relay-layers and relay-cut: the relay benchmark's processes on this machine
# (c/relaysrc serving the 1080p30 source file, a relay reading it, live or under callgrind),
# the counters they are measured by, and nalcast built with a measurement patch. Needs $bin,
# $source_file and $nalcast set for the processes ($work too for copy_for_valgrind, $root for
# build_relaygop, both for build_patched).

pids=()
# Stops every process started here (by PID).
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; pids=(); }

# CPU ns of a process, all its threads (/proc schedstat).
cpu_ns() { local s=0 t; for t in /proc/$1/task/*; do s=$((s + $(cut -d' ' -f1 "$t/schedstat"))); done; echo "$s"; }
# The sum of a process's threads' context switches: `switches PID voluntary|nonvoluntary`.
switches() { grep -h "^$2" /proc/$1/task/*/status | awk '{s += $2} END {print s}'; }

# relay_command KIND(c|ev|gop|nalcast) PORT NALCAST [LISTEN]: the relay's command line, reading
# the source on PORT and serving LISTEN (default PORT+1) (c: c/relay.c, or the build in
# $c_relay when set; ev: its libev build, gop: c/relaygop.c, or the build in $gop_relay when
# set; nalcast: the binary NALCAST), in the array $command.
relay_command() {
    local kind=$1 port=$2 listen=${4:-$(($2 + 1))}
    case $kind in
        c) command=("${c_relay:-$bin/relay}" "$port" "$listen") ;;
        ev) command=("$bin/evrelay" "$port" "$listen") ;;
        gop) command=("${gop_relay:-$bin/relaygop}" "$port" "$listen") ;;
        *) command=("$3" consume --from "tcp://127.0.0.1:$port" --listen "tcp://127.0.0.1:$listen" --join gop --quiet) ;;
    esac
}

# build_relaygop: c/relaygop.c (the C relay of any stream) built as this checkout has it, in $bin.
build_relaygop() { gcc -O2 -Wall -o "$bin/relaygop" "$root/bench/c/relaygop.c" -lev; }

# start_source PORT: c/relaysrc serving the source file on PORT, given half a second to listen.
start_source() {
    "$bin/relaysrc" "$source_file" 30 "$1" 2>/dev/null & pids+=($!)
    sleep 0.5
}

# start_relay KIND(c|ev|gop|nalcast) PORT SPIN_US [PREFIX...]: the source on PORT, the relay
# reading it and serving PORT+1 (RELAY_SPIN_US for the C relays c and ev; PREFIX: e.g.
# taskset -c 0); the relay's PID in $relay, its stderr appended to $relay_stderr (default:
# dropped).
start_relay() {
    local kind=$1 port=$2 spin=$3 command
    shift 3
    start_source "$port"
    relay_command "$kind" "$port" "$nalcast"
    RELAY_SPIN_US=$spin "$@" "${command[@]}" 2>>"${relay_stderr:-/dev/null}" & pids+=($!)
    relay=$!
}

# A copy of $nalcast in $work that valgrind 3.19 can read (it cannot read the DWARF 5 of a
# Swift build): debug information stripped, symbols kept. Its path in $nalcast_for_valgrind.
copy_for_valgrind() {
    nalcast_for_valgrind=$work/nalcast
    cp "$nalcast" "$nalcast_for_valgrind"
    strip --strip-debug "$nalcast_for_valgrind"
}

# callgrind_window KIND(c|gop|nalcast) OUT READERS [CALLGRIND_OPTION...]: the source, the relay
# under callgrind (writing OUT.N), READERS c/readers.c readers (0: none); the counts zeroed
# once they have been served for 4 s and dumped after a 10 s window; everything stopped.
# Prints the dump's path. Needs copy_for_valgrind first.
callgrind_window() {
    local kind=$1 out=$2 count=$3 port=$((20000 + RANDOM % 12000))
    shift 3
    local cg=(valgrind --tool=callgrind "$@" --callgrind-out-file="$out")
    start_source "$port"
    local command
    relay_command "$kind" "$port" "$nalcast_for_valgrind"
    "${cg[@]}" "${command[@]}" 2>"$out.log" & pids+=($!)
    local relay=$!
    # Under valgrind the relay takes seconds to start listening.
    for _ in $(seq 1 200); do ss -ltn | grep -q ":$((port + 1)) " && break; sleep 0.1; done
    if ((count > 0)); then "$bin/readers" $((port + 1)) "$count" 30 >/dev/null & pids+=($!); fi
    sleep 4
    callgrind_control -z "$relay" >/dev/null 2>&1
    sleep 10
    callgrind_control -d "$relay" >/dev/null 2>&1
    sleep 1
    cleanup
    ls "$out".[0-9]* | tail -1
}

# build_patched TOOL PATCH: nalcast of ${REV:-HEAD} with bench/PATCH applied, in a worktree at
# $work/src, built in ${SCRATCH:-$work/build} (SCRATCH=DIR keeps the build between runs); the
# binary's path in $patched. TOOL names the caller in its messages. Exits 65 when the patch no
# longer applies, 70 when the build fails. The caller's EXIT trap removes the worktree
# (git -C "$root" worktree remove --force "$work/src").
build_patched() {
    local tool=$1 patch=$2 scratch=${SCRATCH:-$work/build}
    git -C "$root" worktree add --detach "$work/src" "${REV:-HEAD}" >/dev/null 2>&1
    git -C "$work/src" apply "$root/bench/$patch" ||
        { echo "$tool: bench/$patch does not apply to ${REV:-HEAD}: bring it up to date" >&2; exit 65; }
    echo "$tool: building nalcast with the patch (${REV:-HEAD}, $scratch)" >&2
    (cd "$work/src" && swift build -c release --static-swift-stdlib --scratch-path "$scratch") >"$work/build.log" 2>&1 ||
        { tail -20 "$work/build.log" >&2; exit 70; }
    patched=$scratch/release/nalcast
}
