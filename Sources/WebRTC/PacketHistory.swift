/// The last `size` packets sent on one numbering (one SSRC's sequence numbers, or the
/// transport-wide ones), by sequence number: a `Packet` each, what was kept of it (the
/// protected bytes that answer NACKs; the size and send time `TransportWideEstimator` reads
/// feedback against). A ring indexed by the sequence number (the numbers run on by one, so
/// slot `sequence % size` holds the newest packet of that residue); `size` divides 65536, so
/// the ring stays in step across the 16-bit wrap.
struct PacketHistory<Packet> {
    private var slots: [(sequence: UInt16, packet: Packet)?]

    init(size: Int) {
        precondition(size > 0 && 65536 % size == 0, "a history's size divides 65536")
        slots = Array(repeating: nil, count: size)
    }

    mutating func remember(_ sequence: UInt16, _ packet: Packet) {
        slots[Int(sequence) % slots.count] = (sequence, packet)
    }

    subscript(sequence: UInt16) -> Packet? {
        guard let slot = slots[Int(sequence) % slots.count], slot.sequence == sequence else { return nil }
        return slot.packet
    }
}

extension PacketHistory: Sendable where Packet: Sendable {}
