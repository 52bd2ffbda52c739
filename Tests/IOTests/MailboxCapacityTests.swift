import IO
import Testing

@Suite struct MailboxCapacityTests {
    /// Past its capacity a mailbox refuses and counts, except for the messages that must
    /// never be lost (the end of capture behind a full backlog of access units).
    @Test func fullRefusesButPastCapacityGetsThrough() {
        let loop = EventLoop()
        let mailbox = Mailbox<Int>(loop: loop, capacity: 2) { _ in }
        #expect(mailbox.send(1) && mailbox.send(2))
        #expect(mailbox.send(3) == false)
        #expect(mailbox.dropped == 1)
        #expect(mailbox.send(4, pastCapacity: true))
        #expect(mailbox.backlog == 3 && mailbox.dropped == 1)
    }
}
