import RTP
import XCTest
@testable import WebRTC

/// The estimate made from transport-wide feedback. `BitrateDecision` (Delivery) limits the
/// encoder only by an estimate under what the viewer was sent while it loses 2 % or more.
final class TransportWideEstimatorTests: XCTestCase {
    /// One second of `count` packets of `bytes`, sent evenly from `startNs`, each arriving
    /// after `delayUs(i)` (nil: lost), acknowledged by one feedback packet; then the close.
    static func second(_ estimator: inout TransportWideEstimator, from startNs: UInt64, first: UInt16, count: Int, bytes: Int,
                       delayUs: (Int) -> Int64?) -> UInt64? {
        var packets: [(sequence: UInt16, arrivalUs: Int64?)] = []
        for i in 0..<count {
            let sendNs = startNs + UInt64(i) * 1_000_000_000 / UInt64(count)
            let sequence = first &+ UInt16(i)
            estimator.sent(sequence, bytes: bytes, sendNs: sendNs)
            packets.append((sequence, delayUs(i).map { Int64(sendNs / 1000) + $0 }))
        }
        estimator.feedback(TransportFeedback(mediaSSRC: 1, baseSequence: first, feedbackCount: 0, packets: packets))
        return estimator.close(nowNs: startNs + 1_000_000_000)
    }

    /// A path that takes what is sent (the delay steady): the estimate stays above it and
    /// climbs, 8 % a second at least, so the encoder is never held by it.
    func testASteadyPathRaisesTheEstimateAboveWhatIsSent() {
        var estimator = TransportWideEstimator()
        estimator.close(nowNs: 0)
        let first = Self.second(&estimator, from: 0, first: 0, count: 100, bytes: 1000) { _ in 30_000 }
        XCTAssertEqual(first, 1_200_000, "1.5 x the 800 kbit/s that arrived")
        let second = Self.second(&estimator, from: 1_000_000_000, first: 100, count: 100, bytes: 1000) { _ in 30_000 }
        XCTAssertEqual(second, 1_296_000, "1.08 x the last")
        XCTAssertEqual(estimator.fractionLost, 0)
    }

    /// A queue filling (the delay growing 40 ms over the second): 85 % of what arrived.
    func testAGrowingQueueBringsTheEstimateUnderWhatArrived() {
        var estimator = TransportWideEstimator()
        estimator.close(nowNs: 0)
        let estimate = Self.second(&estimator, from: 0, first: 0, count: 100, bytes: 1000) { i in 30_000 + Int64(i) * 400 }
        XCTAssertEqual(estimate, 680_000)
    }

    /// Two packets of the last quarter a round trip late (retransmissions, timed from their
    /// first send) are no queue: the estimate still rises.
    func testRetransmissionsAreNoQueue() {
        var estimator = TransportWideEstimator()
        estimator.close(nowNs: 0)
        let estimate = Self.second(&estimator, from: 0, first: 0, count: 100, bytes: 1000) { i in i == 80 || i == 90 ? 150_000 : 30_000 }
        XCTAssertEqual(estimate, 1_200_000)
    }

    /// One packet in five lost: overuse, and the fraction (of 256) given for the decision.
    func testHeavyLossBringsTheEstimateDown() {
        var estimator = TransportWideEstimator()
        estimator.close(nowNs: 0)
        let estimate = Self.second(&estimator, from: 0, first: 65500, count: 100, bytes: 1000) { i in i % 5 == 0 ? nil : 30_000 }
        XCTAssertEqual(estimate, 544_000, "85 % of the 640 kbit/s that arrived")
        XCTAssertEqual(estimator.fractionLost, 51)
        XCTAssertEqual(estimator.reportedLost, 20)
    }

    /// A still screen (two small packets a second, 1 % of them lost now and then) never
    /// drives the encoder down: the estimate stays above what it is sent.
    func testAStillScreenIsNotTakenForCongestion() {
        var estimator = TransportWideEstimator()
        estimator.close(nowNs: 0)
        for s in 0..<10 {
            let estimate = Self.second(&estimator, from: UInt64(s) * 1_000_000_000, first: UInt16(2 * s), count: 2, bytes: 200) { _ in 30_000 }
            XCTAssertGreaterThan(estimate ?? 0, 3_200, "over the 3.2 kbit/s sent: never taken for congestion")
        }
    }

    /// Feedback naming packets never sent here (or long gone from the ring) is left out.
    func testFeedbackForUnknownPacketsIsLeftOut() {
        var estimator = TransportWideEstimator(history: 16)
        estimator.close(nowNs: 0)
        estimator.sent(40, bytes: 1000, sendNs: 1000)
        estimator.feedback(TransportFeedback(mediaSSRC: 1, baseSequence: 23, feedbackCount: 0, packets: [(23, 5000), (24, nil)]))
        XCTAssertEqual(estimator.reported, 0)
        XCTAssertNil(estimator.close(nowNs: 1_000_000_000))
    }
}
