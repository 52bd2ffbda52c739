# A Wayland client for the Wayland tests: a fullscreen GTK window on mutter's virtual monitor,
# its left half one colour and its right half another, and a ScreenCast of the monitor
# (org.gnome.Mutter.ScreenCast) held open for as long as it runs.
# It writes "node ID" to DIR/events when the PipeWire node is there, and "drawn LEFT RIGHT
# NS" each time it has drawn (NS: CLOCK_REALTIME once the frame was painted and handed to
# the compositor, for bench/wayland-cpu's glass-to-socket). With NALCAST_CLIENT_NO_CAST=1 it
# only paints (on sway: bench/wayland-cpu), and with NALCAST_CLIENT_SIZE=WxH it covers that
# much of a screen without a window manager instead of asking for fullscreen (on Xvfb). It
# reads commands from the FIFO DIR/control, one a line:
#   colors LEFT RIGHT   (RRGGBB each) paint the halves
#   stop                stop the ScreenCast session (the stream ends)
#   cast                a new ScreenCast session (a new "node ID")
#   cast metadata       a new one whose pointer comes as cursor metadata, in a RemoteDesktop
#                       session whose virtual pointer "pointer" moves ("node ID")
#   pointer X Y         move the pointer there (after "cast metadata"); "pointer X Y" once done
#   animate HZ          repaint the whole monitor HZ times a second, in shifting colours (0: stop)
import os, sys, time, gi
gi.require_version("Gtk", "3.0")
from gi.repository import Gtk, Gdk, Gio, GLib

directory = sys.argv[1]
colors = ["ff0000", "00ff00"]
casting = os.environ.get("NALCAST_CLIENT_NO_CAST") != "1"
bus = Gio.bus_get_sync(Gio.BusType.SESSION) if casting else None


def event(line):
    with open(os.path.join(directory, "events"), "a") as f:
        f.write(line + "\n")


def call(path, interface, method, args, reply):
    return bus.call_sync("org.gnome.Mutter.ScreenCast", path, interface, method, args,
                         GLib.VariantType(reply), 0, -1, None)


RD = "org.gnome.Mutter.RemoteDesktop"
remote = {}  # the RemoteDesktop session and stream of "cast metadata"


def cast(kind=""):
    """A ScreenCast session of the monitor (no cursor; "metadata": the pointer as cursor
    metadata, in a RemoteDesktop session): its node comes as an event once started."""
    properties = {}
    if kind == "metadata":
        remote["session"] = bus.call_sync(RD, "/org/gnome/Mutter/RemoteDesktop", RD, "CreateSession", None,
                                          GLib.VariantType("(o)"), 0, -1, None)[0]
        sid = bus.call_sync(RD, remote["session"], "org.freedesktop.DBus.Properties", "Get",
                            GLib.Variant("(ss)", (RD + ".Session", "SessionId")), GLib.VariantType("(v)"), 0, -1, None)[0]
        properties["remote-desktop-session-id"] = GLib.Variant("s", sid)
    session = call("/org/gnome/Mutter/ScreenCast", "org.gnome.Mutter.ScreenCast", "CreateSession",
                   GLib.Variant("(a{sv})", (properties,)), "(o)")[0]
    cursor = {"cursor-mode": GLib.Variant("u", 2 if kind == "metadata" else 0)}
    stream = call(session, "org.gnome.Mutter.ScreenCast.Session", "RecordMonitor", GLib.Variant("(sa{sv})", ("", cursor)), "(o)")[0]
    if kind == "metadata":
        remote["stream"] = stream
    bus.signal_subscribe(None, "org.gnome.Mutter.ScreenCast.Stream", "PipeWireStreamAdded", stream, None, 0,
                         lambda c, s, p, i, n, params: event("node %d" % params[0]))
    return session


def start(session, kind):
    """A RemoteDesktop session starts its screen cast with it."""
    if kind == "metadata":
        bus.call_sync(RD, remote["session"], RD + ".Session", "Start", None, None, 0, -1, None)
    else:
        call(session, "org.gnome.Mutter.ScreenCast.Session", "Start", None, "()")


session = cast() if casting else None


style = Gtk.CssProvider()


def paint():
    """The halves' colours as CSS; "drawn" once the next frame has been painted."""
    style.load_from_data(("#left { background-color: #%s; } #right { background-color: #%s; }" % tuple(colors)).encode())
    drawn = tuple(colors)

    def after_paint(clock):
        clock.disconnect(handler[0])
        painted = time.time_ns()
        GLib.idle_add(lambda: event("drawn %s %s %d" % (drawn + (painted,))) and False)
    handler = [window.get_frame_clock().connect("after-paint", after_paint)] if window.get_realized() else None
    window.queue_draw()


animation = [0, 0]  # timeout source, frame count


def step():
    animation[1] += 1
    shade = (animation[1] * 8) % 256
    colors[:] = ["%02x%02x40" % (shade, 255 - shade), "40%02x%02x" % (shade, 255 - shade)]
    paint()
    return True


def command(channel, condition):
    global session
    line = channel.readline().strip().split()
    if line[:1] == ["colors"] and len(line) == 3:
        colors[:] = line[1:]
        paint()
    elif line[:1] == ["animate"] and len(line) == 2:
        if animation[0]:
            GLib.source_remove(animation[0])
            animation[0] = 0
        if float(line[1]) > 0:
            animation[0] = GLib.timeout_add(int(1000 / float(line[1])), step)
    elif line == ["stop"]:
        call(session, "org.gnome.Mutter.ScreenCast.Session", "Stop", None, "()")
    elif line[:1] == ["cast"]:
        kind = line[1] if len(line) > 1 else ""
        session = cast(kind)
        start(session, kind)
    elif line[:1] == ["pointer"] and len(line) == 3:
        bus.call_sync(RD, remote["session"], RD + ".Session", "NotifyPointerMotionAbsolute",
                      GLib.Variant("(sdd)", (remote["stream"], float(line[1]), float(line[2]))), None, 0, -1, None)
        event("pointer %s %s" % (line[1], line[2]))
    return True


control = os.path.join(directory, "control")
os.mkfifo(control)
channel = GLib.IOChannel.unix_new(os.open(control, os.O_RDWR))
GLib.io_add_watch(channel, GLib.PRIORITY_DEFAULT, GLib.IO_IN, command)
window = Gtk.Window()
halves = Gtk.Box(homogeneous=True)
for name in ("left", "right"):
    half = Gtk.Box()
    half.set_name(name)
    halves.pack_start(half, True, True, 0)
window.add(halves)
Gtk.StyleContext.add_provider_for_screen(Gdk.Screen.get_default(), style, Gtk.STYLE_PROVIDER_PRIORITY_USER)
size = os.environ.get("NALCAST_CLIENT_SIZE")
if size:  # an X server without a window manager (bench/wayland-cpu's Xvfb): cover it ourselves
    window.set_decorated(False)
    window.set_default_size(*map(int, size.split("x")))
    window.move(0, 0)
else:
    window.fullscreen()
window.show_all()
paint()
if casting:
    call(session, "org.gnome.Mutter.ScreenCast.Session", "Start", None, "()")
Gtk.main()
