import Foundation
import TestSupport
import IO
import Glibc
import XCTest

final class LoopTests: XCTestCase {
    func testMailboxDeliversAllInOrderAndCoalesces() {
        let loop = EventLoop()
        let batches = Shared<[[Int]]>([])
        let done = expectation(description: "all delivered")
        let mailbox = Mailbox<Int>(loop: loop) { messages in
            let total = batches.update { $0.append(messages); return $0.joined().count }
            if total == 1000 { done.fulfill() }
        }
        for i in 0..<1000 { XCTAssertTrue(mailbox.send(i)) }
        loop.start()
        wait(for: [done], timeout: 30)
        loop.stop()
        loop.join()
        XCTAssertEqual(Array(batches.current.joined()), Array(0..<1000))
        XCTAssertEqual(batches.current.count, 1, "sends before the loop ran wake it once")
    }

    /// A send on the loop thread itself (a relay's input read there) is handled once the
    /// callback that sent it has returned, before the loop polls again: never inside the
    /// sender's call, every message of the turn in one batch, in order.
    func testSendOnTheLoopIsHandledAfterTheSenderReturns() {
        let loop = EventLoop()
        let batches = Shared<[[Int]]>([])
        let seenInsideSender = Shared<[[Int]]?>(nil)
        let done = expectation(description: "delivered")
        let mailbox = Mailbox<Int>(loop: loop) { messages in
            batches.update { $0.append(messages) }
            done.fulfill()
        }
        let timer = LoopTimer(loop: loop) {
            mailbox.send(1)
            mailbox.send(2)
            seenInsideSender.update { $0 = batches.current }
        }
        timer.start(after: 0.01)
        loop.start()
        wait(for: [done], timeout: 30)
        loop.stop()
        loop.join()
        XCTAssertEqual(seenInsideSender.current, [], "nothing handled inside the sending callback")
        XCTAssertEqual(batches.current, [[1, 2]])
    }

    /// A handler run for a send made on the loop thread (before the loop polls) that stops
    /// the loop: the stop is not left waiting for a poll with nothing to wake it.
    func testStopFromAHandlerOfASendOnTheLoop() {
        let loop = EventLoop()
        let mailbox = Mailbox<Int>(loop: loop) { _ in loop.stop() }
        let timer = LoopTimer(loop: loop) { mailbox.send(1) }
        timer.start(after: 0.01)
        loop.start()
        Wait.until(timeout: 10, every: 0.01) { loop.hasFinished }
        XCTAssertTrue(loop.hasFinished, "the loop still waits in its poll")
        if !loop.hasFinished { loop.stop() }
        loop.join()
    }

    func testBoundedMailboxDropsAndCounts() {
        let loop = EventLoop()
        let mailbox = Mailbox<Int>(loop: loop, capacity: 2) { _ in }
        XCTAssertTrue(mailbox.send(1))
        XCTAssertTrue(mailbox.send(2))
        XCTAssertFalse(mailbox.send(3))
        XCTAssertEqual(mailbox.dropped, 1)
        XCTAssertEqual(mailbox.backlog, 2)
    }

    func testStopMessageEndsTheLoop() {
        let loop = EventLoop()
        loop.start()
        XCTAssertFalse(loop.isOnLoop, "the test thread gave the loop away")
        loop.stop()
        loop.join()
        XCTAssertTrue(loop.hasFinished)
        XCTAssertTrue(loop.isOnLoop, "join hands the loop to the joining thread")
    }

    func testStopSentFromAMailboxHandler() {
        enum Message: Sendable { case value(Int), stop }
        let loop = EventLoop()
        let seen = Shared<[Int]>([])
        let mailbox = Mailbox<Message>(loop: loop) { messages in
            for message in messages {
                switch message {
                case .value(let v): seen.update { $0.append(v) }
                case .stop: loop.stop()
                }
            }
        }
        loop.start()
        mailbox.send(.value(1))
        mailbox.send(.value(2))
        mailbox.send(.stop)
        loop.join()
        XCTAssertEqual(seen.current, [1, 2])
    }

    func testTimersFire() {
        let loop = EventLoop()
        let ticks = Shared(0)
        let once = Shared(0)
        let keep = Keep()
        let oneShot = LoopTimer(loop: loop) { once.update { $0 += 1 } }
        let repeating = LoopTimer(loop: loop) {
            if ticks.update({ $0 += 1; return $0 }) == 3 {
                (keep.objects[1] as! LoopTimer).stop()
                loop.stop()
            }
        }
        keep.objects = [oneShot, repeating]
        oneShot.start(after: 0.001)
        repeating.start(after: 0.001, repeating: 0.001)
        loop.start()
        loop.join()
        XCTAssertEqual(ticks.current, 3)
        XCTAssertEqual(once.current, 1)
    }

    func testSignalWatcherRunsOnLoop() {
        let loop = EventLoop()
        let got = Shared(false)
        let watcher = SignalWatcher(loop: loop, signal: SIGUSR1) {
            got.update { $0 = true }
            loop.stop()
        }
        watcher.start()
        let ready = Mailbox<Int>(loop: loop) { _ in kill(getpid(), SIGUSR1) }
        ready.send(0)
        loop.start()
        loop.join()
        XCTAssertTrue(got.current)
    }
}
