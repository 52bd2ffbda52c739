import CommandOptions
import Muxing
import Output

/// `-o FILE|-` and `--format` of `produce` and `consume`: which sink writes it.
enum OutputChoice {
    /// `--format`, else the extension of `-o` (`-` and unknown extensions: raw Annex-B).
    static func format(_ options: ParsedOptions, output: String?, command: String) throws -> ContainerFormat {
        let format = try chosenFormat(options, output: output, command: command)
        try requireLibraries(format, what: "\(command): -o \(output ?? "-")")
        return format
    }

    /// A container needs the FFmpeg libraries, opened here on first use: without them the
    /// run ends before anything is written (exit 69, the package to install named).
    static func requireLibraries(_ format: ContainerFormat, what: String) throws {
        guard format != .h264, let problem = FFmpegLibraries.problem else { return }
        throw CommandError.unavailable("\(what): \(problem)")
    }

    private static func chosenFormat(_ options: ParsedOptions, output: String?, command: String) throws -> ContainerFormat {
        guard let text = options.string("format") else { return output.map(ContainerFormat.forPath) ?? .h264 }
        guard let format = ContainerFormat(name: text) else {
            throw CommandError.usage("\(command): --format \(text): expected \(ContainerFormat.optionValues)")
        }
        guard output != nil else { throw CommandError.usage("\(command): --format needs -o FILE|-") }
        if output == "-", let refusal = format.refusal(forDescriptor: 1) {
            throw CommandError.usage("\(command): -o - --format \(format): \(refusal)")
        }
        return format
    }

    /// `mp4 (MP4, timed)`, `h264 (Annex-B as received)`.
    static func describe(_ format: ContainerFormat) -> String {
        format == .h264 ? "h264: Annex-B as received" : "\(format) container"
    }

    /// The sink for `-o target`: `FileSink` for raw Annex-B, else a `ContainerSink`.
    /// `live`: the access units come as they happen (a live source or input), so a reader
    /// behind a pipe waits for each: `FileSink` delimits what it writes there.
    static func sink(target: String, format: ContainerFormat, fallbackFrameRate: Double?, countedClock: Bool = false,
                     live: Bool = false) throws(SinkError) -> sending any AccessUnitSink {
        if format == .h264 { return try FileSink(target: target, delimitsPipes: live) }
        return try ContainerSink(format: format, target: target, fallbackFrameRate: fallbackFrameRate, countedClock: countedClock)
    }
}
