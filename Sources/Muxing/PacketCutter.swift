import H264
import Media

/// Access units cut out of packets that are pieces of an Annex-B stream, not access units:
/// the PES payloads of MPEG-TS, which `Demuxer` reads without libavcodec's H.264 parser
/// (`Demuxer.packetsAreAccessUnits` false). That parser was a third of the CPU of demuxing
/// an MPEG-TS file, and did what nalcast does anyway: find every start code, and look at
/// each NAL unit's header.
///
/// - NAL units are cut by `AnnexBScanner` across packets: a NAL unit (an access unit) may
///   span PES packets, and one PES packet may hold several access units. NAL units inside one
///   packet share its bytes.
/// - An access unit ends where the next one begins, by nalcast's one rule for that: an
///   `AccessUnitAssembler`'s (`beginsAccessUnit`: an AUD, SPS, PPS, SEI or a NAL unit of type
///   14 to 18 after a picture's slices, or the first slice of a new primary coded picture;
///   end of sequence and end of stream close the one they end), as for every other Annex-B
///   input. The NAL unit in progress is looked at from its first bytes
///   (`AnnexBScanner.pendingHead`): an access unit goes out as soon as the next one's first
///   NAL unit has begun, as the parser's did (it too waited for the next picture). A unit
///   with nothing to decode (AUDs, end of stream alone) is not handed on: its bytes are
///   accounted for in the next one's.
/// - Times are H.222.0's: a PES packet's time belongs to the first access unit that begins
///   in it; an access unit that begins in a packet whose time went to an earlier one has
///   none (`MediaClock` counts it on from the frame rate).
///
/// The caller hands each cut unit to `AnnexBPackager.assemble` (AUD, parameter sets before
/// an IDR), as it does a packet that is an access unit. Pure; used by one thread.
public struct PacketCutter {
    /// One access unit's NAL units, the time of the packet it began in, and the bytes of
    /// input it accounts for.
    public struct Unit {
        public var nals: [NALUnit]
        public var time: MediaTime?
        public var bytes: Int
    }

    /// Where a NAL unit began: the packet's number and time.
    private struct Origin {
        var serial: Int
        var time: MediaTime?
    }

    private var scanner = AnnexBScanner()
    /// Holds the access unit in hand and says where the next begins.
    private var assembler = AccessUnitAssembler()
    /// The packet the access unit in hand began in.
    private var unitOrigin: Origin?
    /// The packet the NAL unit in progress began in.
    private var pendingOrigin: Origin?
    private var serial = 0
    /// The last packet whose time went to an access unit.
    private var timedSerial = -1
    /// Bytes the scanner skipped or dropped, or of a unit not handed on, not yet in a unit's `bytes`.
    private var unaccounted = 0
    private var lastSkipped = 0
    private var lastOversized = 0
    /// Packets with bytes that were not NAL units (before the first start code) or that
    /// ended a NAL unit too large to keep.
    public private(set) var malformedPackets = 0

    public init() {}

    /// The next packet and its container time; returns the access units it completed.
    public mutating func push(_ packet: [UInt8], time: MediaTime?) -> [Unit] {
        serial += 1
        let here = Origin(serial: serial, time: time)
        var carried = scanner.pendingBytes > 0 ? pendingOrigin : nil
        var nals: [NALUnit] = []
        scanner.push(packet) { nals.append($0) }
        var out: [Unit] = []
        for nal in nals {
            add(nal, carried ?? here, into: &out)
            carried = nil
        }
        // The NAL unit now in progress began here, unless it is the one carried in (nothing
        // was emitted).
        pendingOrigin = scanner.pendingBytes > 0 ? (carried ?? here) : nil
        noteScannerLosses()
        // The NAL unit in progress may show already that the access unit in hand is whole.
        let head = scanner.pendingHead()
        if !head.isEmpty, assembler.beginsAccessUnit(head: head, isWhole: false) == true { close(into: &out) }
        return out
    }

    /// The end of the input: the last NAL unit and the access unit it ends.
    public mutating func finish() -> [Unit] {
        var out: [Unit] = []
        if let nal = scanner.finish() { add(nal, pendingOrigin ?? Origin(serial: serial, time: nil), into: &out) }
        pendingOrigin = nil
        noteScannerLosses()
        close(into: &out)
        return out
    }

    private mutating func add(_ nal: NALUnit, _ origin: Origin, into out: inout [Unit]) {
        if assembler.beginsAccessUnit(head: nal.body, isWhole: true) == true { close(into: &out) }
        if assembler.nalUnitsInHand == 0 { unitOrigin = origin }
        assembler.append(nal)
    }

    /// Ends the access unit in hand: out with the time of the packet it began in, unless that
    /// went to an earlier one; one with nothing to decode is not handed on (its time is left
    /// for the next, its bytes carried into the next one's).
    private mutating func close(into out: inout [Unit]) {
        guard let origin = unitOrigin else { return }
        let bytes = assembler.bytesInHand + unaccounted
        unitOrigin = nil
        guard let unit = assembler.endAccessUnit() else {
            unaccounted = bytes
            return
        }
        var time: MediaTime?
        if origin.serial > timedSerial {
            time = origin.time
            timedSerial = origin.serial
        }
        out.append(Unit(nals: unit.nalUnits, time: time, bytes: bytes))
        unaccounted = 0
    }

    private mutating func noteScannerLosses() {
        let skipped = scanner.skippedBytes, oversized = scanner.oversizedNALUnits
        if skipped > lastSkipped || oversized > lastOversized { malformedPackets += 1 }
        unaccounted += skipped - lastSkipped
        lastSkipped = skipped
        lastOversized = oversized
    }
}
