import Clocks
import H264
import Delivery
import Testing

/// Every access unit a reader does not get is in the events the server counts: the ones
/// dropped at the skip and the ones passed over while it waits for the next IDR.
@Suite struct SkipAccountingTests {
    @Test func skippedAndPassedOverAddUpToWhatTheReaderMissed() {
        var b = Broadcaster(config: BroadcasterConfig(joinPolicy: .next), clock: ManualClock())
        let slow = b.addReader().id!
        var atSkip = 0, passedOver = 0
        for unit in Fixture.stream(0..<40) {
            for event in b.publish(unit) {
                switch event {
                case .readerSkipped(let id, let units, _) where id == slow: atSkip += units
                case .readerPassedOver(let id, let units, _) where id == slow: passedOver += units
                default: break
                }
            }
        }
        #expect(atSkip == 17, "frames 0...16 dropped when the bound was crossed")
        #expect(passedOver == 13, "frames 17...29 passed over on the way to IDR 30")
        #expect(b.queue(of: slow)?.stats.skippedAccessUnits == atSkip + passedOver)
        #expect(b.queue(of: slow)?.queued.first?.accessUnit.timestamp?.sequence == 30)
    }
}
