/// The last `size` packets sent on one SSRC as protected, by sequence number: what answers
/// NACKs. A ring indexed by the sequence number (one SSRC's numbers run on by one, so slot
/// `sequence % size` holds the newest packet of that residue); `size` divides 65536, so the
/// ring stays in step across the 16-bit wrap.
struct PacketHistory {
    private var slots: [(sequence: UInt16, packet: [UInt8])?]

    init(size: Int) {
        precondition(size > 0 && 65536 % size == 0, "a history's size divides 65536")
        slots = Array(repeating: nil, count: size)
    }

    mutating func remember(_ sequence: UInt16, _ packet: [UInt8]) {
        slots[Int(sequence) % slots.count] = (sequence, packet)
    }

    subscript(sequence: UInt16) -> [UInt8]? {
        guard let slot = slots[Int(sequence) % slots.count], slot.sequence == sequence else { return nil }
        return slot.packet
    }
}
