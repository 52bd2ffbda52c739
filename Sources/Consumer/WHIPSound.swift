import Audio
import IO
import Media
import Metrics

/// The WHIP ingest's sound made AAC off the loop thread: the Opus packets the loop takes
/// (placed on the video's clock) queue for a thread of their own, `nalcast-whip-aac`, which
/// decodes and encodes them (`AACTranscoder`: about 4 % of a core the loop, which also serves
/// the relay's readers and viewers, no longer spends in slices of up to a millisecond), and
/// the AAC goes back to the loop through a bounded mailbox to `deliver` (the intake). One
/// for the ingest, its transcoder's time line starting again at each publisher's sound. A
/// packet left out (either side full: 2 s of sound behind) is counted in `dropped`, an Opus
/// packet the decoder refuses in `refused`; what is queued when the run stops, in `dropped`.
final class WHIPSound: @unchecked Sendable {
    // @unchecked Sendable holds because: `queue` and `stopped` are read and written only with
    // `lock` held; the transcoder belongs to the worker thread alone (handed over, `sending`,
    // at init); `mailbox` is Sendable; `thread` is set in init and taken in `stop`, both on
    // the loop thread.
    /// The AAC track (48 kHz stereo), known before the thread starts.
    let format: AudioFormat
    private let lock = ConditionLock()
    private var queue: [AudioPacket] = []
    private var stopped = false
    private let mailbox: Mailbox<AudioPacket>
    private var thread: OSThread?
    private let dropped: Counter
    /// Opus packets (20 ms) or AAC packets (21 ms) either side holds at most: 2 s.
    static let capacity = 100

    /// On the loop thread; `deliver` gets the AAC there, in order.
    init(_ transcoder: sending AACTranscoder, loop: EventLoop, dropped: Counter, refused: Counter,
         deliver: @escaping ([AudioPacket]) -> Void) {
        format = transcoder.format
        self.dropped = dropped
        mailbox = Mailbox(loop: loop, capacity: Self.capacity, handler: deliver)
        thread = OSThread(name: "nalcast-whip-aac") { [self] in run(transcoder, refused) }
    }

    /// One Opus packet at its media time; from the loop thread, never waiting.
    func take(_ opus: AudioPacket) {
        lock.lock()
        let queued = !stopped && queue.count < Self.capacity
        if queued {
            queue.append(opus)
            lock.broadcast()
        }
        lock.unlock()
        if !queued { dropped.increment() }
    }

    /// Ends the thread once the packet in hand is done; what is still queued is counted
    /// dropped. On the loop thread, once.
    func stop() {
        lock.lock()
        stopped = true
        let left = queue.count
        queue.removeAll()
        lock.broadcast()
        lock.unlock()
        if left > 0 { dropped.increment(by: UInt64(left)) }
        thread?.join()
        thread = nil
    }

    private func run(_ transcoder: AACTranscoder, _ refused: Counter) {
        while let batch = next() {
            for opus in batch {
                let before = transcoder.refusedPackets
                for aac in transcoder.transcode(opus) where !mailbox.send(aac) { dropped.increment() }
                if transcoder.refusedPackets > before { refused.increment() }
            }
        }
    }

    /// The packets queued, waiting for some; nil once stopped.
    private func next() -> [AudioPacket]? {
        lock.lock()
        defer { lock.unlock() }
        while queue.isEmpty && !stopped { lock.wait() }
        guard !stopped else { return nil }
        defer { queue.removeAll(keepingCapacity: true) }
        return queue
    }
}
