"""The kinds of work a relay's functions do, for the relay instruments' tables by kind
(bench/relay-profile's samples, bench/relay-footprint's per-unit code lines): nalcast's
functions and the C relays' (bench/c/relay.c, bench/c/relaygop.c) side by side, so that what
nalcast spends beyond the floor shows by what it is for.

Names are matched demangled (`swift demangle --simplified`), as "OBJECT: NAME" from perf or
NAME alone from callgrind. A name takes the first kind whose pattern it matches: the
runtime's own work (reference counts, the heap, generic value operations) before the types
it works for, so a value witness of `AccessUnit` counts as generic work, not as access units.
"""
import re
import subprocess

KINDS = (
    ("reference counting",
     r"swift_(retain|release|unownedRetain|isUniquelyReferenced|bridgeObject)|RefCounts|_swift_release_dealloc"),
    ("the heap (malloc, free, Swift's objects)",
     r"(^|: )\$?(malloc|free|cfree|_int_|unlink_chunk|malloc_consolidate|alloc_perturb|_mid_memalign|__?posix_memalign)"
     r"|swift_(allocObject|slowAlloc|slowDealloc|deallocClassInstance|deallocObject|initStaticObject)"),
    ("generic value operations (value witnesses, boxes, array storage)",
     r"destroy for |initializeWithCopy for |initializeWithTake for |assignWith|outlined |metadataimpl"
     r"|instantiateConcreteType|swift_array|boxed_opaque_existential|swift_once|_ContiguousArray"
     r"|getEnumTag|storeEnumTag|swift_makeBoxUnique|tuple_initializeWith|Array\.replaceSubrange"),
    ("copying bytes", r"memmove|memcpy"),
    ("the event loop, timers and clocks",
     r"libev\.so|(^|: )\$?ev_|epoll_wait|clock_gettime|gettimeofday|IOWatcher|EventLoop|WakeUp|LoopTimer"
     r"|MonotonicClock|SystemClock|WallClock|pthread_self|CLibEV_"),
    ("reading the input", r"(^|: )\$?(read|__libc_read|on_source)$|StreamClient|Socket\.read"),
    ("finding NAL units (start codes)",
     r"memchr|StartCodeSearch|AnnexBScanner|AnnexBParser|(^|: )(advance|make_room|search|shift)$"),
    ("access units (NAL types, slice headers, parameter sets, timestamps)",
     r"AccessUnitAssembler|SliceHeader|BitReader|RBSP|ParameterSet|StreamTimestamp|UnescapingReader|H264Codec"
     r"|VideoCodec|NALUnit|NALHeader|(^|: )(decide|end_nal|emit|next_byte|u|ue|se|read_sps|read_pps|read_slice"
     r"|new_picture|read_timestamp|coded|skip|at_trailing_bits|unescape)$"),
    ("from the intake to the server (media time, hand-off)",
     r"StreamIntake|MediaClock|RelayFeed|ResyncingHandOff|Mailbox|ConsumeRelay|SinkFanout|TimedUnit|Histogram"
     r"|Counter|RisingMediaTime"),
    ("fan-out to the readers (queues, framing, sendmsg)",
     r"sendmsg|StreamServer|Broadcaster|SkipQueue|ReaderQueue|QueuedAccessUnit|WireForms|Delimited|AnnexBReader"
     r"|ConnectionReader|Connection|PlainTransport|GatheredWrite|SharedWrite|StreamFraming|AccessUnitDelimiting"
     r"|FramedContinuation|StreamReader|(^|: )(push|pass|flush|on_writable|drop)$"),
)
OTHER = "other (unresolved addresses and the rest)"
NAMES = [name for name, _ in KINDS] + [OTHER]
_PATTERNS = [(name, re.compile(pattern)) for name, pattern in KINDS]


def kind_of(symbol):
    """The kind of work of the function named `symbol` (demangled)."""
    return next((name for name, pattern in _PATTERNS if pattern.search(symbol)), OTHER)


def demangled(names):
    """`names` demangled, in order, by the toolchain's `swift demangle` (as they are without one):
    the one demangling of both relay instruments."""
    names = list(names)
    try:
        out = subprocess.run(["swift", "demangle", "--simplified"], input="\n".join(names) + "\n",
                             capture_output=True, text=True, check=True).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        return names
    return out[:len(names)] if len(out) >= len(names) else names


def table(title, columns):
    """A markdown table of `columns` ((heading, {kind: figure}), ...) by kind, a row each, the
    last column's excess over the first's at the end, and a row of totals."""
    heads = [heading for heading, _ in columns]
    rows = [f"| {title} | " + " | ".join(heads) + f" | {heads[-1]}'s more |", "|---" * (len(heads) + 2) + "|"]
    for name in NAMES + ["all"]:
        figures = [sum(counts.values()) if name == "all" else counts.get(name, 0) for _, counts in columns]
        rows.append(f"| {name} | " + " | ".join(str(f) for f in figures) + f" | {figures[-1] - figures[0]:+d} |")
    return "\n".join(rows)
