#if canImport(Glibc)
import Glibc
#endif
import CommandOptions
import H264
import Media

/// `nalcast inspect FILE|-`: one line per access unit and a summary. The stream debugger.
enum InspectCommand: Command {
    static let name = "inspect"
    static let summary = "Read an Annex-B H.264 stream and describe its access units."
    static let usage = "nalcast inspect [--json] [--summary] FILE|-"
    static let specs: [OptionSpec] = [
        OptionSpec(name: "json", value: nil, help: "print JSON: the access units under \"units\", the summary at the top level"),
        OptionSpec(name: "summary", value: nil, help: "print only the summary"),
        OptionSpec(name: "max-nal-size", value: "SIZE", help: "drop NAL units larger than this and resync", defaultText: "8M"),
    ]
    static let notes = ["FILE: an Annex-B H.264 stream (a .h264 file or segment; for an MP4 segment it says how to extract one), or - for stdin"]
    static let operand: ValueKind? = .file
    static let environmentExample = "NALCAST_SUMMARY=1 nalcast inspect recording.h264"

    static func run(_ options: ParsedOptions) throws -> ExitCode {
        guard options.positionals.count == 1 else { throw CommandError.usage("inspect: expected one FILE or - (see 'nalcast inspect --help')") }
        let maxNAL = try options.value("max-nal-size", default: AnnexBScanner.defaultMaxNALUnitSize, ValueFormat.byteSize)
        let json = options.has("json")
        let perUnit = !options.has("summary")
        let input = try InputFile(path: options.positionals[0])
        defer { input.close() }

        var parser = AnnexBParser(maxNALUnitSize: Swift.max(4, maxNAL))
        var out = OutputBuffer()
        var summary = Summary()
        if json { out.line(perUnit ? "{\"units\":[" : "{") }
        let describe: (AccessUnit) -> Void = { unit in
            if perUnit {
                if json {
                    out.line((summary.accessUnits > 0 ? "," : "") + unitJSON(unit, index: summary.accessUnits))
                } else {
                    out.line(unitLine(unit, index: summary.accessUnits))
                }
            }
            summary.add(unit)
        }
        // An MP4, Y4M or MPEG-TS file read as Annex-B is all garbage: say what it is instead.
        let (head, ended) = try sniff(input, name: options.positionals[0], command: name)
        for chunk in head { parser.push(chunk, emit: describe) }
        while !ended {
            let chunk = try input.read()
            if chunk.isEmpty { break }
            parser.push(chunk, emit: describe)
        }
        parser.finish(emit: describe)
        summary.finish(parser)
        if json {
            out.line((perUnit ? "]," : "") + summary.jsonFields() + "}")
        } else {
            if perUnit { out.line("") }
            for line in summary.textLines() { out.line(line) }
        }
        out.flush()
        return .ok
    }

    /// Reads the first chunks until `InputSniffer` can tell; throws exit 65 with one line
    /// when the input is not Annex-B. Returns the chunks read and whether the input ended.
    static func sniff(_ input: InputFile, name: String, command: String) throws -> (chunks: [[UInt8]], ended: Bool) {
        var head = InputSniffer.Head()
        while true {
            let chunk = try input.read()
            let ended = chunk.isEmpty
            switch head.add(chunk) {
            case .annexB: return (head.chunks, ended)
            case .notAnnexB(let format):
                throw CommandError(code: .dataError, message: "\(command): " + InputSniffer.explain(format, name: name))
            case .needMore: if ended { return (head.chunks, ended) }
            }
        }
    }

    static func unitLine(_ unit: AccessUnit, index: Int) -> String {
        var s = String(index).leftPad(7) + "  " + (unit.isIDR ? "IDR" : "   ") + "  " + String(unit.byteCount).leftPad(9) + " B  "
        s += unit.nalTypes.map(\.name).joined(separator: ",")
        if let r = unit.resolution { s += "  \(r)" }
        if let ts = unit.timestamp { s += "  seq=\(ts.sequence) pts=\(fixed(ts.seconds, 3)) capture=\(ts.captureTimeNs)" }
        return s
    }

    static func unitJSON(_ unit: AccessUnit, index: Int) -> String {
        var s = "{\"index\":\(index),\"idr\":\(unit.isIDR),\"bytes\":\(unit.byteCount),\"nalTypes\":[\(unit.nalTypes.map { String($0.rawValue) }.joined(separator: ","))]"
        if let r = unit.resolution { s += ",\"width\":\(r.width),\"height\":\(r.height)" }
        if let ts = unit.timestamp {
            s += ",\"timestamp\":{\"sequence\":\(ts.sequence),\"captureTimeNs\":\(ts.captureTimeNs),\"pts90k\":\(ts.pts90k),\"keyframe\":\(ts.isKeyframe)}"
        }
        return s + "}"
    }

    struct Summary {
        var accessUnits = 0
        var idrAccessUnits = 0
        var bytes = 0
        var timestamped = 0
        var resolutions: [Resolution] = []
        var nalUnitsByType: [NALType: Int] = [:]
        var frameRate: Double?
        var skippedBytes = 0
        var oversized = 0
        var parseErrors = 0
        var firstPTS: UInt64?
        var lastPTS: UInt64?

        mutating func add(_ unit: AccessUnit) {
            accessUnits += 1
            if unit.isIDR { idrAccessUnits += 1 }
            bytes += unit.byteCount
            if let r = unit.resolution, resolutions.last != r { resolutions.append(r) }
            if let ts = unit.timestamp {
                timestamped += 1
                if firstPTS == nil { firstPTS = ts.pts90k }
                lastPTS = ts.pts90k
            }
        }

        mutating func finish(_ parser: AnnexBParser) {
            nalUnitsByType = parser.nalUnitsByType
            frameRate = parser.assembler.activeSPS?.frameRate
            skippedBytes = parser.scanner.skippedBytes
            oversized = parser.scanner.oversizedNALUnits
            parseErrors = parser.assembler.parseErrors
        }

        var width: Int? { resolutions.first?.width }
        var height: Int? { resolutions.first?.height }

        func jsonFields() -> String {
            let types = nalUnitsByType.sorted { $0.key < $1.key }.map { "\"\($0.key.rawValue)\":\($0.value)" }.joined(separator: ",")
            var s = "\"accessUnits\":\(accessUnits),\"idrAccessUnits\":\(idrAccessUnits),\"nalUnitsByType\":{\(types)}"
            s += ",\"width\":\(width.map(String.init) ?? "null"),\"height\":\(height.map(String.init) ?? "null")"
            s += ",\"resolutions\":[\(resolutions.map { "\"\($0)\"" }.joined(separator: ","))]"
            s += ",\"frameRate\":\(frameRate.map { short($0, maxDigits: 6) } ?? "null")"
            s += ",\"bytes\":\(bytes),\"skippedBytes\":\(skippedBytes),\"oversizedNALUnits\":\(oversized),\"parseErrors\":\(parseErrors)"
            s += ",\"timestampedAccessUnits\":\(timestamped)"
            return s
        }

        func textLines() -> [String] {
            let types = nalUnitsByType.sorted { $0.key < $1.key }.map { "\($0.key.rawValue)(\($0.key.name)):\($0.value)" }.joined(separator: " ")
            var lines = [
                "access units: \(accessUnits) (\(idrAccessUnits) IDR), \(bytes) bytes",
                "NAL units by type: \(types.isEmpty ? "none" : types)",
                "resolution: \(resolutions.isEmpty ? "unknown" : resolutions.map(\.description).joined(separator: " -> "))",
                "frame rate (VUI): \(frameRate.map { fixed($0, 3) } ?? "not signalled")",
                "skipped while resyncing: \(skippedBytes) bytes\(oversized > 0 ? " (\(oversized) oversized NAL units)" : "")",
            ]
            if parseErrors > 0 { lines.append("unparseable parameter sets or slice headers: \(parseErrors)") }
            if timestamped > 0, let a = firstPTS, let b = lastPTS {
                lines.append("nalcast timestamps: \(timestamped) access units, media time \(fixed(Double(a) / 90000, 3)) s to \(fixed(Double(b) / 90000, 3)) s")
            }
            return lines
        }
    }
}

extension String {
    func leftPad(_ width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
}
