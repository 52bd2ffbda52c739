import Foundation
import TestSupport
import Testing

/// The part of `MutterCaptureTests` that follows the pointer, on the same headless mutter
/// (its left half blue, its right half white by then).
extension MutterCaptureTests {
    /// `--cursor` with a cast whose pointer comes as cursor metadata: nalcast draws it where
    /// mutter's virtual pointer is, takes it away where it left, counts the changes; not with
    /// `--no-cursor`; and the portal asks for metadata when its backend offers it.
    func checkPointer(_ session: MutterSession, _ dir: URL) throws {
        try session.castAgain("metadata")
        try session.movePointer(x: 100, y: 100)
        let file = dir.appendingPathComponent("pointer.h264")
        let produce = try Background(Self.nalcast, ["produce", "--source", "pipewire:\(session.node)", "--idle-fps", "5", "-o", file.path],
                                     environment: session.environment)
        #expect(produce.waitFor("pipewire: the node sends the pointer as cursor metadata: drawn into the frames"), "\(produce.stderr)")
        let blue: RGB = (0, 0, 255), white: RGB = (255, 255, 255)
        let atFirst = (x: 100, y: 100, w: 24, h: 24), atLast = (x: 420, y: 250, w: 24, h: 24)
        // The pointer (about 24 pixels, black with a white edge) down and right of its hotspot.
        #expect(try waitForLastPicture(file) { pixelsOff($0, width: 640, box: atFirst, from: blue) >= 20 }, "\(produce.stderr)")
        try session.movePointer(x: 420, y: 250)
        // Drawn where it went, and the blue where it was is blue again.
        #expect(try waitForLastPicture(file) {
            pixelsOff($0, width: 640, box: atLast, from: white) >= 20 && pixelsOff($0, width: 640, box: atFirst, from: blue) == 0
        }, "\(produce.stderr)")
        produce.signal(SIGINT)
        #expect(produce.wait(timeout: 20) == 0, "\(produce.stderr)")
        // Every change of the pointer is counted: at least the two moves.
        let changes = produce.stderr.firstMatch(of: /, (\d+) pointer changes drawn \(\d+ frames for the pointer alone\)/).flatMap { Int($0.1) } ?? 0
        #expect(changes >= 2, "\(produce.stderr)")

        // --no-cursor: no metadata asked for, nothing drawn.
        let plain = dir.appendingPathComponent("no-pointer.h264")
        let without = try Background(Self.nalcast, ["produce", "--source", "pipewire:\(session.node)", "--no-cursor", "--duration", "500ms", "-o", plain.path],
                                     environment: session.environment)
        #expect(without.wait(timeout: 20) == 0, "\(without.stderr)")
        #expect(!without.stderr.contains("cursor metadata") && !without.stderr.contains("pointer changes"), "\(without.stderr)")
        let picture = try lastPicture(plain, width: 640, height: 360)
        #expect(picture.map { pixelsOff($0, width: 640, box: atLast, from: white) } == 0, "\(without.stderr)")

        // The portal: metadata when the backend offers it (mutter then sends the pointer beside the picture).
        try session.refuseNextCasts(false)
        try session.offerCursorModes(7)
        let through = dir.appendingPathComponent("portal-pointer.h264")
        let (program, arguments) = try session.asSessionUser(Self.nalcast, ["produce", "--source", "portal", "--portal-token", "none",
                                                                            "--duration", "500ms", "-o", through.path])
        let portal = try Background(program, arguments, environment: session.environment)
        #expect(portal.wait(timeout: 20) == 0, "\(portal.stderr)\n\(session.logs)")
        #expect(session.portalEvents.filter { $0.hasPrefix("select ") }.last == "select 1 4 2 fresh", "\(session.portalEvents)")
        #expect(portal.stderr.contains("portal: the node sends the pointer as cursor metadata: drawn into the frames"), "\(portal.stderr)")
        #expect(try lastPicture(through, width: 640, height: 360).map { pixelsOff($0, width: 640, box: atLast, from: white) >= 20 } == true,
                "\(portal.stderr)")
    }

    /// Each access unit of an Annex-B file as `nalcast inspect --json` reads it.
    func inspect(_ file: URL) throws -> [(idr: Bool, size: String, nalTypes: [Int])] {
        let run = try Tool.run([Self.nalcast, "inspect", "--json", file.path])
        guard let json = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any],
              let units = json["units"] as? [[String: Any]] else { return [] }
        return units.map { unit in
            (unit["idr"] as? Bool ?? false, "\(unit["width"] as? Int ?? 0)x\(unit["height"] as? Int ?? 0)", unit["nalTypes"] as? [Int] ?? [])
        }
    }
}
