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
