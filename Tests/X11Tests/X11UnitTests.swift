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

@Suite struct X11CursorBlendTests {
    /// A 4x2 BGRX frame filled with B=10, G=20, R=30.
    private func frame() -> [UInt8] { Array(repeating: [10, 20, 30, 0], count: 8).flatMap { $0 } }

    @Test func opaqueReplacesTransparentKeepsTranslucentBlendsPremultiplied() {
        var pixels = frame()
        // 2x1 cursor: opaque pure red, then half-transparent premultiplied blue (alpha 128, blue 128).
        let cursor: [UInt32] = [0xffff0000, 0x80000080]
        pixels.withUnsafeMutableBufferPointer { out in
            cursor.withUnsafeBufferPointer { image in
                X11Cursor.blend(image.baseAddress!, width: 2, height: 1, left: 1, top: 1,
                                into: out.baseAddress!, stride: 16, frameWidth: 4, frameHeight: 2)
            }
        }
        // Row 0 untouched, pixel (0,1) untouched.
        #expect(Array(pixels[0..<20]) == Array(frame()[0..<20]))
        // (1,1): opaque red → B 0, G 0, R 255.
        #expect(Array(pixels[20..<23]) == [0, 0, 255])
        // (2,1): B = 128 + 10*127/255 ≈ 133, G = 20*127/255 ≈ 10, R = 30*127/255 ≈ 15.
        #expect(Array(pixels[24..<27]) == [133, 10, 15])
        #expect(Array(pixels[28..<31]) == [10, 20, 30])
    }

    @Test func clipsAtEveryEdge() {
        var pixels = frame()
        let cursor = [UInt32](repeating: 0xff00ff00, count: 9)  // 3x3 opaque green
        for (left, top) in [(-2, -2), (3, 1), (-5, 0), (0, 5)] {
            pixels.withUnsafeMutableBufferPointer { out in
                cursor.withUnsafeBufferPointer { image in
                    X11Cursor.blend(image.baseAddress!, width: 3, height: 3, left: left, top: top,
                                    into: out.baseAddress!, stride: 16, frameWidth: 4, frameHeight: 2)
                }
            }
        }
        let green: [UInt8] = [0, 255, 0]
        let painted = (0..<8).filter { Array(pixels[($0 * 4)..<($0 * 4 + 3)]) == green }
        // (-2,-2) covers (0,0); (3,1) covers (3,1) only; the others fall outside.
        #expect(painted == [0, 7])
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
