import Foundation

/// What FFmpeg makes of a recorded file: ffprobe's count of the decoded video frames and their
/// size, and FFmpeg's complaints when it decodes the whole file.
public enum MediaProbe {
    public struct Video: Sendable, Equatable, CustomStringConvertible {
        public let frames: Int
        public let width: Int
        public let height: Int
        public init(frames: Int, width: Int, height: Int) {
            self.frames = frames
            self.width = width
            self.height = height
        }
        public var description: String { "\(frames) frames at \(width)x\(height)" }
    }

    /// The first video stream of `path`, its frames decoded and counted (`-count_frames`);
    /// `format` forces the demuxer (`h264`, `mpegts`, `flv`). Nil when ffprobe finds none; the
    /// error carries ffprobe's stderr.
    public static func video(_ path: String, format: String? = nil) throws -> Video? {
        let formatArgs = format.map { ["-f", $0] } ?? []
        let r = try Tool.run(["ffprobe", "-v", "error"] + formatArgs + ["-count_frames", "-select_streams", "v:0",
                             "-show_entries", "stream=width,height,nb_read_frames", "-of", "default=noprint_wrappers=1", path])
        var fields: [String: Int] = [:]
        for line in r.stdout.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1)
            if parts.count == 2, let value = Int(parts[1]) { fields[String(parts[0])] = value }
        }
        guard let frames = fields["nb_read_frames"], let width = fields["width"], let height = fields["height"] else {
            if r.status != 0 { throw MediaServerError("ffprobe \(path): \(r.stderr)") }
            return nil
        }
        return Video(frames: frames, width: width, height: height)
    }

    /// FFmpeg's messages at `-v error` decoding every frame of `path` (its pictures only with
    /// `videoOnly`): "" when it decodes cleanly.
    public static func decodeErrors(_ path: String, format: String? = nil, videoOnly: Bool = false) throws -> String {
        let formatArgs = format.map { ["-f", $0] } ?? []
        let r = try Tool.run(["ffmpeg", "-hide_banner", "-nostdin", "-v", "error"] + formatArgs + ["-i", path] + (videoOnly ? ["-map", "0:v"] : []) + ["-f", "null", "-"])
        let text = r.stderr.trimmingCharacters(in: .whitespacesAndNewlines)
        return r.status == 0 ? text : "exit \(r.status): \(text)"
    }
}
