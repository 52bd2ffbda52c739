import Capture
import Glibc
import Testing

@Suite struct CaptureWakeUpTests {
    private func readable(_ fd: Int32) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 0) == 1 && p.revents & Int16(POLLIN) != 0
    }

    @Test func aWakeUpIsKeptUntilDrainedAndCoalesces() {
        let wake = CaptureWakeUp()
        #expect(wake.fd >= 0)
        #expect(!readable(wake.fd) && !wake.drain())
        // Before anyone waits: not lost.
        wake.wake()
        wake.wake()
        #expect(readable(wake.fd))
        #expect(wake.drain())
        // Two wake-ups, one drain.
        #expect(!readable(wake.fd) && !wake.drain())
    }
}
