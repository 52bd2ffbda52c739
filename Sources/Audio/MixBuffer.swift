import Synchronization

/// The track being assembled: a ring of interleaved float samples indexed by their place on
/// the track (sample 0 is the capture's start time), into which every source adds what it
/// captured at the place its capture time says (so two sources are mixed by adding), and
/// from which the audio thread takes one packet's worth once its time has passed.
///
/// A source that delivers late (after its samples were taken: a stalled server) loses those
/// samples, counted; one that runs too far ahead (more than the ring holds) too. Nothing here
/// waits: sources and the audio thread each hold the lock for a copy.
final class MixBuffer: Sendable {
    struct Counts: Sendable {
        /// Samples (per channel) that came after their place was encoded.
        var late: UInt64 = 0
        /// Samples that came too far ahead of the encoder for the ring.
        var overflow: UInt64 = 0
    }

    private struct State: ~Copyable {
        var ring: [Float]
        /// The place of the next sample the audio thread takes.
        var taken: Int64 = 0
        var counts = Counts()
    }

    let channels: Int
    /// Frames (samples per channel) the ring holds.
    let capacity: Int
    private let state: Mutex<State>

    init(channels: Int, capacity: Int) {
        self.channels = channels
        self.capacity = capacity
        state = Mutex(State(ring: [Float](repeating: 0, count: capacity * channels)))
    }

    /// Adds `samples` (interleaved, `channels` wide) at track place `position`.
    func add(_ samples: UnsafeBufferPointer<Float>, at position: Int64) {
        let frames = samples.count / channels
        let capacity = Int64(self.capacity)
        state.withLock { s in
            var start = 0
            if position < s.taken {
                let late = Int(min(Int64(frames), s.taken - position))
                s.counts.late += UInt64(late)
                start = late
            }
            var end = frames
            let limit = s.taken + capacity  // places from here on would overwrite untaken ones
            if position + Int64(end) > limit {
                let keep = max(start, Int(limit - position))
                s.counts.overflow += UInt64(end - keep)
                end = keep
            }
            guard start < end else { return }
            let channels = self.channels
            s.ring.withUnsafeMutableBufferPointer { ring in
                for frame in start..<end {
                    let slot = Int((position + Int64(frame)) % capacity) * channels
                    for c in 0..<channels { ring[slot + c] += samples[frame * channels + c] }
                }
            }
        }
    }

    /// Moves the next `frames` places into `out` (zeroing them in the ring) and returns the
    /// place of the first.
    func take(_ frames: Int, into out: inout [Float]) -> Int64 {
        let capacity = Int64(self.capacity)
        let channels = self.channels
        return state.withLock { s in
            let first = s.taken
            s.ring.withUnsafeMutableBufferPointer { ring in
                out.withUnsafeMutableBufferPointer { out in
                    for frame in 0..<frames {
                        let slot = Int((first + Int64(frame)) % capacity) * channels
                        for c in 0..<channels {
                            out[frame * channels + c] = ring[slot + c]
                            ring[slot + c] = 0
                        }
                    }
                }
            }
            s.taken += Int64(frames)
            return first
        }
    }

    /// Leaves out the next `frames` places (zeroing them in the ring) and returns the place
    /// of the first.
    func discard(_ frames: Int) -> Int64 {
        let capacity = Int64(self.capacity)
        let channels = self.channels
        return state.withLock { s in
            let first = s.taken
            s.ring.withUnsafeMutableBufferPointer { ring in
                for frame in 0..<min(frames, self.capacity) {
                    let slot = Int((first + Int64(frame)) % capacity) * channels
                    for c in 0..<channels { ring[slot + c] = 0 }
                }
            }
            s.taken += Int64(frames)
            return first
        }
    }

    var counts: Counts { state.withLock { $0.counts } }
}
