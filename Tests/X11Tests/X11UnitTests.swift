import Foundation
import TestSupport
@testable import Capture
@testable import X11Capture
import Testing

@Suite struct X11RegionTests {
    @Test func parsesXYWidthHeight() throws {
        #expect(try X11Region(parsing: "10,20,640x480") == X11Region(x: 10, y: 20, width: 640, height: 480))
        #expect(try X11Region(parsing: "0, 0, 2x2") == X11Region(x: 0, y: 0, width: 2, height: 2))
        #expect(X11Region(x: 10, y: 20, width: 640, height: 480).description == "640x480+10+20")
    }

    @Test(arguments: ["", "10,20", "10,20,640", "10,20,640x", "a,b,cxd", "-2,0,64x64", "0,0,0x64", "0,0,63x64", "0,0,64x63", "0,0,64x64,1"])
    func rejects(_ text: String) {
        #expect(throws: X11Error.badRegion(text)) { try X11Region(parsing: text) }
    }

    @Test func fitsOnlyInsideTheScreen() {
        #expect(X11Region(x: 0, y: 0, width: 320, height: 240).fits(screenWidth: 320, screenHeight: 240))
        #expect(!X11Region(x: 2, y: 0, width: 320, height: 240).fits(screenWidth: 320, screenHeight: 240))
        #expect(!X11Region(x: 0, y: 2, width: 320, height: 240).fits(screenWidth: 320, screenHeight: 240))
    }
}

/// `--source x11:DISPLAY`: what users type after `x11:` becomes a name xcb takes.
@Suite struct X11DisplayNameTests {
    @Test(arguments: [("77", ":77"), (":77", ":77"), ("77.1", ":77.1"), (":0.0", ":0.0"), ("host:0.0", "host:0.0"),
                      ("host:3", "host:3"), ("10.0.0.5:1", "10.0.0.5:1"), ("unix:0", "unix:0"), ("[::1]:2", "[::1]:2")])
    func accepts(text: String, name: String) throws {
        #expect(try X11Options.displayName(parsing: text) == name)
    }

    @Test(arguments: ["", "screen", ":", "host:", ":x", "77.", "77.a", "host:0.0.0", "a b:0"])
    func rejects(text: String) {
        #expect(throws: X11Error.badDisplayName(text)) { try X11Options.displayName(parsing: text) }
    }
}

/// What a display that cannot be opened says: the displays there are (their sockets in
/// `/tmp/.X11-unix`) and what to try.
@Suite struct X11DisplaysTests {
    @Test func localDisplayNumbersAndScreens() {
        #expect(X11Displays.localNumber(":1") == 1 && X11Displays.localNumber(":12.3") == 12 && X11Displays.localNumber("unix:4") == 4)
        #expect(X11Displays.localNumber("host:0") == nil && X11Displays.localNumber("host.lan:0.1") == nil)
        #expect(X11Displays.withoutScreen("host.lan:1.2") == "host.lan:1" && X11Displays.withoutScreen(":3") == ":3")
        #expect(X11Displays.screenNumber(":1.2") == 2 && X11Displays.screenNumber("a.b:1") == 0)
    }

    @Test func anAbsentDisplayNamesThoseThereAndWhatToTry() {
        #expect(X11Displays.connectFailure(":99", present: [0, 3]) == "no X server there; X servers here: :0, :3 (try --source x11:0)")
        let none = X11Displays.connectFailure(":99", present: [])
        #expect(none == "no X server there, and no X server runs here (/tmp/.X11-unix has no display socket): start one (Xvfb :99 &) and use --source x11:99, or use --source testsrc")
        #expect(X11Displays.connectFailure(":3", present: [3]).hasPrefix("its X server refused the connection: not authorized"))
        #expect(X11Displays.connectFailure("far:2", present: [0]).contains("TCP port 6002"))
        #expect(X11Displays.missingScreen(":5.2", screens: 1) == "no screen 2: display :5 has screen 0 only (try --source x11:5)")
        #expect(X11Displays.missingScreen(":5.4", screens: 2) == "no screen 4: display :5 has screens 0 to 1 (try --source x11:5)")
    }

    @Test func listsTheSocketsOfADirectory() throws {
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        for name in ["X10", "X2", "Xabc", "other"] {
            _ = FileManager.default.createFile(atPath: dir.appendingPathComponent(name).path, contents: nil)
        }
        #expect(X11Displays.local(in: dir.path) == [2, 10])
        #expect(X11Displays.local(in: dir.appendingPathComponent("none").path) == [])
    }
}
