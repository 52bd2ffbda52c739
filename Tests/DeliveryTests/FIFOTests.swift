import FIFO
import Testing

/// The one FIFO the queues are built on: order, indices from the front, removal from the
/// middle, and its storage given back as the front moves.
@Suite struct FIFOTests {
    @Test func elementsComeOffInTheOrderTheyWentOn() {
        var fifo = FIFO<Int>()
        #expect(fifo.isEmpty && fifo.first == nil && fifo.popFirst() == nil)
        for i in 0..<200 { fifo.append(i) }
        var taken: [Int] = []
        for _ in 0..<150 { taken.append(fifo.popFirst()!) }
        for i in 200..<300 { fifo.append(i) }
        while let next = fifo.popFirst() { taken.append(next) }
        #expect(taken == Array(0..<300))
        #expect(fifo.isEmpty && fifo.count == 0)
    }

    @Test func indicesCountFromTheFrontWhateverWasTaken() {
        var fifo = FIFO<Int>()
        for i in 0..<100 { fifo.append(i) }
        let first = fifo.removeFirst(70)
        #expect(Array(first) == Array(0..<70))
        #expect(fifo.count == 30 && fifo.first == 70 && fifo.last == 99 && fifo[0] == 70 && fifo[29] == 99)
        fifo[1] = -1
        #expect(Array(fifo.elements.prefix(3)) == [70, -1, 72])
        #expect(Array(fifo.removeFirst(1000)).count == 30 && fifo.isEmpty)
    }

    @Test func oneInOneOutAndBurstsKeepTheirOrder() {
        // A reader at the live edge holds one element at a time (the pop of the only one has
        // a path of its own); a lagging one holds several, and catches up.
        var fifo = FIFO<String>()
        var taken: [String] = []
        var next = 0
        for round in 0..<50 {
            let burst = round % 7 == 0 ? 5 : 1
            for _ in 0..<burst {
                fifo.append("\(next)")
                next += 1
            }
            let takes = round % 3 == 0 ? 1 : fifo.count
            for _ in 0..<takes { taken.append(fifo.popFirst()!) }
            #expect(fifo.count == next - taken.count)
        }
        while let rest = fifo.popFirst() { taken.append(rest) }
        #expect(taken == (0..<next).map { "\($0)" })
        fifo.append("last")
        #expect(fifo.first == "last" && fifo.last == "last" && fifo.popFirst() == "last" && fifo.isEmpty)
    }

    @Test func aRangeIsRemovedFromTheMiddle() {
        var fifo = FIFO<Int>()
        for i in 0..<10 { fifo.append(i) }
        _ = fifo.removeFirst(3)
        fifo.removeSubrange(1..<4)  // 4, 5, 6
        #expect(Array(fifo.elements) == [3, 7, 8, 9])
        fifo.removeSubrange(1..<4)
        #expect(Array(fifo.elements) == [3])
    }
}
