import Clocks
import Metrics
import Testing
@testable import Serving

/// The token table (parsing, constant-time lookup), the token a request presents, and the
/// guard's slowing of a host's failures, on a clock the test drives.
@Suite struct AccessTokenTests {
    static let file = """
        # comment
        aaaaaaaaaaaaaaaa1 watch
        bbbbbbbbbbbbbbbb2\twatch,metrics   # trailing comment

        cccccccccccccccc3 all
        """

    @Test func aTableReadsTokensAndTheirPermissions() throws {
        let table = try TokenTable(parsing: Self.file)
        #expect(table.entries.count == 3)
        #expect(table.permissions(of: "aaaaaaaaaaaaaaaa1".utf8) == .watch)
        #expect(table.permissions(of: "bbbbbbbbbbbbbbbb2".utf8) == [.watch, .metrics])
        #expect(table.permissions(of: "cccccccccccccccc3".utf8) == .all)
        // A prefix, a longer token, another of the same length: none.
        #expect(table.permissions(of: "aaaaaaaaaaaaaaaa".utf8) == nil)
        #expect(table.permissions(of: "aaaaaaaaaaaaaaaa12".utf8) == nil)
        #expect(table.permissions(of: "aaaaaaaaaaaaaaaa2".utf8) == nil)
        #expect(table.permissions(of: "".utf8) == nil)
    }

    @Test func aBadFileNamesTheLineNotTheToken() {
        for (text, reason) in [("short watch", "line 1: a token is 16"), ("aaaaaaaaaaaaaaaa1 read", "line 1: unknown permission 'read'"),
                               ("# only\n\naaaaaaaaaaaaaaaa1", "line 3: expected a token and its permissions"), ("# nothing\n", "no token in the file")] {
            #expect(throws: TokenFileError.self) { try TokenTable(parsing: text) }
            do {
                _ = try TokenTable(parsing: text)
            } catch {
                #expect(error.description.hasPrefix(reason), "\(error)")
                #expect(!error.description.contains("aaaaaaaaaaaaaaaa1"))
            }
        }
    }

    @Test func aRequestPresentsABearerOrAQueryToken() throws {
        func request(_ target: String, _ headers: String = "") -> HTTPRequest {
            HTTPRequest(head: Array("GET \(target) HTTP/1.1\r\nHost: x\r\n\(headers)\r\n".utf8)[...])!
        }
        #expect(request("/", "Authorization: Bearer abc\r\n").presentedToken == "abc")
        #expect(request("/ws?token=a%2Bb&x=1").presentedToken == "a+b")
        #expect(request("/").presentedToken == nil)
        #expect(request("/bitrate?token=abc&6M").removingToken().query == "6M")
        #expect(request("/bitrate?token=abc").removingToken().query == nil)
        #expect(request("/bitrate?6M").removingToken().query == "6M")
    }

    func near(_ value: Double?, _ expected: Double) -> Bool { value.map { abs($0 - expected) < 1e-6 } ?? false }

    @Test func failuresOfAHostAreSlowedOneAfterAnother() throws {
        let clock = ManualClock(nanoseconds: 1_000_000_000_000)
        let guard_ = AccessGuard(table: try TokenTable(parsing: Self.file), registry: MetricsRegistry(), clock: clock)
        // 50 ms doubling, answered one after another: parallel attempts wait in line.
        #expect(near(guard_.failed(host: "10.0.0.1"), 0.05))
        #expect(near(guard_.failed(host: "10.0.0.1"), 0.05 + 0.1))
        // Another host is not slowed by the first.
        #expect(near(guard_.failed(host: "10.0.0.2"), 0.05))
        guard_.answered(host: "10.0.0.1")
        guard_.answered(host: "10.0.0.1")
        clock.advance(milliseconds: 1000)
        #expect(near(guard_.failed(host: "10.0.0.1"), 0.2))
        // Capped, and past maxWaiting answers waiting the rest close at once.
        guard_.maxWaiting = 3
        #expect(guard_.failed(host: "10.0.0.1") != nil)
        #expect(guard_.failed(host: "10.0.0.1") != nil)
        #expect(guard_.failed(host: "10.0.0.1") == nil)
        #expect(guard_.failures.value == 7)
        // Quiet for a minute: forgotten.
        clock.advance(milliseconds: 61_000)
        #expect(near(guard_.failed(host: "10.0.0.2"), 0.05))
    }

    @Test func theDecisionFollowsThePermission() throws {
        let guard_ = AccessGuard(table: try TokenTable(parsing: Self.file), registry: MetricsRegistry())
        func request(_ token: String?) -> HTTPRequest {
            HTTPRequest(head: Array("GET /\(token.map { "?token=\($0)" } ?? "") HTTP/1.1\r\n\r\n".utf8)[...])!
        }
        #expect(guard_.decide(request(nil), needs: .watch) == .unauthorized)
        #expect(guard_.decide(request("zzzzzzzzzzzzzzzzz"), needs: .watch) == .unauthorized)
        #expect(guard_.decide(request("aaaaaaaaaaaaaaaa1"), needs: .watch) == .allowed)
        #expect(guard_.decide(request("aaaaaaaaaaaaaaaa1"), needs: .metrics) == .forbidden)
        #expect(guard_.decide(request("cccccccccccccccc3"), needs: .control) == .allowed)
    }
}
