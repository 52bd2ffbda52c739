import Foundation
import TestSupport

/// A colour as FFmpeg decodes it, 0-255.
typealias RGB = (r: Int, g: Int, b: Int)


/// Decodes the stream so far until its newest picture has these halves (20 s at most).
func waitForPicture(_ file: URL, left: RGB, right: RGB, width: Int = 640, height: Int = 360) throws -> Bool {
    try waitForLastPicture(file, width: width, height: height) { matches(halves($0, at: 0, width: width, height: height), left, right) }
}

/// Each picture's colour at the middle of its left half and of its right half.
func decode(_ file: URL, width: Int, height: Int) throws -> [(left: RGB, right: RGB)] {
    let raw = file.deletingLastPathComponent().appendingPathComponent("frames.rgb")
    let run = try Tool.run(["ffmpeg", "-v", "error", "-y", "-i", file.path, "-f", "rawvideo", "-pix_fmt", "rgb24", raw.path])
    guard run.status == 0, let data = try? Data(contentsOf: raw) else { return [] }
    let bytes = [UInt8](data), frame = width * height * 3
    return (0..<(bytes.count / frame)).map { halves(bytes, at: $0 * frame, width: width, height: height) }
}

/// The colour at the middle of the left half and of the right half of the RGB24 picture
/// that starts at `offset`.
func halves(_ pictures: [UInt8], at offset: Int, width: Int, height: Int) -> (left: RGB, right: RGB) {
    func at(_ x: Int, _ y: Int) -> RGB {
        let o = offset + (y * width + x) * 3
        return (Int(pictures[o]), Int(pictures[o + 1]), Int(pictures[o + 2]))
    }
    return (at(width / 4, height / 2), at(width * 3 / 4, height / 2))
}

func matches(_ picture: (left: RGB, right: RGB), _ left: RGB, _ right: RGB) -> Bool {
    // As the X11 tests: 16 of 255 takes in x264's loss on a first IDR of flat colour (245 for 255).
    func near(_ a: RGB, _ b: RGB) -> Bool { abs(a.r - b.r) <= 16 && abs(a.g - b.g) <= 16 && abs(a.b - b.b) <= 16 }
    return near(picture.left, left) && near(picture.right, right)
}

/// Each decoded picture's size, in order, as ffprobe reads the stream (`640x360`).
func pictureSizes(_ file: URL) throws -> [String] {
    let run = try Tool.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "frame=width,height", "-of", "csv=p=0", file.path])
    return run.stdout.split(separator: "\n").map { $0.split(separator: ",").prefix(2).joined(separator: "x") }.filter { !$0.isEmpty }
}

/// The newest picture of the stream so far, RGB24 rows (nil when none decodes yet).
func lastPicture(_ file: URL, width: Int, height: Int) throws -> [UInt8]? {
    let raw = file.deletingLastPathComponent().appendingPathComponent("last.rgb")
    let run = try Tool.run(["ffmpeg", "-v", "error", "-y", "-i", file.path, "-f", "rawvideo", "-pix_fmt", "rgb24", raw.path])
    let frame = width * height * 3
    guard run.status == 0, let data = try? Data(contentsOf: raw), data.count >= frame, data.count % frame == 0 else { return nil }
    return [UInt8](data.suffix(frame))
}

/// Pixels of `picture` in the box (x, y, w, h) that are far (more than 60 of 255 in a
/// channel) from `colour`: a pointer drawn there, or nothing (0) where the picture is flat.
func pixelsOff(_ picture: [UInt8], width: Int, box: (x: Int, y: Int, w: Int, h: Int), from colour: RGB) -> Int {
    var count = 0
    for y in box.y..<(box.y + box.h) {
        for x in box.x..<(box.x + box.w) {
            let o = (y * width + x) * 3
            if abs(Int(picture[o]) - colour.r) > 60 || abs(Int(picture[o + 1]) - colour.g) > 60 || abs(Int(picture[o + 2]) - colour.b) > 60 {
                count += 1
            }
        }
    }
    return count
}

/// Decodes the stream so far until its newest picture satisfies `test` (20 s at most).
func waitForLastPicture(_ file: URL, width: Int = 640, height: Int = 360, _ test: ([UInt8]) -> Bool) throws -> Bool {
    try Wait.until(timeout: 20, every: 0.2) { try lastPicture(file, width: width, height: height).map(test) ?? false }
}
