import Delivery
import Testing

@Suite struct ResyncGateTests {
    /// A hand-off that takes what `accepts` says, recording what it took.
    struct HandOff {
        var accepts: [Bool]
        var taken: [Int] = []
        var next = 0
        mutating func send(_ unit: Int) -> Bool {
            defer { next += 1 }
            guard accepts[next] else { return false }
            taken.append(unit)
            return true
        }
    }

    @Test func nothingRefusedPassesEverything() {
        var gate = ResyncGate()
        var handOff = HandOff(accepts: Array(repeating: true, count: 5))
        for unit in 0..<5 {
            #expect(gate.pass(isIDR: unit == 0) { handOff.send(unit) } == .sent)
        }
        #expect(handOff.taken == [0, 1, 2, 3, 4])
        #expect(gate.lost == 0 && gate.gaps == 0 && !gate.isOpen)
    }

    @Test func aRefusalHoldsEverythingUpToTheNextIDR() {
        // Units 0...9, IDRs at 0 and 6. The hand-off refuses unit 2 and 3, then takes all.
        let idrs: Set<Int> = [0, 6]
        var gate = ResyncGate()
        var outcomes: [ResyncGate.Outcome] = []
        var taken: [Int] = []
        for unit in 0..<10 {
            outcomes.append(gate.pass(isIDR: idrs.contains(unit)) {
                let ok = !(unit == 2 || unit == 3)
                if ok { taken.append(unit) }
                return ok
            })
        }
        #expect(taken == [0, 1, 6, 7, 8, 9], "nothing between the refusal and the IDR goes out")
        #expect(outcomes[2] == .refused(opensGap: true))
        #expect(outcomes[3] == .held, "a gap is open: the hand-off is not even asked")
        #expect(outcomes[4] == .held && outcomes[5] == .held)
        #expect(outcomes[6] == .resumed(lost: 4))
        #expect(outcomes[7] == .sent)
        #expect(gate.lost == 4 && gate.gaps == 1 && !gate.isOpen)
    }

    @Test func aRefusedIDRKeepsTheGapOpenAndAsksAgain() {
        var gate = ResyncGate()
        #expect(gate.pass(isIDR: true) { true } == .sent)
        #expect(gate.pass(isIDR: false) { false } == .refused(opensGap: true))
        #expect(gate.pass(isIDR: true) { false } == .refused(opensGap: false))
        #expect(gate.pass(isIDR: false) { true } == .held)
        #expect(gate.pass(isIDR: true) { true } == .resumed(lost: 3))
        #expect(gate.gaps == 1 && gate.lost == 3)
        #expect(gate.pass(isIDR: false) { false } == .refused(opensGap: true))
        #expect(gate.gaps == 2)
    }
}

extension ResyncGateTests {
    @Test func anIDRIsAskedForOncePerGapWhenThereIsRoom() {
        var gate = ResyncGate()
        #expect(gate.shouldAskForIDR(hasRoom: true) == false, "no gap, no IDR")
        #expect(gate.pass(isIDR: false) { false } == .refused(opensGap: true))
        #expect(gate.shouldAskForIDR(hasRoom: false) == false, "still full: an IDR now would be lost too")
        #expect(gate.pass(isIDR: false) { true } == .held)
        #expect(gate.shouldAskForIDR(hasRoom: true) == true)
        #expect(gate.shouldAskForIDR(hasRoom: true) == false, "asked already")
        #expect(gate.pass(isIDR: true) { false } == .refused(opensGap: false))
        #expect(gate.shouldAskForIDR(hasRoom: true) == true, "the IDR was refused: ask again")
        #expect(gate.pass(isIDR: true) { true } == .resumed(lost: 3))
        #expect(gate.shouldAskForIDR(hasRoom: true) == false)
    }
}
