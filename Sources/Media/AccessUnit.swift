/// One coded picture with everything that travels with it: an access unit (H.264 7.4.1.2),
/// described in what every codec shares (its NAL units, whether it is a keyframe a decoder
/// can start at, the parameter sets that start needs); what its NAL units' headers mean is
/// its `codec`'s.
///
/// Immutable and `Sendable`: it crosses from the capture or network thread to every reader,
/// and every reader shares the same bytes.
public struct AccessUnit: Sendable {
    /// The codec whose NAL units these are.
    public let codec: any VideoCodec
    /// The NAL units in stream order (AUD, SPS, PPS, SEI, slices, ...).
    public let nalUnits: [NALUnit]
    /// True when the primary picture is an IDR picture (IdrPicFlag): a keyframe that
    /// refreshes the decoder, so nothing after it refers to anything before.
    public let isIDR: Bool
    /// Picture size after cropping, from the active SPS; nil before any SPS was seen.
    public let resolution: Resolution?
    /// The nalcast timestamp SEI carried in this access unit, if any.
    public let timestamp: StreamTimestamp?
    /// The SPS and PPS active for this picture (shared, not copied), so a reader that starts
    /// here can put them in front of an IDR that does not carry them itself.
    public let parameterSets: [NALUnit]

    public init(codec: any VideoCodec, nalUnits: [NALUnit], isIDR: Bool, resolution: Resolution?, timestamp: StreamTimestamp?,
                parameterSets: [NALUnit] = []) {
        self.codec = codec
        self.nalUnits = nalUnits
        self.isIDR = isIDR
        self.resolution = resolution
        self.timestamp = timestamp
        self.parameterSets = parameterSets
    }

    /// This access unit with an end of sequence behind its NAL units: the stream ends here
    /// (a producer's last picture, known to be the last before it goes out). A delimited
    /// writer sends it without the next access unit's AUD (`AccessUnitDelimiting`).
    public func endingStream() -> AccessUnit {
        AccessUnit(codec: codec, nalUnits: nalUnits + [codec.endOfSequence], isIDR: isIDR,
                   resolution: resolution, timestamp: timestamp, parameterSets: parameterSets)
    }

    /// True when the last NAL unit is an end of sequence or end of stream.
    public var endsStream: Bool {
        guard let last = nalUnits.last else { return false }
        let role = codec.role(of: last)
        return role == .endOfSequence || role == .endOfStream
    }

    /// Bytes on the wire, start codes included.
    public var byteCount: Int { nalUnits.reduce(0) { $0 + $1.wire.count } }

    /// True when the access unit itself carries every parameter set its codec needs (H.264:
    /// an SPS and a PPS).
    public var carriesParameterSets: Bool {
        var carried: UInt64 = 0
        for nal in nalUnits {
            if case .parameterSet(let type) = codec.role(of: nal) { carried |= 1 << UInt64(type & 63) }
        }
        return carried & codec.requiredParameterSets == codec.requiredParameterSets
    }

    /// True when a decoder can start here: an IDR whose SPS and PPS are in the access unit.
    public var isEntryPoint: Bool { isIDR && carriesParameterSets }

    /// True when a decoder can start here with `nalUnitsForEntry`: an IDR whose SPS and PPS
    /// it carries or the stream sent before (a reader joining, a sink resuming).
    public var canStartDecoding: Bool { isIDR && (carriesParameterSets || parameterSets.count >= codec.requiredParameterSets.nonzeroBitCount) }

    /// The NAL units to send to a reader that starts at this access unit: the access unit
    /// itself when it carries its parameter sets, else the parameter sets put in front of
    /// its slices (after the AUD, which must stay first).
    public var nalUnitsForEntry: [NALUnit] {
        guard isIDR, !carriesParameterSets, !parameterSets.isEmpty else { return nalUnits }
        var out: [NALUnit] = []
        out.reserveCapacity(nalUnits.count + parameterSets.count)
        var inserted = false
        for nal in nalUnits {
            if !inserted && codec.role(of: nal) != .delimiter {
                out.append(contentsOf: parameterSets)
                inserted = true
            }
            out.append(nal)
        }
        if !inserted { out.append(contentsOf: parameterSets) }
        return out
    }
}

/// A picture size in luma samples.
public struct Resolution: Sendable, Hashable, CustomStringConvertible {
    public let width: Int
    public let height: Int
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }
    public var description: String { "\(width)x\(height)" }
}
