# A Wayland client for the Wayland tests: a fullscreen GTK window on mutter's virtual monitor,
# its left half one colour and its right half another, and a ScreenCast of the monitor
# (org.gnome.Mutter.ScreenCast) held open for as long as it runs.
# It writes "node ID" to DIR/events when the PipeWire node is there, and "drawn LEFT RIGHT
# NS" each time it has drawn (NS: CLOCK_REALTIME once the frame was painted and handed to
# the compositor, for bench/wayland-cpu's glass-to-socket). On Wayland it also asks the
# compositor when the frame of each "colors" paint reached its output (wp_presentation,
# below) and writes "presented LEFT RIGHT NS FLAGS" (NS: the compositor's presentation time as
# CLOCK_REALTIME; FLAGS: the protocol's kind flags), "discarded LEFT RIGHT" when the compositor
# says the frame was never shown, or "presentation none" once, at the first, when the
# compositor offers no wp_presentation. With NALCAST_CLIENT_NO_CAST=1 it
# only paints (on sway: bench/wayland-cpu), and with NALCAST_CLIENT_SIZE=WxH it covers that
# much of a screen without a window manager instead of asking for fullscreen (on Xvfb); with
# NALCAST_CLIENT_WINDOW=WxH it is a plain window of that size, never fullscreen (on sway). It
# reads commands from the FIFO DIR/control, one a line:
#   colors LEFT RIGHT   (RRGGBB each) paint the halves
#   stop                stop the ScreenCast session (the stream ends)
#   cast                a new ScreenCast session (a new "node ID")
#   cast metadata       a new one whose pointer comes as cursor metadata, in a RemoteDesktop
#                       session whose virtual pointer "pointer" moves ("node ID")
#   pointer X Y         move the pointer there (after "cast metadata"); "pointer X Y" once done
#   animate HZ          repaint the whole monitor HZ times a second, in shifting colours (0: stop)
import ctypes, os, sys, time, gi
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


class Presentation:
    """wp_presentation (the stable presentation-time protocol) on GTK's own Wayland connection.
    GTK 3 does not use it: its GdkFrameTimings presentation time on Wayland is the frame
    callback's time plus one refresh interval, a guess. So the client asks the compositor
    itself: a wp_presentation_feedback for the surface's next commit, answered by
    "presented" (when the frame that holds it was shown, on the clock the compositor names
    in clock_id) or "discarded". libwayland-client through ctypes; the two interfaces
    described by hand from the protocol's XML (wayland-protocols is not installed here)."""

    class Message(ctypes.Structure):
        _fields_ = [("name", ctypes.c_char_p), ("signature", ctypes.c_char_p), ("types", ctypes.c_void_p)]

    class Interface(ctypes.Structure):
        pass

    Interface._fields_ = [("name", ctypes.c_char_p), ("version", ctypes.c_int), ("method_count", ctypes.c_int),
                          ("methods", ctypes.c_void_p), ("event_count", ctypes.c_int), ("events", ctypes.c_void_p)]

    def __init__(self, gdk_window):
        self.wl = wl = ctypes.CDLL("libwayland-client.so.0")
        gdk = ctypes.CDLL("libgdk-3.so.0")
        pointer = ctypes.pythonapi.PyCapsule_GetPointer
        pointer.restype, pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        for name in ("gdk_wayland_display_get_wl_display", "gdk_wayland_window_get_wl_surface"):
            getattr(gdk, name).restype, getattr(gdk, name).argtypes = ctypes.c_void_p, [ctypes.c_void_p]
        self.display = gdk.gdk_wayland_display_get_wl_display(pointer(gdk_window.get_display().__gpointer__, None))
        self.surface = gdk.gdk_wayland_window_get_wl_surface(pointer(gdk_window.__gpointer__, None))
        for name, restype in (("wl_proxy_marshal_flags", ctypes.c_void_p), ("wl_proxy_create_wrapper", ctypes.c_void_p),
                              ("wl_display_create_queue", ctypes.c_void_p), ("wl_proxy_get_version", ctypes.c_uint32)):
            getattr(wl, name).restype = restype
        iface = lambda name: ctypes.addressof(self.Interface.in_dll(wl, name))
        # wp_presentation_feedback: no requests; events sync_output(o), presented(7 u), discarded.
        self.feedback_types = (ctypes.c_void_p * 1)(iface("wl_output_interface"))
        self.feedback_events = (self.Message * 3)((b"sync_output", b"o", ctypes.addressof(self.feedback_types)),
                                                  (b"presented", b"uuuuuuu", None), (b"discarded", b"", None))
        self.feedback_interface = self.Interface(b"wp_presentation_feedback", 1, 0, None, 3, ctypes.addressof(self.feedback_events))
        # wp_presentation: destroy, feedback(surface, new_id); event clock_id(u).
        self.presentation_types = (ctypes.c_void_p * 2)(iface("wl_surface_interface"), ctypes.addressof(self.feedback_interface))
        self.presentation_requests = (self.Message * 2)((b"destroy", b"", None), (b"feedback", b"on", ctypes.addressof(self.presentation_types)))
        self.presentation_events = (self.Message * 1)((b"clock_id", b"u", None),)
        self.presentation_interface = self.Interface(b"wp_presentation", 1, 2, ctypes.addressof(self.presentation_requests),
                                                     1, ctypes.addressof(self.presentation_events))
        self.clock = None
        self.presentation = None
        self.pending = {}  # feedback proxy -> the colours of its paint
        # The registry on a queue of our own, so that GTK's events are left to GTK.
        queue = wl.wl_display_create_queue(ctypes.c_void_p(self.display))
        wrapper = wl.wl_proxy_create_wrapper(ctypes.c_void_p(self.display))
        wl.wl_proxy_set_queue(ctypes.c_void_p(wrapper), ctypes.c_void_p(queue))
        registry = self.marshal(wrapper, 1, iface("wl_registry_interface"), 0, ctypes.c_void_p(None))
        wl.wl_proxy_wrapper_destroy(ctypes.c_void_p(wrapper))
        Global = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_char_p, ctypes.c_uint32)
        Remove = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32)

        def announced(data, proxy, name, interface, version):
            if interface == b"wp_presentation" and self.presentation is None:
                self.presentation = self.marshal(proxy, 0, ctypes.addressof(self.presentation_interface), 0, ctypes.c_uint32(name),
                                                 ctypes.c_char_p(b"wp_presentation"), ctypes.c_uint32(1), ctypes.c_void_p(None))
        self.keep = [Global(announced), Remove(lambda *a: None)]  # C callbacks live as long as their listeners
        self.registry_listener = (ctypes.c_void_p * 2)(*(ctypes.cast(f, ctypes.c_void_p) for f in self.keep))
        wl.wl_proxy_add_listener(ctypes.c_void_p(registry), self.registry_listener, None)
        wl.wl_display_roundtrip_queue(ctypes.c_void_p(self.display), ctypes.c_void_p(queue))
        if self.presentation is not None:
            Clock = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32)
            self.keep.append(Clock(lambda data, proxy, clock: setattr(self, "clock", clock)))
            self.presentation_listener = (ctypes.c_void_p * 1)(ctypes.cast(self.keep[-1], ctypes.c_void_p))
            wl.wl_proxy_add_listener(ctypes.c_void_p(self.presentation), self.presentation_listener, None)
            wl.wl_display_roundtrip_queue(ctypes.c_void_p(self.display), ctypes.c_void_p(queue))
            # From here on its feedback comes on GTK's queue, dispatched as GTK reads.
            wl.wl_proxy_set_queue(ctypes.c_void_p(self.presentation), None)
        wl.wl_proxy_destroy(ctypes.c_void_p(registry))
        wl.wl_event_queue_destroy(ctypes.c_void_p(queue))
        U = ctypes.c_uint32
        self.keep.append(ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(lambda *a: None))
        self.keep.append(ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, U, U, U, U, U, U, U)(self.presented))
        self.keep.append(ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(self.discarded))
        self.feedback_listener = (ctypes.c_void_p * 3)(*(ctypes.cast(f, ctypes.c_void_p) for f in self.keep[-3:]))

    def marshal(self, proxy, opcode, interface, flags, *args):
        version = self.wl.wl_proxy_get_version(ctypes.c_void_p(proxy))
        return self.wl.wl_proxy_marshal_flags(ctypes.c_void_p(proxy), ctypes.c_uint32(opcode), ctypes.c_void_p(interface),
                                              ctypes.c_uint32(version), ctypes.c_uint32(flags), *args)

    def ask(self, colours):
        """A feedback for the surface's next commit: the frame with these colours."""
        feedback = self.marshal(self.presentation, 1, ctypes.addressof(self.feedback_interface), 0,
                                ctypes.c_void_p(self.surface), ctypes.c_void_p(None))
        self.wl.wl_proxy_add_listener(ctypes.c_void_p(feedback), self.feedback_listener, None)
        self.pending[feedback] = colours

    def presented(self, data, feedback, sec_hi, sec_lo, nsec, refresh, seq_hi, seq_lo, flags):
        # The compositor's clock and CLOCK_REALTIME read together, as close as two calls get.
        shown = ((sec_hi << 32) | sec_lo) * 1_000_000_000 + nsec
        offset = time.time_ns() - time.clock_gettime_ns(self.clock)
        self.done(feedback, "presented %s %s %d %d" % (self.pending.get(feedback, ("?", "?")) + (shown + offset, flags)))

    def discarded(self, data, feedback):
        self.done(feedback, "discarded %s %s" % self.pending.get(feedback, ("?", "?")))

    def done(self, feedback, line):
        self.pending.pop(feedback, None)
        self.wl.wl_proxy_destroy(ctypes.c_void_p(feedback))
        GLib.idle_add(lambda: event(line) and False)


presentation = [None]  # Presentation once the window is realized on Wayland; False: not offered


def paint(feedback=False):
    """The halves' colours as CSS; "drawn" once the next frame has been painted (and with
    `feedback`, on Wayland, "presented" once the compositor has shown it: asked for the
    "colors" command's paints only, not the animation's 30 a second, which a compositor
    that never answers, sway here, would keep)."""
    style.load_from_data(("#left { background-color: #%s; } #right { background-color: #%s; }" % tuple(colors)).encode())
    drawn = tuple(colors)

    def before_paint(clock):
        # Asked before GTK commits the frame (in its own after-paint handler, which runs
        # before ours): the feedback goes with that commit.
        clock.disconnect(handler[1])
        if feedback and presentation[0]:
            presentation[0].ask(drawn)

    def after_paint(clock):
        clock.disconnect(handler[0])
        painted = time.time_ns()
        GLib.idle_add(lambda: event("drawn %s %s %d" % (drawn + (painted,))) and False)
    if window.get_realized():
        clock = window.get_frame_clock()
        if feedback and presentation[0] is None:
            presentation[0] = False
            if type(window.get_window().get_display()).__name__ == "GdkWaylandDisplay":
                presentation[0] = Presentation(window.get_window())
                if presentation[0].presentation is None or presentation[0].clock is None:
                    presentation[0] = False
                    event("presentation none")
        handler = [clock.connect("after-paint", after_paint), clock.connect("before-paint", before_paint)]
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
        paint(feedback=True)
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
elif os.environ.get("NALCAST_CLIENT_WINDOW"):  # a plain window (sway's rule floats and places it)
    window.set_default_size(*map(int, os.environ["NALCAST_CLIENT_WINDOW"].split("x")))
else:
    window.fullscreen()
window.show_all()
paint()
if casting:
    call(session, "org.gnome.Mutter.ScreenCast.Session", "Start", None, "()")
Gtk.main()
