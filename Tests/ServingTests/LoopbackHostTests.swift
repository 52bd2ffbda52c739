import Serving
import Testing

/// `WebSocketHandshake.isLoopbackHost`: which `Host` headers a loopback page's `/ws` takes.
@Suite struct LoopbackHostTests {
    @Test(arguments: ["127.0.0.1:8080", "127.0.0.1", "127.1.2.3:80", "localhost:8080", "LOCALHOST", "[::1]:8080", "[::1]"])
    func thisMachine(_ host: String) {
        #expect(WebSocketHandshake.isLoopbackHost(host))
    }

    @Test(arguments: ["rebound.example:8080", "127.0.0.1.example:80", "128.0.0.1:80", "10.0.0.1", "127.0.0.256", "", "[::2]:80", "localhost.example"])
    func notThisMachine(_ host: String) {
        #expect(!WebSocketHandshake.isLoopbackHost(host))
    }
}
