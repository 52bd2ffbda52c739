import Foundation
import Testing
import TestSupport

extension RelaySourceTests {
    /// Headless Chromium on the relay's page (`--web`), started in the background so that it
    /// watches while the 16 readers decode: `finish` waits for its verdict (30 pictures
    /// painted at the source's size, no decode error, no problem stated; with `untilEnded`,
    /// the stream's end seen as such: a close 1001 with a clean closing handshake). Nil, and
    /// nothing checked, where Chromium is missing.
    struct PageCheck {
        let process: ServerProcess
        let output: URL
        let context: String
        /// Where `open` writes the page's URL for a browser started before the page existed.
        var urlFile: URL?
        var untilEnded = false

        static func start(_ consumer: ServerProcess, in dir: URL, _ context: String) throws -> PageCheck? {
            guard PlaybackTests.chromiumMissing == nil else { return nil }
            // Unwrapped here: passed straight to `page: String?`, a nil would go through as
            // "no page yet" and the check would wait for a URL file nothing writes.
            let page = try #require(RelaySourceTests.pageURL(consumer), "\(consumer.logTail())")
            return try launch(in: dir, context, page: page)
        }

        /// The browser alone, before the relay starts: a stream that ends a few seconds after
        /// it began must not end while the browser is still starting (which takes seconds on
        /// a loaded machine). `open` gives it the page; `finish` waits for the stream's end.
        static func launchBeforeAShortStream(in dir: URL, _ context: String) throws -> PageCheck? {
            try launchBeforeTheSource(in: dir, context, untilEnded: true)
        }

        /// The browser alone, started before a source of a few seconds is: `open` gives it the
        /// page once the browser is up, then the source may start.
        static func launchBeforeTheSource(in dir: URL, _ context: String, untilEnded: Bool = false) throws -> PageCheck? {
            guard let check = try launch(in: dir, context, page: nil, untilEnded: untilEnded) else { return nil }
            #expect(check.process.waitForLog("browser started", timeout: 90), "\(context): \(check.process.logTail())")
            return check
        }

        /// web_check.py on `page`, or without one (nil) on the URL `open` writes; with
        /// `untilEnded`, it watches until the stream's end.
        private static func launch(in dir: URL, _ context: String, page given: String?, untilEnded: Bool = false) throws -> PageCheck? {
            guard PlaybackTests.chromiumMissing == nil else { return nil }
            let urlFile = dir.appendingPathComponent("page-url")
            let output = dir.appendingPathComponent("page-check.json")
            let process = ServerProcess(name: "web_check", logURL: dir.appendingPathComponent("page-check.log"))
            let goal = untilEnded ? [#"{"state": "ended"}"#] : []
            try process.start(PlaybackTests.venvPython, [PlaybackTests.browserTools.appendingPathComponent("web_check.py").path,
                                                         given ?? "@" + urlFile.path, "[]"] + goal, stdout: output)
            return PageCheck(process: process, output: output, context: context, urlFile: given == nil ? urlFile : nil, untilEnded: untilEnded)
        }

        /// Gives a browser started by `launchBeforeTheSource` (or `launchBeforeAShortStream`) the relay's page.
        mutating func open(_ consumer: ServerProcess) throws {
            guard let urlFile else { return }
            let page = try #require(RelaySourceTests.pageURL(consumer), "\(consumer.logTail())")
            try Data(page.utf8).write(to: urlFile, options: .atomic)
            self.urlFile = nil
        }

        func finish() throws {
            let status = process.waitForExit(timeout: 120)
            if status == nil { process.stop() }
            let data = (try? Data(contentsOf: output)) ?? Data()
            // With a goal, the last line is the page as it reached it.
            let last = data.split(separator: UInt8(ascii: "\n")).last.map { Data($0) } ?? Data()
            let seen = (try? JSONSerialization.jsonObject(with: last)) as? [String: Any] ?? [:]
            #expect(status == 0 && (seen["painted"] as? Int ?? 0) >= 30, "\(context): the page: \(String(decoding: data, as: UTF8.self)) \(process.logTail())")
            if untilEnded {
                // The stream's end, told as such: the relay's close frame (1001) and a clean
                // closing handshake, not a lost connection (1006).
                let close = (seen["closes"] as? [[String: Any]])?.last
                #expect(seen["state"] as? String == "ended" && close?["code"] as? Int == 1001 && close?["wasClean"] as? Bool == true,
                        "\(context): the stream's end: \(seen)")
            }
            #expect(seen["width"] as? Int == RelaySourceTests.size.width && seen["height"] as? Int == RelaySourceTests.size.height, "\(context): \(seen)")
            #expect(seen["errors"] as? Int == 0 && seen["problem"] is NSNull, "\(context): \(seen)")
            print("\(context) in Chromium: \(seen["painted"] ?? "?") pictures painted")
        }
    }
}
