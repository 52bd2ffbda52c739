import Testing
@testable import Muxing

/// What a `--forward` URL becomes: its protocol and muxer, and the name that logs, events and
/// metrics show, from which every credential is gone.
@Suite struct PushTargetTests {
    @Test(arguments: [
        ("rtmp://127.0.0.1/live/stream", "rtmp://127.0.0.1/live/****"),
        ("rtmp://a.rtmp.youtube.com/live2/abcd-efgh-ijkl", "rtmp://a.rtmp.youtube.com/live2/****"),
        ("rtmps://user:pw@live.example:443/app/key?x=1", "rtmps://***@live.example:443/app/****?x=***"),
        ("srt://10.0.0.2:9000?streamid=publish:cam:alice:pw&latency=200000", "srt://10.0.0.2:9000?streamid=***&latency=200000"),
        ("srt://[::1]:9000?passphrase=0123456789&mode=caller", "srt://[::1]:9000?passphrase=***&mode=caller"),
        ("rtsp://admin:hunter2@cam.local:8554/path/live", "rtsp://***@cam.local:8554/path/live"),
        ("udp://239.0.0.1:1234?ttl=4", "udp://239.0.0.1:1234?ttl=4"),
    ])
    func namesHideCredentials(_ url: String, _ shown: String) throws {
        let target = try #require(try PushTarget(url: url))
        #expect(target.description == shown)
        #expect(target.url == url)
    }

    @Test func eachProtocolHasItsMuxer() throws {
        #expect(try PushTarget(url: "rtmp://h/a/k")?.muxer == "flv")
        #expect(try PushTarget(url: "srt://h:1")?.muxer == "mpegts")
        #expect(try PushTarget(url: "udp://h:1")?.muxer == "mpegts")
        #expect(try PushTarget(url: "rtsp://h/p")?.muxer == "rtsp")
        #expect(try PushTarget(url: "rtsp://h/p")?.headerOptions.contains { $0 == ("rtsp_transport", "tcp") } == true)
    }

    @Test func rawAndUnknownSchemesAreNotPushes() throws {
        #expect(try PushTarget(url: "tcp://127.0.0.1:7264") == nil)
        #expect(try PushTarget(url: "unix:/tmp/s") == nil)
        #expect(try PushTarget(url: "http://example.com/") == nil)
    }

    @Test(arguments: [
        ("rtmp://host/app", "application and a stream key"), ("rtmp:///app/key", "needs a host"),
        ("srt://host", "needs a port"), ("udp://host", "needs a port"), ("srt://host:0", "bad port"),
        ("rtsp://host:http/x", "bad port"),
    ])
    func unusableURLsSayWhy(_ url: String, _ says: String) {
        #expect {
            _ = try PushTarget(url: url)
        } throws: { error in
            (error as? PushTargetError)?.description.contains(says) == true
        }
    }

    /// `consume --from` names its URLs with the same masking, for every scheme it reads.
    @Test(arguments: [
        ("rtsp://admin:hunter2@10.0.0.5:554/Streaming/101", "rtsp://***@10.0.0.5:554/Streaming/101"),
        ("rtmps://live.example.net/app/s3cret", "rtmps://live.example.net/app/****"),
        ("https://cdn.example.net/live/a.ts?token=abc&mode=x", "https://cdn.example.net/live/a.ts?token=***&mode=x"),
        ("srt://h:9000?streamid=read:cam1&passphrase=pw&latency=200", "srt://h:9000?streamid=***&passphrase=***&latency=200"),
        ("udp://239.1.1.1:5000", "udp://239.1.1.1:5000"),
        ("clip.mp4", "clip.mp4"),
    ])
    func anyURLIsMaskedTheSameWay(_ url: String, _ shown: String) {
        #expect(PushTarget.masked(url) == shown)
    }
}
