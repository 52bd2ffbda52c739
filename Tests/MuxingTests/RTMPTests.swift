import Testing
@testable import Muxing

/// The pieces of nalcast's RTMP publisher that need no server: where a URL's application
/// and stream key are (as FFmpeg splits them), AMF0 both ways, and chunks written and read
/// back (the reader is the one that reads a server's answers). The publisher itself is
/// tested against nginx-rtmp (CLITests' PushTests and RTMPPublishTests).
@Suite struct RTMPTests {
    @Test(arguments: [
        ("rtmp://127.0.0.1/live/stream", "127.0.0.1", 1935, "live", "stream", "rtmp://127.0.0.1:1935/live"),
        ("rtmp://h:1936/live/key?token=abc", "h", 1936, "live", "key?token=abc", "rtmp://h:1936/live"),
        ("rtmp://h/app/instance/key", "h", 1935, "app/instance", "key", "rtmp://h:1935/app/instance"),
        ("rtmp://h/a/b/c/d", "h", 1935, "a/b", "c/d", "rtmp://h:1935/a/b"),
        ("rtmp://h/vod/mp4:dir/file", "h", 1935, "vod", "mp4:dir/file", "rtmp://h:1935/vod"),
        ("rtmp://h/live/name.flv", "h", 1935, "live", "name", "rtmp://h:1935/live"),
        ("rtmp://u:p@[::1]:2000/live/k", "::1", 2000, "live", "k", "rtmp://[::1]:2000/live"),
    ])
    func urlsSplitAsFFmpegSplitsThem(_ url: String, _ host: String, _ port: Int, _ app: String, _ key: String, _ tcUrl: String) throws {
        let address = try #require(RTMPAddress(url))
        #expect(address.host == host && Int(address.port) == port)
        #expect(address.app == app && address.playpath == key)
        #expect(address.tcUrl == tcUrl)
    }

    @Test func rtmpsIsNotOurs() throws {
        #expect(RTMPAddress("rtmps://h/live/k") == nil)
        let push = try #require(try PushTarget(url: "rtmps://h/live/k"))
        #expect(push.needsFFmpeg)
        #expect(push.makeTransport(fallbackFrameRate: nil, countedClock: false) is PushTransport)
        let plain = try #require(try PushTarget(url: "rtmp://h/live/k"))
        #expect(!plain.needsFFmpeg)
        #expect(plain.makeTransport(fallbackFrameRate: nil, countedClock: false) is RTMPPublisher)
    }

    @Test func amf0RoundTrips() throws {
        var bytes: [UInt8] = []
        AMF0.encode(["connect", 1, .object([("app", "live"), ("n", .number(2.5)), ("b", .bool(true)), ("z", .null)]),
                     .ecmaArray([("width", 320)]), .strictArray([.undefined, "x"])], into: &bytes)
        let values = try AMF0.decode(bytes[...])
        #expect(values.count == 5)
        #expect(values[0].text == "connect" && values[1].number == 1)
        #expect(values[2].field("app")?.text == "live" && values[2].field("n")?.number == 2.5)
        #expect(values[3].field("width")?.number == 320)
        // Cut anywhere, it is an error, never a crash or a wrong value.
        for n in 0..<bytes.count {
            if let cut = try? AMF0.decode(bytes[..<n]) { #expect(cut.count < 5) }
        }
    }

    /// Messages of every size around the chunk size, with and without an extended
    /// timestamp, chunked and read back: the same payloads, types, times and streams.
    @Test(arguments: [128, 4096, 65536])
    func chunksReadBackAsTheyWereWritten(chunkSize: Int) throws {
        var writer = RTMPChunkWriter()
        writer.chunkSize = chunkSize
        let sizes = [0, 1, chunkSize - 1, chunkSize, chunkSize + 1, 3 * chunkSize + 7, 70_000]
        var sent: [(UInt8, UInt32, [UInt8])] = []
        for (i, size) in sizes.enumerated() {
            let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) }
            let time: UInt32 = i % 2 == 0 ? UInt32(i * 33) : 0x0100_0000 + UInt32(i)
            // Small bytes and a shared slice, as a video message is made.
            writer.add(payload.prefix(5))
            writer.add(shared: payload.dropFirst(5))
            writer.finish(chunkStream: UInt8(4 + i % 3), type: 9, streamID: 1, timestamp: time)
            sent.append((9, time, payload))
        }
        let wire = writer.slices().flatMap { $0 }
        var reader = RTMPChunkReader()
        reader.chunkSize = chunkSize
        var got: [RTMPChunkReader.Message] = []
        // Fed in pieces of 1000 bytes: a chunk split across reads waits for its end.
        for start in stride(from: 0, to: wire.count, by: 1000) {
            wire[start..<min(start + 1000, wire.count)].withUnsafeBytes { reader.append($0) }
            while let message = try reader.next() { got.append(message) }
        }
        #expect(got.count == sent.count)
        for (message, expected) in zip(got, sent) {
            #expect(message.type == expected.0 && message.timestamp == expected.1 && message.streamID == 1)
            #expect(message.payload == expected.2)
        }
    }

    @Test func aServerMessageTooLongIsAnErrorNotMemory() throws {
        var writer = RTMPChunkWriter()
        writer.chunkSize = 65536
        writer.add(shared: [UInt8](repeating: 0, count: RTMPChunkReader.maxMessage + 1)[...])
        writer.finish(chunkStream: 3, type: 20, streamID: 0, timestamp: 0)
        let head = Array(writer.slices().flatMap { $0 }.prefix(64))
        var reader = RTMPChunkReader()
        head.withUnsafeBytes { reader.append($0) }
        #expect(throws: (any Error).self) { _ = try reader.next() }
    }
}
