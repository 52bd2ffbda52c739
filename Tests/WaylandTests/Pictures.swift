import Foundation
import TestSupport

/// A colour as FFmpeg decodes it, 0-255.
typealias RGB = (r: Int, g: Int, b: Int)


/// Decodes the stream so far until its newest picture has these halves (20 s at most).
func waitForPicture(_ file: URL, left: RGB, right: RGB, width: Int = 640, height: Int = 360) throws -> Bool {
    let deadline = Date().addingTimeInterval(20)
    while Date() < deadline {
        if let last = try decode(file, width: width, height: height).last, matches(last, left, right) { return true }
        usleep(200_000)
    }
    return false
}

/// Each picture's colour at the middle of its left half and of its right half.
func decode(_ file: URL, width: Int, height: Int) throws -> [(left: RGB, right: RGB)] {
    let raw = file.deletingLastPathComponent().appendingPathComponent("frames.rgb")
    let run = try Tool.run(["ffmpeg", "-v", "error", "-y", "-i", file.path, "-f", "rawvideo", "-pix_fmt", "rgb24", raw.path])
    guard run.status == 0, let data = try? Data(contentsOf: raw) else { return [] }
    let frame = width * height * 3
    return (0..<(data.count / frame)).map { index in
        func at(_ x: Int, _ y: Int) -> RGB {
            let o = index * frame + (y * width + x) * 3
            return (Int(data[o]), Int(data[o + 1]), Int(data[o + 2]))
        }
        return (at(width / 4, height / 2), at(width * 3 / 4, height / 2))
    }
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
