# A ScreenCast backend for xdg-desktop-portal in the Wayland tests, standing in for the one
# thing a headless machine cannot do: a person choosing in GNOME's dialog
# (xdg-desktop-portal-gnome shows it even with one monitor). It answers
# org.freedesktop.impl.portal.ScreenCast as a user who picks the one monitor would: it records
# the monitor through mutter's org.gnome.Mutter.ScreenCast (as xdg-desktop-portal-gnome does)
# and gives its PipeWire node. The real xdg-desktop-portal is in front of it: the client's
# requests, sessions, restore tokens (in the real permission store) and OpenPipeWireRemote
# are the portal's own.
# It appends to DIR/events: "select TYPES CURSOR PERSIST restored|fresh" for each
# SelectSources, "start NODE" for each Start. DIR/portal-answer, when it holds "cancel",
# makes Start answer as a user who closed the dialog.
import os, sys, gi
from gi.repository import Gio, GLib

directory = sys.argv[1]
MUTTER = "org.gnome.Mutter.ScreenCast"
XML = """
<node>
  <interface name="org.freedesktop.impl.portal.ScreenCast">
    <method name="CreateSession">
      <arg type="o" name="handle" direction="in"/><arg type="o" name="session_handle" direction="in"/>
      <arg type="s" name="app_id" direction="in"/><arg type="a{sv}" name="options" direction="in"/>
      <arg type="u" name="response" direction="out"/><arg type="a{sv}" name="results" direction="out"/>
    </method>
    <method name="SelectSources">
      <arg type="o" name="handle" direction="in"/><arg type="o" name="session_handle" direction="in"/>
      <arg type="s" name="app_id" direction="in"/><arg type="a{sv}" name="options" direction="in"/>
      <arg type="u" name="response" direction="out"/><arg type="a{sv}" name="results" direction="out"/>
    </method>
    <method name="Start">
      <arg type="o" name="handle" direction="in"/><arg type="o" name="session_handle" direction="in"/>
      <arg type="s" name="app_id" direction="in"/><arg type="s" name="parent_window" direction="in"/>
      <arg type="a{sv}" name="options" direction="in"/>
      <arg type="u" name="response" direction="out"/><arg type="a{sv}" name="results" direction="out"/>
    </method>
    <property name="AvailableSourceTypes" type="u" access="read"/>
    <property name="AvailableCursorModes" type="u" access="read"/>
    <property name="version" type="u" access="read"/>
  </interface>
  <interface name="org.freedesktop.impl.portal.Session">
    <method name="Close"/>
    <signal name="Closed"/>
    <property name="version" type="u" access="read"/>
  </interface>
</node>
"""
node_info = Gio.DBusNodeInfo.new_for_xml(XML)
bus = Gio.bus_get_sync(Gio.BusType.SESSION)
sessions = {}  # session handle -> {"cursor": mode, "mutter": mutter session path}


def event(line):
    with open(os.path.join(directory, "events"), "a") as f:
        f.write(line + "\n")


def mutter(path, interface, method, args, reply):
    return bus.call_sync(MUTTER, path, interface, method, args, GLib.VariantType(reply), 0, -1, None)


def start(invocation, session_handle):
    session = sessions[session_handle]
    answer = os.path.join(directory, "portal-answer")
    if os.path.exists(answer) and open(answer).read().strip() == "cancel":
        invocation.return_value(GLib.Variant("(ua{sv})", (1, {})))
        return
    path = mutter("/org/gnome/Mutter/ScreenCast", MUTTER, "CreateSession", GLib.Variant("(a{sv})", ({},)), "(o)")[0]
    session["mutter"] = path
    # The portal's cursor modes (1 hidden, 2 embedded, 4 metadata) are mutter's 0, 1 and 2.
    stream = mutter(path, MUTTER + ".Session", "RecordMonitor",
                    GLib.Variant("(sa{sv})", ("", {"cursor-mode": GLib.Variant("u", {1: 0, 2: 1, 4: 2}.get(session["cursor"], 0))})), "(o)")[0]

    def added(connection, sender, object_path, interface, signal, params):
        node = params[0]
        event("start %d" % node)
        results = {
            "streams": GLib.Variant("a(ua{sv})", [(node, {"source_type": GLib.Variant("u", 1)})]),
            "persist_mode": GLib.Variant("u", session["persist"]),
            "restore_data": GLib.Variant("(suv)", ("nalcast-test", 1, GLib.Variant("s", "the virtual monitor"))),
        }
        invocation.return_value(GLib.Variant("(ua{sv})", (0, results)))

    bus.signal_subscribe(None, MUTTER + ".Stream", "PipeWireStreamAdded", stream, None, 0, added)
    mutter(path, MUTTER + ".Session", "Start", None, "()")


def method(connection, sender, path, interface, name, params, invocation):
    if interface == "org.freedesktop.impl.portal.Session":
        session = sessions.pop(path, None)
        if session and session.get("mutter"):
            mutter(session["mutter"], MUTTER + ".Session", "Stop", None, "()")
        invocation.return_value(None)
        return
    session_handle = params[1]
    if name == "CreateSession":
        sessions[session_handle] = {"cursor": 1, "persist": 0}
        connection.register_object(session_handle, node_info.interfaces[1], method, None, None)
        invocation.return_value(GLib.Variant("(ua{sv})", (0, {})))
    elif name == "SelectSources":
        options = params[3]
        session = sessions[session_handle]
        session["cursor"] = options.get("cursor_mode", 1)
        session["persist"] = options.get("persist_mode", 0)
        restored = "restored" if options.get("restore_data") is not None else "fresh"
        event("select %d %d %d %s" % (options.get("types", 1), session["cursor"], session["persist"], restored))
        invocation.return_value(GLib.Variant("(ua{sv})", (0, {})))
    elif name == "Start":
        start(invocation, session_handle)


def cursor_modes():
    """What DIR/cursor-modes says (the test chooses), hidden and embedded without it."""
    path = os.path.join(directory, "cursor-modes")
    return int(open(path).read().strip()) if os.path.exists(path) else 3


def get_property(connection, sender, path, interface, name):
    if name == "AvailableCursorModes":
        return GLib.Variant("u", cursor_modes())
    return GLib.Variant("u", {"AvailableSourceTypes": 1, "version": 4 if "ScreenCast" in interface else 1}[name])


bus.register_object("/org/freedesktop/portal/desktop", node_info.interfaces[0], method, get_property, None)
Gio.bus_own_name_on_connection(bus, "org.freedesktop.impl.portal.desktop.nalcasttest", 0,
                               lambda c, n: event("backend ready"), None)
GLib.MainLoop().run()
