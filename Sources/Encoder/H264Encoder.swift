import CX264
import Capture
import H264
import Media

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Encodes I420 frames to H.264 access units with libx264, ready for the wire as
/// docs/protocol.md draws it: Annex-B, an AUD first in every access unit, SPS + PPS in front
/// of every IDR, the nalcast timestamp SEI in every access unit, VUI timing info.
///
/// Always zero latency (no B-frames, no lookahead, sliced threads): each frame in gives
/// its access unit out at once. Keyframes are placed by this type, not by x264 (every
/// `keyint` frames, on `requestIDR()`, and after a size change), so the timestamp SEI can
/// carry the keyframe flag.
///
/// Not `Sendable`: lives on the capture thread.
public final class H264Encoder {
    /// Settings of one encoder. Bitrates are in bits per second.
    public struct Parameters: Sendable, Hashable {
        public var width: Int
        public var height: Int
        public var frameRate: FrameRate
        public var preset: String = "veryfast"
        /// x264 tune(s), comma separated; zerolatency is applied in any case.
        public var tune: String? = "zerolatency"
        public var profile: String = "high"
        /// Target and maximum bitrate; nil means width * height * 3.
        public var bitrate: Int?
        /// VBV buffer in milliseconds at the bitrate.
        public var vbvMilliseconds: Int = 500
        /// Frames from one IDR to the next; nil means two seconds' worth.
        public var keyint: Int?
        /// `--keyint` given as a time: the capture pipeline also asks for an IDR when a picture
        /// comes this long after the last IDR, so that a relay's cached GOP and a recorder's
        /// or HLS's segments stay as short in time as asked while the screen moves slowly
        /// (capture on change) or frames are skipped (an encoder late on a loaded machine).
        /// Frames are still counted (`keyint`): a still screen's keep-alives get an IDR every
        /// `keyint` of them, not every `keyintDuration`, since a joining reader asks for its own.
        public var keyintDuration: MediaTime?
        /// Encoder threads, 0 = as many as x264 likes.
        public var threads: Int = 0
        /// Tell x264 the real frame times (`b_vfr_input`, time base 1/90000, each frame's
        /// pts90k) instead of one frame per 1/frameRate. Off, also for capture on change,
        /// where frames are irregular: x264 holds every frame back by one with VFR input (it
        /// times a frame by the next one's pts), so the last change before a still period
        /// would wait in the encoder for the next keep-alive. Without it, x264's rate control
        /// counts a still period's keep-alives as frames of 1/fps, so the first change after
        /// it gets a budget of a few frames, not of the whole still time; VBV bounds it either
        /// way. Measured (EncoderVFRTests, 640x360 at 691 kbit/s, 5 s still, a 320x180 window
        /// changing): fixed-rate capture 35-41 kB, 27-28.5 dB luma PSNR (x264 saved up over
        /// 150 skipped frames and spends it up to the VBV); on change, constant-rate
        /// accounting 8-9 kB, 30-31 dB over the picture, 1.7 dB below fixed in the changed
        /// window; on change, VFR input 11-15 kB, 34-38 dB, but one frame late. Kept off.
        public var variableFrameRateInput = false
        /// A picture that changed nothing (`PictureChanges.none`: a keep-alive, a repeat) is
        /// written by this type, not x264, as a P picture of skipped macroblocks
        /// (`RepeatPicture`), where x264's stream allows it: one reference frame (the presets
        /// ultrafast, superfast and veryfast), picture order from frame_num. x264 then costs
        /// a still screen nothing between IDRs; its later slices are renumbered. Off: x264
        /// codes such a picture, told that no macroblock changed.
        public var writesRepeats = true

        public init(width: Int, height: Int, frameRate: FrameRate) {
            self.width = width
            self.height = height
            self.frameRate = frameRate
        }

        public var effectiveBitrate: Int { bitrate ?? width * height * 3 }
        public var effectiveKeyint: Int {
            keyint ?? Swift.max(1, Int((2 * frameRate.framesPerSecond).rounded()))
        }
        /// VBV buffer size in kbit, as x264 takes it.
        var vbvBufferKbit: Int { Swift.max(1, effectiveBitrate / 1000 * vbvMilliseconds / 1000) }
    }

    public private(set) var parameters: Parameters
    /// Frames encoded since the encoder was created (all sizes).
    public private(set) var framesEncoded: UInt64 = 0

    private var handle: OpaquePointer?
    private var param = x264_param_t()
    private let logBox: LogBox?
    private var idrRequested = true
    private var framesSinceIDR = 0
    private var nextPTS: Int64 = 0
    private var pending: [Int64: StreamTimestamp] = [:]
    private var parameterSets: [NALUnit] = []
    /// One byte per macroblock for x264 (`x264_image_properties_t.mb_info`), kept for the
    /// encoder's size; x264 reads it during `x264_encoder_encode` only (sliced threads, no
    /// frame threads: every slice is done when the call returns) and clears the flag of each
    /// macroblock it did not copy (`b_mb_info_update`).
    private var macroblockInfo: UnsafeMutableBufferPointer<UInt8>?
    /// The QP x264 gave the last picture whose QP it chose itself (not a picture of `.none`).
    private var chosenQP: Int32?
    /// The QP of the picture x264 gave out last (-1: none).
    private var lastQP: Int32 = -1
    /// Macroblocks x264 copied from the picture before without analysing them, in the last
    /// picture and in all (`X264_MBINFO_CONSTANT` honoured: see `encode(_:changes:)`).
    public private(set) var lastCopiedMacroblocks = 0
    public private(set) var copiedMacroblocks: UInt64 = 0
    /// Pictures written as repeats of the one before (`Parameters.writesRepeats`), not by x264.
    public private(set) var repeatPictures: UInt64 = 0

    /// The parameter sets a repeat picture follows: x264's last SPS and PPS, parsed, when
    /// `RepeatPicture` supports them (nil: x264 codes every picture).
    private var repeatSets: (sps: SequenceParameterSet, pps: PictureParameterSet)?
    /// Repeat pictures since x264's last IDR: the stream's frame_num is x264's plus this.
    private var frameNumShift = 0
    /// The stream's frame_num of the last picture given out.
    private var lastFrameNum = 0

    /// Above the QP of the picture before, for a picture that changed nothing: x264 copies a
    /// macroblock marked the same only when the picture before was coded there at a QP no
    /// worse than this one's, and that picture's QP may be higher in places than its frame QP
    /// (VBV's row QPs, AQ's rounding). Measured at 1080p (x264 164, veryfast, after an IDR):
    /// +0 copied 64-92 % of the macroblocks in the first 7 repeats, all from the 10th; +2 all
    /// but 13 and 2 in the first two, all from the third.
    static let unchangedQPMargin: Int32 = 2

    /// Opens an x264 encoder. `log` receives x264's warnings and errors (called from
    /// x264's threads too); without it x264 stays silent.
    public init(parameters: Parameters, log: (@Sendable (String) -> Void)? = nil) throws {
        self.parameters = parameters
        self.logBox = log.map(LogBox.init)
        try open()
    }

    deinit {
        if let handle { x264_encoder_close(handle) }
        macroblockInfo?.deallocate()
    }

    /// Forces the next frame to be an IDR picture (with SPS and PPS in front).
    public func requestIDR() { idrRequested = true }

    /// Changes the target and maximum bitrate (and the VBV buffer with it) from the next
    /// frame on. The corresponding C function is `x264_encoder_reconfig`.
    public func reconfigure(bitrate: Int) throws {
        guard bitrate >= 1000 else { throw EncoderError.badParameter(name: "bitrate", value: String(bitrate)) }
        var updated = parameters
        updated.bitrate = bitrate
        param.rc.i_bitrate = Int32(updated.effectiveBitrate / 1000)
        param.rc.i_vbv_max_bitrate = param.rc.i_bitrate
        param.rc.i_vbv_buffer_size = Int32(updated.vbvBufferKbit)
        let rc = x264_encoder_reconfig(handle, &param)
        guard rc >= 0 else { throw EncoderError.reconfigFailed(code: rc) }
        parameters = updated
    }

    /// Encodes one I420 frame; returns its access unit (nil only if x264 held the frame
    /// back, which zero-latency settings never do). The planes are read in place.
    /// A frame of another size than the open encoder closes it and opens a new one at the
    /// new size: the stream goes on with new SPS/PPS and an IDR.
    ///
    /// `changes`: what changed since the frame given to the call before (`PictureChanges`).
    /// Every macroblock outside them is marked the same (`X264_MBINFO_CONSTANT`), and x264
    /// copies it from the picture before (P_SKIP, or a zero-vector 16x16 block) without
    /// analysing it, when that picture is its reference and was coded there at a QP no worse
    /// than this picture's. An IDR ignores them. A picture that changed nothing (`.none`: a
    /// keep-alive, a repeat) is coded at the QP of the last picture x264 chose one for, plus
    /// `unchangedQPMargin`, so that x264 copies all of it: with its own rate control it would
    /// choose a lower QP for a picture that costs nothing and analyse every macroblock again
    /// to sharpen it (measured at 1080p, veryfast, a textured picture repeated: 23-28 ms of CPU
    /// and 15-18 kB a picture, the QP falling, against 7.6-10.2 ms and 86 bytes; bench/README). A still picture is so kept as sharp as it was coded,
    /// until the next IDR.
    public func encode(_ frame: Frame, changes: PictureChanges = .unknown) throws -> AccessUnit? {
        guard frame.format == .i420 else { throw EncoderError.notI420(frame.format) }
        if frame.width != parameters.width || frame.height != parameters.height {
            try reopen(width: frame.width, height: frame.height)
        }
        let keyframe = idrRequested || framesSinceIDR >= parameters.effectiveKeyint
        let timestamp = StreamTimestamp(sequence: frame.sequence, captureTimeNs: frame.captureTimeNs,
                                        pts90k: frame.pts90k, isKeyframe: keyframe)
        if !keyframe, changes == .none, parameters.writesRepeats, let repeatSets {
            framesSinceIDR += 1
            framesEncoded += 1
            repeatPictures += 1
            frameNumShift += 1
            lastFrameNum = (lastFrameNum + 1) & ((1 << repeatSets.sps.log2MaxFrameNum) - 1)
            lastCopiedMacroblocks = repeatSets.sps.widthInMbs * repeatSets.sps.heightInMapUnits
            copiedMacroblocks += UInt64(lastCopiedMacroblocks)
            // The AUD (I or P slices) and the SEI, as x264 writes them.
            let units = [NALUnit.accessUnitDelimiter(primaryPicType: 1),
                         timestamp.seiNALUnit,
                         RepeatPicture.slice(sps: repeatSets.sps, pps: repeatSets.pps, frameNum: lastFrameNum)]
            return AccessUnit(codec: H264Codec(), nalUnits: units, isIDR: false,
                              resolution: Resolution(width: parameters.width, height: parameters.height),
                              timestamp: timestamp, parameterSets: parameterSets)
        }

        var picture = x264_picture_t()
        x264_picture_init(&picture)
        picture.i_type = keyframe ? X264_TYPE_IDR : X264_TYPE_AUTO
        // x264 wants strictly increasing pts: the frame count, or with VFR input the
        // media time (nudged past the previous one if equal).
        if parameters.variableFrameRateInput { nextPTS = Swift.max(nextPTS, Int64(frame.pts90k)) }
        picture.i_pts = nextPTS
        picture.img.i_csp = X264_CSP_I420
        picture.img.i_plane = 3
        picture.img.i_stride = (Int32(frame.stride(plane: 0)), Int32(frame.stride(plane: 1)), Int32(frame.stride(plane: 2)), 0)
        picture.img.plane = (frame.pointer(plane: 0), frame.pointer(plane: 1), frame.pointer(plane: 2), nil)
        picture.extra_sei = H264Encoder.makeSEI(timestamp)
        let marked = keyframe ? 0 : mark(changes)
        if marked > 0 {
            picture.prop.mb_info = macroblockInfo!.baseAddress
            if changes == .none, let chosenQP {
                picture.i_qpplus1 = Swift.min(51, chosenQP + H264Encoder.unchangedQPMargin) + 1
            }
        }
        pending[nextPTS] = timestamp
        nextPTS += 1
        if keyframe {
            idrRequested = false
            framesSinceIDR = 0
        }
        framesSinceIDR += 1
        framesEncoded += 1
        let au = try encodePicture(&picture)
        lastCopiedMacroblocks = marked > 0 ? macroblockInfo!.reduce(0) { $0 + Int($1 & UInt8(X264_MBINFO_CONSTANT)) } : 0
        copiedMacroblocks += UInt64(lastCopiedMacroblocks)
        if picture.i_qpplus1 == 0, lastQP >= 0 { chosenQP = lastQP }
        return au
    }

    /// Fills `macroblockInfo` for `changes` at the encoder's size; the macroblocks marked the same.
    private func mark(_ changes: PictureChanges) -> Int {
        guard let map = changes.macroblockMap(width: parameters.width, height: parameters.height) else { return 0 }
        if macroblockInfo?.count != map.count {
            macroblockInfo?.deallocate()
            macroblockInfo = .allocate(capacity: map.count)
        }
        _ = macroblockInfo!.initialize(from: map.lazy.map { $0 == 1 ? UInt8(X264_MBINFO_CONSTANT) : 0 })
        return map.reduce(0) { $0 + Int($1) }
    }

    /// Drains any frames x264 still holds (none with zero-latency settings).
    public func flush() throws -> [AccessUnit] {
        var out: [AccessUnit] = []
        while let handle, x264_encoder_delayed_frames(handle) > 0 {
            guard let au = try encodePicture(nil) else { break }
            out.append(au)
        }
        return out
    }

    /// The presets, tunes and profiles x264 knows (`x264_preset_names` and friends).
    public static var presetNames: [String] { names(x264_preset_names) }
    public static var tuneNames: [String] { names(x264_tune_names) }
    public static var profileNames: [String] { names(x264_profile_names) }

    private static func names<T>(_ list: T) -> [String] {
        // x264 declares these as NULL-terminated arrays of C strings.
        withUnsafeBytes(of: list) { raw in
            raw.bindMemory(to: UnsafePointer<CChar>?.self).prefix { $0 != nil }.map { String(cString: $0!) }
        }
    }

    // MARK: x264

    private func open() throws {
        let p = parameters
        // Checked here because x264 prints its own complaint about these to stderr.
        let tuneList = (p.tune ?? "").split(separator: ",").map(String.init)
        guard H264Encoder.presetNames.contains(p.preset), tuneList.allSatisfy(H264Encoder.tuneNames.contains) else {
            throw EncoderError.badPresetOrTune(preset: p.preset, tune: p.tune)
        }
        guard H264Encoder.profileNames.contains(p.profile) else { throw EncoderError.badProfile(p.profile) }
        guard p.width > 0, p.height > 0, p.width % 2 == 0, p.height % 2 == 0 else {
            throw EncoderError.badParameter(name: "size", value: "\(p.width)x\(p.height)")
        }
        guard p.effectiveBitrate >= 1000 else { throw EncoderError.badParameter(name: "bitrate", value: String(p.effectiveBitrate)) }
        guard p.vbvMilliseconds > 0 else { throw EncoderError.badParameter(name: "vbv-ms", value: String(p.vbvMilliseconds)) }
        guard p.effectiveKeyint >= 1 else { throw EncoderError.badParameter(name: "keyint", value: String(p.effectiveKeyint)) }
        guard p.threads >= 0 else { throw EncoderError.badParameter(name: "threads", value: String(p.threads)) }

        var tunes = tuneList
        if !tunes.contains("zerolatency") { tunes.append("zerolatency") }
        var x = x264_param_t()
        guard x264_param_default_preset(&x, p.preset, tunes.joined(separator: ",")) >= 0 else {
            throw EncoderError.badPresetOrTune(preset: p.preset, tune: p.tune)
        }
        x.i_width = Int32(p.width)
        x.i_height = Int32(p.height)
        x.i_csp = X264_CSP_I420
        x.i_threads = Int32(p.threads)
        x.b_sliced_threads = 1
        x.i_fps_num = UInt32(p.frameRate.numerator)
        x.i_fps_den = UInt32(p.frameRate.denominator)
        x.i_timebase_num = UInt32(p.frameRate.denominator)
        x.i_timebase_den = UInt32(p.frameRate.numerator)
        // After the tune: zerolatency turns VFR input off. See `variableFrameRateInput`.
        x.b_vfr_input = 0
        if p.variableFrameRateInput {
            x.b_vfr_input = 1
            x.i_timebase_num = 1
            x.i_timebase_den = 90_000
        }
        x.i_bframe = 0
        x.rc.i_lookahead = 0
        x.i_sync_lookahead = 0
        // This type places IDRs itself (see `encode`), so x264 never does on its own.
        x.i_keyint_max = X264_KEYINT_MAX_INFINITE
        x.i_scenecut_threshold = 0
        x.b_intra_refresh = 0
        x.rc.i_rc_method = X264_RC_ABR
        x.rc.i_bitrate = Int32(p.effectiveBitrate / 1000)
        x.rc.i_vbv_max_bitrate = x.rc.i_bitrate
        x.rc.i_vbv_buffer_size = Int32(p.vbvBufferKbit)
        // Pictures may say which macroblocks did not change (`encode(_:changes:)`); x264 says
        // back which it copied.
        x.analyse.b_mb_info = 1
        x.analyse.b_mb_info_update = 1
        x.b_annexb = 1
        x.b_aud = 1
        x.b_repeat_headers = 1
        if let logBox {
            x.i_log_level = X264_LOG_WARNING
            CX264_param_set_log(&x, logBox.target)
        } else {
            x.i_log_level = X264_LOG_NONE
        }
        guard x264_param_apply_profile(&x, p.profile) >= 0 else { throw EncoderError.badProfile(p.profile) }
        // x264's buffers in 4 KiB pages, not 2 MiB huge pages each resident whole: 6 MiB less
        // at 1080p (Sources/CX264/shim.h). Process-wide; a kernel without it keeps huge pages.
        _ = CX264_disable_huge_pages()
        guard let h = CX264_encoder_open(&x) else { throw EncoderError.openFailed(width: p.width, height: p.height) }
        handle = h
        param = x
        chosenQP = nil
        repeatSets = nil
        frameNumShift = 0
        lastFrameNum = 0
        idrRequested = true
        framesSinceIDR = 0
    }

    private func reopen(width: Int, height: Int) throws {
        // Zero latency: nothing is held back, so closing loses no frame.
        if let handle { x264_encoder_close(handle) }
        handle = nil
        pending.removeAll()
        parameterSets.removeAll()
        parameters.width = width
        parameters.height = height
        try open()
    }

    private static func makeSEI(_ timestamp: StreamTimestamp) -> x264_sei_t {
        // x264 frees both blocks after writing them, through `sei_free`: allocate with malloc.
        let bytes = timestamp.payload
        let data = malloc(bytes.count)!.assumingMemoryBound(to: UInt8.self)
        data.initialize(from: bytes, count: bytes.count)
        let payloads = malloc(MemoryLayout<x264_sei_payload_t>.stride)!.assumingMemoryBound(to: x264_sei_payload_t.self)
        payloads.initialize(to: x264_sei_payload_t(payload_size: Int32(bytes.count), payload_type: Int32(StreamTimestamp.payloadType), payload: data))
        return x264_sei_t(num_payloads: 1, payloads: payloads, sei_free: free)
    }

    private func encodePicture(_ input: UnsafeMutablePointer<x264_picture_t>?) throws -> AccessUnit? {
        var nals: UnsafeMutablePointer<x264_nal_t>?
        var count: Int32 = 0
        var output = x264_picture_t()
        let size = x264_encoder_encode(handle, &nals, &count, input, &output)
        guard size >= 0 else { throw EncoderError.encodeFailed(code: size) }
        lastQP = size > 0 ? output.i_qpplus1 - 1 : -1
        guard size > 0, let nals, count > 0 else { return nil }

        // x264 writes the NAL units of one picture back to back: one copy for all of them.
        var contiguous = true
        var end = nals[0].p_payload!
        for i in 0..<Int(count) {
            if nals[i].p_payload != end { contiguous = false }
            end = nals[i].p_payload + Int(nals[i].i_payload)
        }
        var bytes: [UInt8] = []
        var ranges: [Range<Int>] = []
        ranges.reserveCapacity(Int(count))
        if contiguous {
            bytes = [UInt8](UnsafeBufferPointer(start: nals[0].p_payload, count: nals[0].p_payload.distance(to: end)))
            var offset = 0
            for i in 0..<Int(count) {
                ranges.append(offset..<(offset + Int(nals[i].i_payload)))
                offset += Int(nals[i].i_payload)
            }
        } else {
            bytes.reserveCapacity(Int(size))
            for i in 0..<Int(count) {
                let start = bytes.count
                bytes.append(contentsOf: UnsafeBufferPointer(start: nals[i].p_payload, count: Int(nals[i].i_payload)))
                ranges.append(start..<bytes.count)
            }
        }

        var units: [NALUnit] = []
        units.reserveCapacity(ranges.count)
        var isIDR = false
        var sps: NALUnit?
        var pps: NALUnit?
        for range in ranges {
            var header = range.lowerBound
            while header < range.upperBound && bytes[header] == 0 { header += 1 }
            header += 1  // past the 01 of the start code
            var payloadEnd = range.upperBound
            while payloadEnd > header + 1 && bytes[payloadEnd - 1] == 0 { payloadEnd -= 1 }
            guard header < payloadEnd else { continue }
            let unit = NALUnit(wire: bytes[range], headerIndex: header, payloadEnd: payloadEnd)
            switch unit.type {
            case .idrSlice: isIDR = true
            case .sps: sps = unit
            case .pps: pps = unit
            default: break
            }
            units.append(unit)
        }
        if let sps, let pps {
            parameterSets = [sps, pps]
            repeatSets = nil
            if let s = try? SequenceParameterSet(sps), let p = try? PictureParameterSet(pps), RepeatPicture.supports(sps: s, pps: p) {
                repeatSets = (s, p)
            }
        }
        if isIDR {
            frameNumShift = 0
            lastFrameNum = 0
        } else if let sps = repeatSets?.sps {
            // After repeat pictures x264 did not write, its slices are numbered on from them.
            if frameNumShift > 0 {
                units = try units.map { $0.type == .slice ? try RepeatPicture.renumbered($0, sps: sps, by: frameNumShift) : $0 }
            }
            if let slice = units.first(where: { $0.type == .slice }) { lastFrameNum = try RepeatPicture.frameNum(of: slice, sps: sps) }
        }
        let timestamp = pending.removeValue(forKey: output.i_pts)
        return AccessUnit(codec: H264Codec(), nalUnits: units, isIDR: isIDR, resolution: Resolution(width: parameters.width, height: parameters.height),
                          timestamp: timestamp, parameterSets: parameterSets)
    }
}

/// Holds the caller's log closure and the C record x264's log callback finds it through
/// (`p_log_private` -> `CX264_log_target.context` -> this box). The closure is immutable
/// and `@Sendable`, so x264's threads may call it.
private final class LogBox {
    let log: @Sendable (String) -> Void
    let target: UnsafeMutablePointer<CX264_log_target>

    init(_ log: @escaping @Sendable (String) -> Void) {
        self.log = log
        target = .allocate(capacity: 1)
        target.initialize(to: CX264_log_target(log: x264Log, context: nil))
        target.pointee.context = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit { target.deallocate() }
}

/// Receives x264's formatted messages (see `CX264_log_trampoline`).
private func x264Log(_ context: UnsafeMutableRawPointer?, _ level: Int32, _ message: UnsafePointer<CChar>?) {
    guard let context, let message else { return }
    let name = switch level {
    case X264_LOG_ERROR: "error"
    case X264_LOG_WARNING: "warning"
    case X264_LOG_INFO: "info"
    default: "debug"
    }
    var text = String(cString: message)
    while text.hasSuffix("\n") { text.removeLast() }
    Unmanaged<LogBox>.fromOpaque(context).takeUnretainedValue().log("x264 \(name): \(text)")
}
