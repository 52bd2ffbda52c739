import Capture
import X11Capture
import Encoder
import Foundation
import Media
import Synchronization
import TestSupport


/// One decoded picture as 8-bit RGB.
struct DecodedPicture {
    let width: Int
    let height: Int
    let rgb: [UInt8]

    func pixel(x: Int, y: Int) -> (r: Int, g: Int, b: Int) {
        let i = (y * width + x) * 3
        return (Int(rgb[i]), Int(rgb[i + 1]), Int(rgb[i + 2]))
    }

    /// True when the pixel is within `tolerance` of the 0xRRGGBB colour on every channel.
    func matches(x: Int, y: Int, _ colour: UInt32, tolerance: Int = 16) -> Bool {
        let p = pixel(x: x, y: y)
        return abs(p.r - Int(colour >> 16 & 0xff)) <= tolerance
            && abs(p.g - Int(colour >> 8 & 0xff)) <= tolerance
            && abs(p.b - Int(colour & 0xff)) <= tolerance
    }

    func describe(x: Int, y: Int) -> String {
        let p = pixel(x: x, y: y)
        return "(\(x),\(y)) = rgb(\(p.r),\(p.g),\(p.b))"
    }
}

/// Capture → convert → encode with the real pipeline pieces, then decode with FFmpeg.
enum RoundTrip {
    /// Grabs `count` frames from `source` and encodes them (size changes reopen the encoder).
    static func encode(_ source: some FrameSource, count: Int, bitrate: Int = 4_000_000,
                       between: (Int) -> Void = { _ in }) throws -> [AccessUnit] {
        let converter = ColorConverter()
        var parameters = H264Encoder.Parameters(width: source.width, height: source.height, frameRate: source.frameRate)
        parameters.bitrate = bitrate
        parameters.preset = "ultrafast"
        let encoder = try H264Encoder(parameters: parameters)
        var units: [AccessUnit] = []
        for index in 0..<count {
            between(index)
            guard let frame = try source.nextFrame() else { break }
            if let au = try encoder.encode(try converter.convert(frame)) { units.append(au) }
        }
        units += try encoder.flush()
        return units
    }

    /// Decodes an Annex-B stream of `width`x`height` pictures with ffmpeg into RGB.
    static func decode(_ units: [AccessUnit], width: Int, height: Int) throws -> [DecodedPicture] {
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let stream = dir.appendingPathComponent("capture.h264")
        let raw = dir.appendingPathComponent("capture.rgb")
        var bytes: [UInt8] = []
        for au in units { for nal in au.nalUnits { bytes.append(contentsOf: nal.wire) } }
        try Data(bytes).write(to: stream)
        let result = try Tool.run(["ffmpeg", "-v", "error", "-f", "h264", "-i", stream.path,
                                   "-f", "rawvideo", "-pix_fmt", "rgb24", "-y", raw.path])
        guard result.status == 0 else { throw DecodeError.ffmpeg(result.stderr) }
        let data = try [UInt8](Data(contentsOf: raw))
        let size = width * height * 3
        guard size > 0, data.count % size == 0 else { throw DecodeError.size(bytes: data.count, width: width, height: height) }
        return (0..<(data.count / size)).map { DecodedPicture(width: width, height: height, rgb: Array(data[($0 * size)..<(($0 + 1) * size)])) }
    }

    /// Width and height of every picture ffprobe decodes in the stream.
    static func probeSizes(_ units: [AccessUnit]) throws -> [String] {
        let dir = try Tool.tempDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let stream = dir.appendingPathComponent("capture.h264")
        var bytes: [UInt8] = []
        for au in units { for nal in au.nalUnits { bytes.append(contentsOf: nal.wire) } }
        try Data(bytes).write(to: stream)
        return try probeSizes(stream: stream)
    }

    /// Width and height of every picture ffprobe decodes in an Annex-B file.
    static func probeSizes(stream: URL) throws -> [String] {
        let result = try Tool.run(["ffprobe", "-v", "error", "-f", "h264", "-show_entries", "frame=width,height",
                                   "-of", "csv=p=0", stream.path])
        // Lines look like "192,160" (ffprobe 5.1 may add a trailing comma or an empty line).
        return result.stdout.split(separator: "\n").compactMap { line in
            let numbers = line.split(separator: ",").compactMap { Int($0) }
            return numbers.count == 2 ? "\(numbers[0])x\(numbers[1])" : nil
        }
    }
}

enum DecodeError: Error {
    case ffmpeg(String)
    case size(bytes: Int, width: Int, height: Int)
}

/// Collects what a library logs, for checks.
final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
    var closure: @Sendable (String) -> Void { { [self] in append($0) } }
}
