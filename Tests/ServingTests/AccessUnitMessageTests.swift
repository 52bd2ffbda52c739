import H264
import Media
import Testing
import Serving

/// The message the browser page gets per access unit: its 18-byte header and the frame
/// around it.
@Suite struct AccessUnitMessageTests {
    static let aud = NALUnit(escapedBody: [0x09, 0x10])
    static let sps = NALUnit(escapedBody: [0x67, 0x42, 0xc0, 0x1e, 0xda])
    static let pps = NALUnit(escapedBody: [0x68, 0xce, 0x3c, 0x80])
    static let idr = NALUnit(escapedBody: [0x65, 0x88, 0x84, 0x00, 0x33])
    static let slice = NALUnit(escapedBody: [0x41, 0x9a, 0x02])

    static func unit(idr: Bool, timestamp: StreamTimestamp?, parameterSetsInside: Bool = true) -> AccessUnit {
        var nals = [aud]
        if let timestamp { nals.append(timestamp.seiNALUnit) }
        if idr && parameterSetsInside { nals.insert(contentsOf: [sps, pps], at: 1) }
        nals.append(idr ? Self.idr : slice)
        return AccessUnit(codec: H264Codec(), nalUnits: nals, isIDR: idr, resolution: nil, timestamp: timestamp, parameterSets: [sps, pps])
    }

    /// Every field at its offset, big-endian.
    @Test func headerLayout() {
        let message = AccessUnitMessage(isKeyframe: true, captureTimeMicros: 0x0102_0304_0506_0708, pts90k: 0x1112_1314_1516_1718)
        #expect(message.header == [1, 0x03, 1, 2, 3, 4, 5, 6, 7, 8, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18])
        let plain = AccessUnitMessage(isKeyframe: false, captureTimeMicros: nil, pts90k: 3000)
        #expect(plain.header == [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0b, 0xb8])
        #expect(AccessUnitMessage.headerSize == 18)
    }

    /// nalcast's own streams: keyframe from the IDR, capture time (ns → µs) and pts from the
    /// timestamp SEI, whatever the media time given.
    @Test func fieldsComeFromTheTimestampSEI() {
        let ts = StreamTimestamp(sequence: 9, captureTimeNs: 1_795_000_000_123_456_789, pts90k: 270_000, isKeyframe: true)
        let key = AccessUnitMessage(Self.unit(idr: true, timestamp: ts), mediaTime: MediaTime(ticks: 5))
        #expect(key == AccessUnitMessage(isKeyframe: true, captureTimeMicros: 1_795_000_000_123_456, pts90k: 270_000))
        let delta = AccessUnitMessage(Self.unit(idr: false, timestamp: ts), mediaTime: .zero)
        #expect(!delta.isKeyframe)
    }

    /// Other encoders' streams: no capture time, the media clock's time as pts.
    @Test func withoutTimestampThePtsIsTheMediaTime() {
        let message = AccessUnitMessage(Self.unit(idr: false, timestamp: nil), mediaTime: MediaTime(ticks: 123_456))
        #expect(message == AccessUnitMessage(isKeyframe: false, captureTimeMicros: nil, pts90k: 123_456))
        #expect(message.header[1] == 0)
        #expect(AccessUnitMessage(Self.unit(idr: false, timestamp: nil), mediaTime: MediaTime(ticks: -5)).pts90k == 0)
    }

    @Test func headersReadBack() {
        for message in [
            AccessUnitMessage(isKeyframe: true, captureTimeMicros: 0, pts90k: 0),
            AccessUnitMessage(isKeyframe: false, captureTimeMicros: .max, pts90k: .max),
            AccessUnitMessage(isKeyframe: false, captureTimeMicros: nil, pts90k: 42),
        ] {
            #expect(AccessUnitMessage(header: message.header + [0, 0, 0, 1]) == message)
        }
        let good = AccessUnitMessage(isKeyframe: true, captureTimeMicros: 1, pts90k: 2).header
        #expect(AccessUnitMessage(header: good.dropLast()) == nil)
        #expect(AccessUnitMessage(header: [2] + good.dropFirst()) == nil)
        #expect(AccessUnitMessage(header: [good[0], good[1] | 0x04] + good.dropFirst(2)) == nil)
    }

    /// The frame: one binary WebSocket frame whose payload is the header and the Annex-B
    /// bytes of the NAL units given; an entry point's SPS and PPS are put in front when the
    /// IDR does not carry them (`nalUnitsForEntry`).
    @Test func frameCarriesHeaderAndAnnexB() throws {
        let ts = StreamTimestamp(sequence: 0, captureTimeNs: 2_000_000, pts90k: 0, isKeyframe: true)
        let unit = Self.unit(idr: true, timestamp: ts, parameterSetsInside: false)
        let message = AccessUnitMessage(unit, mediaTime: .zero)
        let bytes = message.frame(unit.nalUnitsForEntry).flatMap { $0 }
        let annexB = unit.nalUnitsForEntry.flatMap { Array($0.wire) }
        #expect(bytes[0] == 0x82)
        #expect(Int(bytes[1]) == 18 + annexB.count)
        #expect(AccessUnitMessage(header: bytes[2...]) == message)
        #expect(message.captureTimeMicros == 2000)
        #expect(Array(bytes[20...]) == annexB)
        // SPS and PPS are in the message, after the AUD.
        var parser = AnnexBParser()
        let units = parser.push(Array(bytes[20...])) + parser.finish()
        #expect(units.count == 1)
        #expect(units.first?.nalTypes == [.accessUnitDelimiter, .sps, .pps, .sei, .idrSlice])
        #expect(units.first?.timestamp == ts)
    }

    /// A large access unit takes the 64-bit length; the frame's length counts every byte.
    @Test func largeAccessUnitLength() {
        let big = NALUnit(escapedBody: [0x65] + [UInt8](repeating: 0x5a, count: 70_000))
        let unit = AccessUnit(codec: H264Codec(), nalUnits: [Self.aud, big], isIDR: true, resolution: nil, timestamp: nil)
        let chunks = AccessUnitMessage(unit, mediaTime: .zero).frame(unit.nalUnits)
        #expect(chunks.count == 3)
        let head = Array(chunks[0])
        #expect(head.count == 10 + 18)
        let length = head[2..<10].reduce(0) { $0 << 8 | Int($1) }
        #expect(length == 18 + unit.byteCount)
        #expect(length == chunks.dropFirst().reduce(18) { $0 + $1.count })
    }
}
