/// One published moment of the stream as MPEG-TS (`--listen ts:…`): whole 188-byte TS
/// packets holding one video access unit and the sound since the previous one, muxed once
/// and shared by every TS reader (it travels with its `QueuedAccessUnit`, in its
/// `WireForms`, so joins, skips and bounds are the access unit's).
///
/// A reader that starts or skips sees TS packets of each PID whose continuity counters do not
/// follow what it got before; `TSContinuity` puts them right per reader. For that, each unit
/// knows, per PID, the counter of its first packet with a payload and the one that follows
/// its last.
public struct TransportStreamUnit: Sendable {
    public static let packetSize = 188

    /// Whole TS packets, shared with every reader.
    public let bytes: ArraySlice<UInt8>
    /// Per PID with payload packets here: the first one's continuity counter and the next
    /// counter after the last one, in the order the PIDs first appear.
    public let continuity: [PIDContinuity]

    public struct PIDContinuity: Sendable, Equatable {
        public let pid: UInt16
        public let first: UInt8
        public let next: UInt8
        public init(pid: UInt16, first: UInt8, next: UInt8) {
            self.pid = pid
            self.first = first
            self.next = next
        }
    }

    /// `bytes` must be whole TS packets (a trailing partial packet is left out).
    public init(bytes: [UInt8]) {
        let whole = bytes.count - bytes.count % Self.packetSize
        self.bytes = bytes[0..<whole]
        var summary: [PIDContinuity] = []
        var at = 0
        while at < whole {
            if let header = TSPacketHeader(bytes, at: at), header.hasPayload {
                if let i = summary.firstIndex(where: { $0.pid == header.pid }) {
                    summary[i] = PIDContinuity(pid: header.pid, first: summary[i].first, next: (header.continuity + 1) & 15)
                } else {
                    summary.append(PIDContinuity(pid: header.pid, first: header.continuity, next: (header.continuity + 1) & 15))
                }
            }
            at += Self.packetSize
        }
        continuity = summary
    }
}

/// The four header bytes of one TS packet (ISO/IEC 13818-1 2.4.3.2), as far as continuity
/// needs them.
struct TSPacketHeader {
    let pid: UInt16
    let hasPayload: Bool
    let continuity: UInt8

    init?(_ bytes: some RandomAccessCollection<UInt8>, at offset: Int) {
        let i = bytes.index(bytes.startIndex, offsetBy: offset)
        guard bytes[i] == 0x47 else { return nil }
        let b1 = bytes[bytes.index(i, offsetBy: 1)], b2 = bytes[bytes.index(i, offsetBy: 2)], b3 = bytes[bytes.index(i, offsetBy: 3)]
        pid = (UInt16(b1 & 0x1F) << 8) | UInt16(b2)
        hasPayload = b3 & 0x10 != 0
        continuity = b3 & 0x0F
    }
}

/// What one TS reader was sent, per PID: the continuity counter it expects next. When a
/// unit does not follow (the reader joined late or skipped to an IDR), the reader's counters
/// are shifted from there on, so every PID continues without a break; the shared bytes go
/// out as they are while no shift is needed (a reader that never skipped), a rewritten copy
/// of the unit otherwise (one memcpy of the unit per unit for a reader that skipped once).
///
/// Pure; the stream server keeps one per TS reader on the loop thread.
public struct TSContinuity: Sendable {
    /// The counter the reader expects next, per PID.
    private var expected: [UInt16: UInt8] = [:]
    /// What to add to the shared stream's counters, per PID (mod 16).
    private var shift: [UInt16: UInt8] = [:]
    /// Units sent as a rewritten copy.
    public private(set) var rewrittenUnits = 0

    public init() {}

    /// The bytes to send this reader for `unit`, next after what it was sent before.
    public mutating func bytes(for unit: TransportStreamUnit) -> ArraySlice<UInt8> {
        for pid in unit.continuity {
            var s = shift[pid.pid] ?? 0
            if let want = expected[pid.pid] { s = (want &- pid.first) & 15 }
            shift[pid.pid] = s
            expected[pid.pid] = (pid.next &+ s) & 15
        }
        guard shift.values.contains(where: { $0 != 0 }) else { return unit.bytes }
        rewrittenUnits += 1
        var copy = Array(unit.bytes)
        var at = 0
        while at + TransportStreamUnit.packetSize <= copy.count {
            if let header = TSPacketHeader(copy, at: at), let s = shift[header.pid], s != 0 {
                copy[at + 3] = (copy[at + 3] & 0xF0) | ((header.continuity &+ s) & 15)
            }
            at += TransportStreamUnit.packetSize
        }
        return copy[...]
    }
}
