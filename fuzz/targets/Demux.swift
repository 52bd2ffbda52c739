#if canImport(Glibc)
import Glibc
#endif

/// A container file read as `consume --from FILE` reads one (`DemuxReader.pump`): the input
/// is written to a file and opened through `Demuxer` (libavformat, dlopen'ed: MP4, MPEG-TS,
/// Matroska, FLV, whatever it probes), its extradata set up in `AnnexBPackager`, and every
/// packet (up to 4 000) made NAL units and access units through the `AccessUnitAssembler`
/// (cut by `PacketCutter` first where the packets are not access units: MPEG-TS read
/// without libavcodec's parser), new extradata mid-stream taken or counted as malformed. Checks: no trap (in nalcast's
/// code or in libavformat's: a crash there is a finding too, though not ours to fix); every
/// access unit starts with an AUD and reads (IDR, resolution, timestamp, RBSP) as the
/// sinks read it; audio frames are never empty; the malformed count only grows; the
/// media time `MediaClock` gives the access units (as `StreamIntake` asks it, with
/// `DemuxReader`'s reordering delay and audio placing) never goes back.
///
/// libavformat is not instrumented, so libFuzzer's coverage is nalcast's side only (the
/// packager, the assembler, the demuxer's own code): it steers by what reaches nalcast.
func fuzzDemux(_ bytes: [UInt8]) {
    guard FFmpegLibraries.problem == nil else {
        FuzzDemuxFile.say("demux: \(FFmpegLibraries.problem!)\n")
        exit(2)
    }
    guard FuzzDemuxFile.write(bytes) else { return }
    let deadline = DemuxDeadline()
    deadline.arm(0)  // a file has no deadline in consume: a hang here is a finding
    let demuxer: Demuxer
    do {
        demuxer = try Demuxer(url: "file:" + FuzzDemuxFile.path, shown: "fuzz", options: [], deadline: deadline)
    } catch {
        return
    }
    var packager: AnnexBPackager
    do {
        packager = try AnnexBPackager(extradata: demuxer.extradata)
    } catch {
        return
    }
    var malformed = 0
    var clock = MediaClock(source: .counted)
    var frameRate: Double?
    var lastTime: MediaTime?
    var reorderDelay: Int64?
    var cutter: PacketCutter? = demuxer.packetsAreAccessUnits ? nil : PacketCutter()
    var cutterMalformed = 0
    func take(_ nals: [NALUnit], _ packetTime: MediaTime?) {
        guard let unit = packager.assemble(nals) else { return }
        checkDemuxedUnit(unit)
        // StreamIntake's media time: the SEI's, else the container's, else counted; never
        // going back.
        if let sps = unit.nalUnits.first(where: { $0.type == .sps }), let parsed = try? SequenceParameterSet(sps) { frameRate = parsed.frameRate }
        let time = clock.time(packetTime: packetTime, pts90k: unit.timestamp?.pts90k, frameRate: frameRate, arrivalNs: 0)
        precondition(lastTime.map { time >= $0 } ?? true, "media time went back")
        lastTime = time
    }
    defer { for unit in cutter?.finish() ?? [] { take(unit.nals, unit.time) } }
    for _ in 0..<4_000 {
        guard var packet = try? demuxer.read() else { return }
        if packet.isAudio {
            precondition(packet.data.isEmpty && packet.audioFrames.allSatisfy { !$0.isEmpty }, "an empty audio frame")
            // DemuxReader's placing of the frames of one packet.
            if let pts = packet.pts, let format = demuxer.audioFormat {
                let step = Int64(format.samplesPerPacket) * MediaTime.ticksPerSecond
                for i in packet.audioFrames.indices { _ = pts - (reorderDelay ?? 0) + step * Int64(i) / Int64(max(1, format.sampleRate)) }
            }
            continue
        }
        if reorderDelay == nil, let pts = packet.pts, let dts = packet.dts { reorderDelay = max(0, pts - dts) }
        if let extradata = packet.newExtradata, (try? packager.setExtradata(extradata)) == nil { packager.noteMalformed() }
        let packetTime = (packet.dts ?? packet.pts).map { MediaTime(ticks: $0) }
        if cutter != nil {
            let units = cutter!.push(packet.data, time: packetTime)
            precondition(cutter!.malformedPackets >= cutterMalformed)
            cutterMalformed = cutter!.malformedPackets
            for unit in units {
                precondition(!unit.nals.isEmpty && unit.bytes >= unit.nals.reduce(0) { $0 + $1.wire.count }, "a cut unit that accounts for fewer bytes than it holds")
                take(unit.nals, unit.time)
            }
            continue
        }
        let nals = packager.nalUnits(taking: &packet.data)
        precondition(packager.malformedPackets >= malformed)
        malformed = packager.malformedPackets
        guard !nals.isEmpty else { continue }
        take(nals, packetTime)
    }
}

/// What the sinks and the relay read off an access unit.
private func checkDemuxedUnit(_ unit: AccessUnit) {
    precondition(unit.nalUnits.first?.type == .accessUnitDelimiter, "an access unit without an AUD first")
    _ = unit.nalUnitsForEntry
    _ = unit.resolution
    _ = unit.timestamp
    _ = unit.isIDR
    for nal in unit.nalUnits {
        _ = nal.rbsp(limit: 64)
        _ = nal.rbspPrefix(32)
    }
}

/// The file the input is written to: one per process, in /dev/shm when there is one.
enum FuzzDemuxFile {
    static let path: String = {
        let dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"
        atexit { unlink(FuzzDemuxFile.path) }
        return "\(dir)/nalcast-fuzz-demux-\(getpid())"
    }()

    static func write(_ bytes: [UInt8]) -> Bool {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var at = 0
        while at < bytes.count {
            let n = bytes[at...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { return false }
            at += n
        }
        return true
    }

    static func say(_ text: String) {
        let message = Array(text.utf8)
        _ = message.withUnsafeBytes { Glibc.write(2, $0.baseAddress, $0.count) }
    }
}
