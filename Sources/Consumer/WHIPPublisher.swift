import Audio
import Clocks
import IO
import Media
import Muxing
import RTP
import WebRTC

/// One WHIP publisher's media, from SRTP to the intake (`consume --from whip-listen://`):
///
/// - video: the packets of the answer's H.264 payload type put back in order (`RTPReorder`:
///   a hole is NACKed, then waited for a bounded time), access units out of
///   `H264Depacketizer` at the marker bit, through `AnnexBPackager` (the publisher's last
///   SPS and PPS in front of an IDR that came without them). A unit with a hole is dropped
///   and counted, and nothing goes on until the next IDR, asked for with PLIs (also at the
///   start, so that the relay starts at an IDR): the outputs and the relay's readers see the
///   picture stop, never a broken one;
/// - sound: Opus packets placed on the video's clock by both tracks' RTCP sender reports (the
///   first packets' arrival before there are some), made AAC off the loop (`WHIPSound`) and
///   handed to the intake as any input's AAC;
/// - receiver reports once a second for both.
///
/// Loop-owned (the peer's loop, the intake's thread).
final class WHIPPublisher {
    let peer: WebRTCPeer
    private let loop: EventLoop
    private let intake: StreamIntake
    private let metrics: WHIPMetrics
    private let types: (video: UInt8, audio: UInt8?)
    private let sound: WHIPSound?
    private var reorder = RTPReorder()
    private var depacketizer = H264Depacketizer()
    private var packager = try! AnnexBPackager(extradata: [])
    private var videoTime = RTSPTracks.Unwrapper()
    private var videoClock = RTSPTracks.TrackClock(rate: 90_000)
    private var videoReception = RTPReception(clockRate: 90_000)
    private var videoSSRC: UInt32?
    private var audioTime = RTSPTracks.Unwrapper()
    private var audioClock = RTSPTracks.TrackClock(rate: 48_000)
    private var audioReception = RTPReception(clockRate: 48_000)
    private var audioSSRC: UInt32?
    private var lastAudioSequence: UInt16?
    private let ourSSRC = UInt32.random(in: 1...UInt32.max)
    /// Nothing goes on until an IDR: at the start, and after a unit with a hole.
    private(set) var waitingForIDR = true
    private var lastPictureRequest = -Double.infinity
    private var lastReports = MonotonicClock.seconds
    /// When the last RTP packet came (what a stall is measured from).
    private(set) var lastPacket = MonotonicClock.seconds
    private var countedSkips = 0
    /// The peer's packets that did not unprotect (SRTP), counted as malformed so far.
    private var countedBadRTP = 0
    /// Access units handed to the intake.
    private(set) var delivered = 0

    init(peer: WebRTCPeer, loop: EventLoop, intake: StreamIntake, metrics: WHIPMetrics, sound: WHIPSound?) {
        self.peer = peer
        self.loop = loop
        self.intake = intake
        self.metrics = metrics
        self.types = peer.payloadTypes
        self.sound = peer.payloadTypes.audio == nil ? nil : sound
        if let format = self.sound?.format { intake.declare(audio: format) }
        peer.onRTP = { [unowned self] bytes in self.take(bytes) }
        peer.onRTCP = { [unowned self] packet in self.take(packet) }
    }

    /// The publisher sends sound (the answer took its Opus and it can be made AAC here).
    var hasSound: Bool { sound != nil }

    // MARK: - In

    private func take(_ bytes: [UInt8]) {
        let now = MonotonicClock.seconds
        lastPacket = now
        guard let packet = try? RTPPacket(parsing: bytes[...]) else { return metrics.malformedPackets.increment() }
        if packet.payloadType == types.video {
            if videoSSRC == nil { videoSSRC = packet.ssrc; requestPicture(now) }
            videoReception.note(packet, arrival: now)
            let duplicates = reorder.duplicates
            for inOrder in reorder.take(packet, now: now) { depacketize(inOrder) }
            if reorder.duplicates > duplicates { metrics.lateVideoPackets.increment() }
        } else if packet.payloadType == types.audio {
            takeAudio(packet, now)
        } else {
            metrics.malformedPackets.increment()
        }
    }

    private func depacketize(_ packet: RTPPacket) {
        let ticks = videoTime.extend(packet.timestamp)
        if videoClock.first == nil { videoClock.first = (ticks, Self.wallSeconds) }
        for unit in depacketizer.take(packet) { deliver(unit, ticks: ticks) }
    }

    private func deliver(_ unit: H264Depacketizer.Unit, ticks: Int64) {
        guard !unit.damaged else {
            metrics.damagedUnits.increment()
            waitingForIDR = true
            return requestPicture(MonotonicClock.seconds)
        }
        guard let au = packager.assemble(unit.nalUnits) else { return }
        if waitingForIDR {
            guard au.isIDR else { return metrics.unitsBeforeIDR.increment() }
            waitingForIDR = false
        }
        let time = ticks - Int64(Int32(bitPattern: UInt32(truncatingIfNeeded: ticks) &- unit.rtpTimestamp))
        delivered += 1
        observeLatency(time)
        intake.push(unit: au, packetTime: MediaTime(ticks: time), byteCount: au.byteCount)
    }

    /// Capture → here, when the publisher's sender reports say its capture clock (WebRTC
    /// senders stamp a picture's RTP time from its capture time, and report that clock
    /// against the wall clock): `nalcast_capture_to_receive_seconds`, as the timestamp SEI
    /// gives it for nalcast's own streams. Only on one machine's clock, or synchronized ones.
    private func observeLatency(_ ticks: Int64) {
        guard let report = videoClock.report else { return }
        let latency = Self.wallSeconds - (report.seconds + Double(ticks - report.rtp) / 90_000)
        guard latency >= 0 && latency < 10 else { return }
        intake.metrics.latency.observe(latency)
    }

    private func takeAudio(_ packet: RTPPacket, _ now: Double) {
        audioSSRC = packet.ssrc
        audioReception.note(packet, arrival: now)
        if let last = lastAudioSequence, !rtpSequence(packet.sequenceNumber, isAfter: last) { return metrics.lateAudioPackets.increment() }
        lastAudioSequence = packet.sequenceNumber
        let ticks = audioTime.extend(packet.timestamp)
        if audioClock.first == nil { audioClock.first = (ticks, Self.wallSeconds) }
        guard let sound else { return }
        // Before the first picture there is no video clock: the intake drops (and counts) it.
        let videoTicks = RTSPTracks.TrackClock.place(ticks, from: audioClock, to: videoClock) ?? 0
        sound.take(AudioPacket(data: Array(packet.payload), mediaTime: MediaTime(ticks: videoTicks)))
    }

    /// A sender report re-anchors its track's clock.
    private func take(_ packet: RTCP.Packet) {
        guard let report = RTCP.SenderReport(packet) else { return }
        let now = MonotonicClock.seconds
        if report.ssrc == videoSSRC {
            videoReception.note(report, arrival: now)
            videoClock.report = (videoTime.extend(report.rtpTimestamp), report.unixSeconds)
        } else if report.ssrc == audioSSRC {
            audioReception.note(report, arrival: now)
            audioClock.report = (audioTime.extend(report.rtpTimestamp), report.unixSeconds)
        }
    }

    static var wallSeconds: Double { Double(WallClock.nanoseconds) / 1e9 }

    // MARK: - Out

    /// Every 20 ms or so: holes given up on, NACKs, a PLI while waiting for an IDR, receiver
    /// reports once a second.
    func tick() {
        loop.preconditionOnLoop()
        let now = MonotonicClock.seconds
        for inOrder in reorder.expire(now: now) { depacketize(inOrder) }
        if reorder.skipped > countedSkips {
            intake.metrics.lostPackets.increment(by: UInt64(reorder.skipped - countedSkips))
            countedSkips = reorder.skipped
        }
        if peer.badRTP > countedBadRTP {
            metrics.malformedPackets.increment(by: UInt64(peer.badRTP - countedBadRTP))
            countedBadRTP = peer.badRTP
        }
        let lost = reorder.nacks(now: now)
        if let media = videoSSRC, !lost.isEmpty {
            metrics.nackedPackets.increment(by: UInt64(lost.count))
            send(RTCPFeedback.nackPacket(sender: ourSSRC, media: media, lost: lost))
        }
        if waitingForIDR { requestPicture(now) }
        if now - lastReports >= 1 {
            lastReports = now
            var compound: [UInt8] = []
            if videoSSRC != nil { compound += videoReception.receiverReport(ourSSRC: ourSSRC, now: now) }
            if audioSSRC != nil { compound += audioReception.receiverReport(ourSSRC: ourSSRC, now: now) }
            if !compound.isEmpty { peer.sendRTCP(compound) }
        }
    }

    /// A PLI, at most every 300 ms.
    private func requestPicture(_ now: Double) {
        guard let media = videoSSRC, now - lastPictureRequest >= 0.3 else { return }
        lastPictureRequest = now
        metrics.pictureRequests.increment()
        send(RTCPFeedback.pictureLossPacket(sender: ourSSRC, media: media))
    }

    /// Feedback behind an empty receiver report: a compound packet, as RFC 3550 §6.1 wants.
    private func send(_ feedback: [UInt8]) {
        peer.sendRTCP(RTPReception.emptyReceiverReport(ourSSRC: ourSSRC) + feedback)
    }
}
