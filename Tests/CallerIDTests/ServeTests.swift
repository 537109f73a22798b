import Foundation
import Testing
@testable import CallerID
import CallerIDQuery
import CallerIDServe

// `lookup serve` started for real on a free port of 127.0.0.1, asked with real HTTP clients:
// curl, and Python's http.client and sockets (Fixtures/serve_client.py) for kept-alive
// connections, loads during a store switch and hostile clients. What the server answers is
// compared with what `lookup NUMBER --json` and `lookup - --json` print for the same input.

/// A `lookup serve` for one test, killed when released unless it has exited.
final class ServeProcess {
    let process = Process()
    let port: Int
    let dir = TempDir()
    private let output = Pipe()
    /// The first line it printed.
    private(set) var startLine = ""

    /// Starts `lookup serve --listen 127.0.0.1:0 ARGS` and reads the port it prints.
    init(_ args: [String], environment extra: [String: String] = [:], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let binary = try #require(BuiltProducts.lookup, "\(BuiltProducts.missing("lookup"))", sourceLocation: sourceLocation)
        process.executableURL = binary
        process.arguments = ["serve", "--listen", "127.0.0.1:0"] + args
        var environment = ProcessInfo.processInfo.environment
        environment.removeValue(forKey: "LOOKUP_DB")
        environment.merge(extra) { $1 }
        process.environment = environment
        process.standardOutput = output
        _ = FileManager.default.createFile(atPath: dir.path("stderr"), contents: nil)
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: dir.path("stderr")))
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // The first line on stdout says where it listens; what follows is read and dropped.
        let reader = output.fileHandleForReading
        let first = DispatchSemaphore(value: 0)
        final class Line: @unchecked Sendable { var text = "" }
        let line = Line()
        Thread {
            var bytes: [UInt8] = []
            var signalled = false
            while true {
                let data = reader.availableData
                if data.isEmpty { break }
                if !signalled {
                    bytes += data
                    if let nl = bytes.firstIndex(of: 0x0A) {
                        line.text = String(decoding: bytes[..<nl], as: UTF8.self)
                        signalled = true
                        first.signal()
                    }
                }
            }
            if !signalled { first.signal() }
        }.start()
        _ = first.wait(timeout: .now() + 30)
        startLine = line.text
        // `listening on 127.0.0.1:PORT`, or with --json {"listening":"127.0.0.1:PORT","port":PORT,…}.
        let object = (try? JSONSerialization.jsonObject(with: Data(line.text.utf8))) as? [String: Any]
        guard let port = object?["port"] as? Int
                ?? (line.text.hasPrefix("listening on 127.0.0.1:") ? Int(line.text.dropFirst("listening on 127.0.0.1:".count)) : nil) else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            let stderr = (try? String(contentsOfFile: dir.path("stderr"), encoding: .utf8)) ?? ""
            throw CABIFailure("lookup serve did not start: stdout '\(line.text)', stderr: \(stderr)")
        }
        self.port = port
    }

    var stderr: String { (try? String(contentsOfFile: dir.path("stderr"), encoding: .utf8)) ?? "" }
    var pid: Int32 { process.processIdentifier }
    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    func send(_ signal: Int32) { kill(process.processIdentifier, signal) }

    /// The exit status once it has exited within `seconds`, nil if it is still running.
    func exitStatus(within seconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        return process.isRunning ? nil : process.terminationStatus
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// An HTTP answer as curl received it.
struct HTTPAnswer {
    var status: Int
    /// Header names lowercased.
    var headers: [String: String]
    var body: String
}

/// `curl -s -i ARGS`: the last answer's status, headers and body (nil when curl got none).
func curl(_ args: [String]) throws -> HTTPAnswer? {
    let run = try runTool("curl", ["-s", "-i", "--max-time", "20"] + args)
    guard run.status == 0 else { return nil }
    var text = run.stdout
    var answer: HTTPAnswer? = nil
    while let split = text.range(of: "\r\n\r\n") {
        let head = text[..<split.lowerBound].split(separator: "\r\n").map(String.init)
        text = String(text[split.upperBound...])
        guard let statusLine = head.first, statusLine.hasPrefix("HTTP/") else { break }
        let status = Int(statusLine.split(separator: " ")[1]) ?? 0
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        answer = HTTPAnswer(status: status, headers: headers, body: "")
        if status != 100 { break }   // an interim 100 Continue: the real answer follows
    }
    answer?.body = text
    return answer
}

/// Runs Fixtures/serve_client.py: one JSON object per line of its output.
func serveClient(_ args: [String], stdin: String? = nil, timeout: Double = 60) throws -> [[String: Any]] {
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/serve_client.py").path
    let run = try runTool("python3", [script] + args, stdin: stdin.map { Data($0.utf8) }, timeout: timeout)
    #expect(run.status == 0, "serve_client.py \(args.joined(separator: " ")) failed: \(run.stderr)")
    return run.lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
}

/// Sends `bytes` on one connection of 127.0.0.1 (Fixtures/serve_client.py raw): the first
/// answer's status line, headers and body (`status_line` "" when none came).
func rawHTTP(_ port: Int, _ bytes: some Sequence<UInt8>) throws -> [String: Any] {
    try serveClient(["raw", "\(port)", bytes.map { String(format: "%02x", $0) }.joined()]).first ?? [:]
}

/// Sends `bytes` on one connection of 127.0.0.1 and reads until the server closes it (at most
/// `seconds`): every status line received, and whether the server closed the connection.
func streamHTTP(_ port: Int, _ bytes: some Sequence<UInt8>, seconds: Double = 5) throws -> (statusLines: [String], closed: Bool, text: String) {
    let result = try serveClient(["stream", "\(port)", bytes.map { String(format: "%02x", $0) }.joined(), "\(seconds)"]).first ?? [:]
    return (result["status_lines"] as? [String] ?? [], result["closed"] as? Bool ?? false, result["text"] as? String ?? "")
}

/// A small directory: identify and blocking entries, a label that JSON must escape.
func serveFixture(_ dir: TempDir) throws -> String {
    let path = dir.path("city.cid")
    _ = try buildDatabase([
        Entry(number: 79131234567, label: "Pizza Hut", category: .identify),
        Entry(number: 79990000000, label: "Debt collector", category: try Category("collector", action: .block)),
        Entry(number: 79990000001, label: "", category: try Category("spam", action: .block)),
        Entry(number: 74951234567, label: "Say \"hi\" \\ Сбербанк", category: .identify),
    ], at: path)
    return path
}

struct ServeTests {
    @Test func theLookupEndpointAnswersWhatLookupJSONPrints() throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        let server = try ServeProcess(["--db", db])
        // Found, not found, a label JSON must escape, written with + and spaces (percent-encoded).
        for (path, number) in [("79131234567", "79131234567"), ("79131234568", "79131234568"), ("74951234567", "74951234567"),
                               ("%2B7%20913%20123-45-67", "+7 913 123-45-67")] {
            let answer = try #require(try curl([server.url("/v1/lookup/\(path)")]))
            let cli = try lookup([number, "--db", db, "--json"])
            #expect(answer.body == cli.stdout, "GET /v1/lookup/\(path)")
            #expect(answer.status == (cli.status == 0 ? 200 : 404))
            #expect(answer.headers["content-type"] == "application/json")
        }
        // National forms with ?country=, read as `lookup --country` reads them.
        let national = try #require(try curl([server.url("/v1/lookup/8%20(913)%20123-45-67?country=RU")]))
        #expect(national.body == (try lookup(["8 (913) 123-45-67", "--db", db, "--country", "RU", "--json"])).stdout)
        // Read as a build reads them (the build's normalizer and validity): an international
        // prefix dialled from Korea is +82 2 866 0791, and a number too short for Korea is refused
        // (400, the object `lookup - --country KR --json` prints for that line).
        let dialled = try #require(try curl([server.url("/v1/lookup/00%2082%202%20866%200791?country=KR")]))
        #expect(dialled.status == 404 && dialled.body.contains("\"number\":8228660791,"), "\(dialled.body)")
        #expect(dialled.body == (try lookup(["00 82 2 866 0791", "--db", db, "--country", "KR", "--json"])).stdout)
        let short = try #require(try curl([server.url("/v1/lookup/010-12?country=KR")]))
        #expect(short.status == 400)
        #expect(short.body == (try lookup(["-", "--db", db, "--country", "KR", "--json"], stdin: Data("010-12\n".utf8))).stdout)
        // A number that cannot be read: 400 and the object a batch line gets.
        let bad = try #require(try curl([server.url("/v1/lookup/12ab")]))
        #expect(bad.status == 400)
        let batchLine = try lookup(["-", "--db", db, "--json"], stdin: Data("12ab\n".utf8))
        #expect(bad.body == batchLine.stdout)
        let country = try #require(try curl([server.url("/v1/lookup/79131234567?country=ZZ")]))
        #expect(country.status == 400 && country.body.contains("unknown country 'ZZ'"))
        // HEAD: the status and headers, no body.
        let head = try #require(try curl(["-I", server.url("/v1/lookup/79131234567")]))
        #expect(head.status == 200 && head.body.isEmpty)
        // Kept-alive: several answers on one connection.
        let answers = try serveClient(["get", "\(server.port)", "/v1/lookup/79131234567", "/v1/lookup/1", "/healthz"])
        #expect(answers.map { $0["status"] as? Int } == [200, 404, 200])
        #expect(answers.allSatisfy { $0["reused"] as? Bool == true }, "\(answers)")
    }

    @Test func theCallerNameEndpointSendsTheLabelAloneAndMarksBlockedNumbers() throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        let server = try ServeProcess(["--db", db])
        func cnam(_ n: String) throws -> HTTPAnswer { try #require(try curl([server.url("/v1/cnam/\(n)")])) }
        let found = try cnam("79131234567")
        #expect(found.status == 200 && found.body == "Pizza Hut" && found.headers["content-type"] == "text/plain; charset=utf-8")
        #expect(try cnam("79990000000").body == "SPAM? Debt coll")   // 15 characters
        #expect(try cnam("79990000001").body == "SPAM?")
        #expect(try cnam("74951234567").body == "Say 'hi' / Сбер")   // SIP-safe, 15 characters
        let unknown = try cnam("79131234568")
        #expect(unknown.status == 404 && unknown.body.isEmpty)
        let bad = try cnam("not-a-number")
        #expect(bad.status == 400 && bad.body.isEmpty)
        let plain = try ServeProcess(["--db", db, "--cnam-block-prefix", ""])
        #expect(try #require(try curl([plain.url("/v1/cnam/79990000000")])).body == "Debt collector")
    }

    @Test func everyCallerNameAnswerButAFoundNameHasAnEmptyBody() throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        let server = try ServeProcess(["--db", db])
        // Refusals of the HTTP layer, below the route: headers over --max-header-bytes, a NUL
        // in the target; and a method the path does not take.
        let long = "GET /v1/cnam/\(String(repeating: "1", count: 9000)) HTTP/1.1\r\nHost: x\r\n\r\n"
        let nul = "GET /v1/cnam/79131234567\u{0}1 HTTP/1.1\r\nHost: x\r\n\r\n"
        let post = "POST /v1/cnam/79131234567 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
        for (request, status) in [(long, 431), (nul, 400), (post, 405)] {
            let answer = try rawHTTP(server.port, Data(request.utf8))
            let statusLine = answer["status_line"] as? String ?? ""
            #expect(statusLine.contains(" \(status) "), "\(request.prefix(40).debugDescription): \(answer)")
            #expect(answer["body"] as? String == "", "\(request.prefix(40).debugDescription): \(answer)")
        }
        // The same refusals on the JSON endpoint still say why.
        let json = try rawHTTP(server.port, Data(long.replacingOccurrences(of: "/v1/cnam/", with: "/v1/lookup/").utf8))
        #expect((json["body"] as? String)?.hasPrefix("{\"error\":") == true, "\(json)")
    }

    @Test func aBodyWhoseEndIsAmbiguousIsRefusedAndItsConnectionClosed() throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        let server = try ServeProcess(["--db", db])
        // What follows the first Content-Length's 12 bytes would be read as a second request;
        // a proxy in front that takes the last one reads it as the body.
        let hidden = "GET /v1/cnam/79131234567 HTTP/1.1\r\nHost: x\r\n\r\n"
        let twoLengths = "POST /v1/lookup HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\nContent-Length: \(12 + hidden.utf8.count)\r\n\r\n79131234567\n" + hidden
        let zeroFirst = "POST /v1/lookup HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: \(hidden.utf8.count)\r\n\r\n" + hidden
        let lengthAndChunked = "POST /v1/lookup HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\nc\r\n79131234567\n\r\n0\r\n\r\n" + hidden
        let twoEncodings = "POST /v1/lookup HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + hidden
        for request in [twoLengths, zeroFirst, lengthAndChunked, twoEncodings] {
            let answer = try streamHTTP(server.port, Data(request.utf8))
            #expect(answer.statusLines.count == 1 && answer.statusLines.first?.contains(" 400 ") == true, "\(request.debugDescription): \(answer.text)")
            #expect(answer.closed, "\(request.debugDescription): the connection stayed open")
            #expect(!answer.text.contains("Pizza Hut"), "\(request.debugDescription): the hidden request was answered")
        }
        // One Content-Length, then a kept-alive request: both answered.
        let plain = "POST /v1/lookup HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\n79131234567\n" + hidden
        let both = try streamHTTP(server.port, Data(plain.utf8), seconds: 1.5)
        #expect(both.statusLines.count == 2 && both.text.hasSuffix("Pizza Hut"), "\(both.text)")
    }

    /// Before: `"` and `\` went out raw, so the label `x" <sip:666@evil.example>;tag=1`, placed
    /// between the quotes of a From header as Kamailio places a caller name, made the caller
    /// sip:666@evil.example; control characters went out as `\n` escapes. Now every answer,
    /// whatever the label (files that fail verify included), is one quoted display name in the
    /// header a PBX builds, read back by RFC 3261's grammar as the answer itself.
    @Test func aCallerNameStaysOneDisplayNameInTheSIPHeaderAPBXBuilds() throws {
        let dir = TempDir()
        let labels = sipHostileLabels
        let path = try sipHostileDatabase(dir)
        let server = try ServeProcess(["--db", path, "--cnam-max-chars", "1024"])
        var names: [String] = []
        for k in labels.indices {
            let answer = try #require(try curl([server.url("/v1/cnam/\(k + 1)")]))
            #expect(answer.status == 200)
            let name = answer.body
            names.append(name)
            #expect(!name.unicodeScalars.contains { "\"\\<>".unicodeScalars.contains($0) || $0.value < 0x20 || (0x7F...0x9F).contains($0.value) },
                    "\(labels[k].debugDescription) → \(name.debugDescription)")
            let header = "From: \"\(name)\" <sip:\(k + 1)@pbx.example>;tag=a73kszlfl"
            let parsed = try #require(parseSIPFromHeader(header), "\(header.debugDescription)")
            #expect(parsed.displayName == name && parsed.uri == "sip:\(k + 1)@pbx.example" && parsed.parameters == ["tag=a73kszlfl"],
                    "\(header.debugDescription)")
        }
        #expect(names == ["x' (sip:666@evil.example);tag=1", "Say 'hi' / Сбербанк", "a/'b", "x/", "(sip:1@evil.example)",
                          "Pizza Via: SIP/2.0/UDP evil.example", "tab here", "x [2J", "Paydsu Bank", "'", "Fine"])
        // A prefix that could not stand in the header is refused when the server starts.
        for prefix in ["\"SPAM\" ", "SPAM\\", "<SPAM> ", "SPAM?\n"] {
            #expect(try lookup(["serve", "--db", path, "--cnam-block-prefix", prefix]).status == 64, "\(prefix.debugDescription)")
        }
    }

    /// A real SIP proxy, Kamailio (where installed: Debian's kamailio; the tests do not install
    /// it), reads every caller name the server gives for the labels above, placed in a From
    /// header as a PBX places it, as one display name followed by the header's own URI and tag.
    /// The label `x" <sip:666@evil.example>;tag=1` as it was served before is a From header
    /// Kamailio cannot read at all.
    @Test(.enabled(if: kamailioPath != nil, "kamailio is not installed: caller names are not read by a real SIP proxy"))
    func kamailioReadsEveryCallerNameAsOneDisplayName() throws {
        let dir = TempDir()
        let server = try ServeProcess(["--db", try sipHostileDatabase(dir), "--cnam-max-chars", "1024"])
        let names = try sipHostileLabels.indices.map { k in try #require(try curl([server.url("/v1/cnam/\(k + 1)")])).body }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/kamailio_from.py").path
        let input = try JSONSerialization.data(withJSONObject: names + [sipHostileLabels[0]])
        let run = try runTool("python3", [script, try #require(kamailioPath)], stdin: input, timeout: 60)
        #expect(run.status == 0, "\(run.stderr)")
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [Any])
        #expect(parsed.count == names.count + 1)
        for (k, name) in names.enumerated() {
            let header = parsed[k] as? [String: String]
            #expect(header == ["fn": "\"\(name)\"", "fu": "sip:\(k)@pbx.example", "ft": "t\(k)"], "\(name.debugDescription)")
        }
        #expect(parsed.last as? [String: String] == ["fn": "<null>", "fu": "<null>", "ft": "<null>"])
    }

    /// Before: the whole label was sent, up to 65,535 bytes, which a SIP proxy drops (Kamailio
    /// takes 8 KiB at most) and which makes a UDP packet of as many bytes. Now an answer holds at
    /// most 15 characters (`--cnam-max-chars N`), counted as Unicode scalars, cut only between
    /// whole characters as a phone shows them, without trailing spaces.
    @Test func aCallerNameHoldsAtMostCnamMaxCharsWholeCharacters() throws {
        let dir = TempDir()
        let labels = ["Pizza Hut", "A very long business name", String(repeating: "x", count: 65_535), "Сбербанк России Москва",
                      "abcdefghijklm👩\u{200D}💻", "abcdefghijklmne\u{301}", String(repeating: "🇷🇺", count: 8), "abcdefghijklmn ж"]
        let path = dir.path("long.cid")
        try Data(try HostileFileTests.imageWithLabels(labels.map { Array($0.utf8) }, hot: false)).write(to: URL(fileURLWithPath: path))
        func names(_ server: ServeProcess) throws -> [[UInt8]] {
            try labels.indices.map { k in Array(try #require(try curl([server.url("/v1/cnam/\(k + 1)")])).body.utf8) }
        }
        let expected = ["Pizza Hut", "A very long bus", String(repeating: "x", count: 15), "Сбербанк России", "abcdefghijklm",
                        "abcdefghijklmn", String(repeating: "🇷🇺", count: 7), "abcdefghijklmn"]
        let standard = try names(try ServeProcess(["--db", path]))
        #expect(standard == expected.map { Array($0.utf8) }, "\(standard.map { String(decoding: $0, as: UTF8.self) })")
        let wide = try names(try ServeProcess(["--db", path, "--cnam-max-chars", "1024"]))
        #expect(wide[1] == Array(labels[1].utf8) && wide[2] == Array(String(repeating: "x", count: 1024).utf8) && wide[4] == Array(labels[4].utf8))
        let narrow = try names(try ServeProcess(["--db", path, "--cnam-max-chars", "1", "--cnam-block-prefix", ""]))
        #expect(narrow == ["P", "A", "x", "С", "a", "a", "", "a"].map { Array($0.utf8) })
        for n in ["0", "1025", "abc", "4"] {   // 4: shorter than the prefix 'SPAM?'
            #expect(try lookup(["serve", "--db", path, "--cnam-max-chars", n]).status == 64, "\(n)")
        }
    }

    /// Before: a blocking label that began with the prefix was served `SPAM? SPAM? x`, and an
    /// identifying label that began with it (`SPAM? Pizza`) looked blocked to a dial plan. Now
    /// only a blocking category's answer begins with the prefix, and never twice.
    @Test func onlyABlockingCategorysCallerNameBeginsWithThePrefixAndNeverTwice() throws {
        let dir = TempDir()
        let path = dir.path("marks.cid")
        let spam = try Category("spam", action: .block)
        let labels: [(String, Category)] = [
            ("SPAM? x", spam), ("SPAM?x", spam), ("Debt", spam), ("", spam), ("SPAM ring", spam),
            ("SPAM? Pizza", .identify), ("SPAM?", .identify), ("SPAM? SPAM?  x", .identify), ("SPAMMER Inc", .identify),
            ("spam? Pizza", .identify), ("Spam: Taxi", .identify),
        ]
        _ = try buildDatabase(labels.enumerated().map { Entry(number: 79_000_000_001 + UInt64($0.offset), label: $0.element.0, category: $0.element.1) },
                              at: path)
        func names(_ server: ServeProcess) throws -> [String] {
            try labels.indices.map { k in try #require(try curl([server.url("/v1/cnam/\(79_000_000_001 + k)")])).body }
        }
        #expect(try names(try ServeProcess(["--db", path])) == [
            "SPAM? x", "SPAM?x", "SPAM? Debt", "SPAM?", "SPAM? SPAM ring",
            "Pizza", "", "x", "SPAMMER Inc", "spam? Pizza", "Spam: Taxi",
        ])
        #expect(try names(try ServeProcess(["--db", path, "--cnam-block-prefix", "Spam: "])) == [
            "Spam: SPAM? x", "Spam: SPAM?x", "Spam: Debt", "Spam:", "Spam: SPAM ring",
            "SPAM? Pizza", "SPAM?", "SPAM? SPAM? x", "SPAMMER Inc", "spam? Pizza", "Taxi",
        ])
        #expect(try names(try ServeProcess(["--db", path, "--cnam-block-prefix", ""])) == [
            "SPAM? x", "SPAM?x", "Debt", "", "SPAM ring", "SPAM? Pizza", "SPAM?", "SPAM? SPAM? x", "SPAMMER Inc", "spam? Pizza", "Spam: Taxi",
        ])
    }

    @Test func healthAndMetricsDescribeTheServerAndItsData() throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        let server = try ServeProcess(["--db", db])
        for n in ["79131234567", "79131234567", "79131234568"] { _ = try curl([server.url("/v1/lookup/\(n)")]) }
        let health = try #require(try curl([server.url("/healthz")]))
        #expect(health.status == 200)
        #expect(health.body.contains("\"status\":\"ok\"") && health.body.contains("\"entries\":4"))
        let metrics = try #require(try curl([server.url("/metrics")]))
        #expect(metrics.headers["content-type"]?.hasPrefix("text/plain; version=0.0.4") == true)
        for line in ["callerid_http_requests_total{endpoint=\"lookup\",code=\"200\"} 2",
                     "callerid_http_requests_total{endpoint=\"lookup\",code=\"404\"} 1",
                     "callerid_http_requests_total{endpoint=\"healthz\",code=\"200\"} 1",
                     "callerid_entries 4", "callerid_database_files 1", "callerid_generation 0",
                     "callerid_http_request_duration_seconds_count 4",
                     "callerid_http_request_duration_seconds_bucket{le=\"+Inf\"} 4"] {
            #expect(metrics.body.contains(line + "\n"), "/metrics lacks '\(line)':\n\(metrics.body)")
        }
    }

    /// Before: a PBX trunk that sent `8XXXXXXXXXX` without `?country=` got bare 404s. The
    /// not-found answer of a number that looks national (the digits are no E.164 number but a
    /// national number with a trunk prefix, or an area code is in parentheses) now says so in
    /// `"hint"`, and `/metrics` counts such answers; other answers are unchanged.
    @Test func aNotFoundNumberThatLooksNationalGetsAHintAndIsCounted() throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        let server = try ServeProcess(["--db", db])
        for path in ["88432771998", "8%20(843)%20277-19-98"] {
            let answer = try #require(try curl([server.url("/v1/lookup/\(path)")]))
            #expect(answer.status == 404, "\(path)")
            let object = try #require(try jsonObjects(answer.body).first)
            #expect(object["number"] as? Int == 88432771998 && object["found"] as? Bool == false, "\(answer.body)")
            let hint = try #require(object["hint"] as? String, "\(answer.body)")
            #expect(hint.contains("looks like a national number: give ?country=XX") && hint.contains("RU"), "\(hint)")
        }
        // E.164 numbers not found, and the same number with its country: the answer as before.
        let plain = try #require(try curl([server.url("/v1/lookup/79131234568")]))
        #expect(plain.status == 404 && plain.body == "{\"number\":79131234568,\"found\":false}\n")
        let withCountry = try #require(try curl([server.url("/v1/lookup/88432771998?country=RU")]))
        #expect(withCountry.status == 404 && !withCountry.body.contains("hint"), "\(withCountry.body)")
        let cnam = try #require(try curl([server.url("/v1/cnam/88432771998")]))
        #expect(cnam.status == 404 && cnam.body.isEmpty)
        let metrics = try #require(try curl([server.url("/metrics")]))
        #expect(metrics.body.contains("callerid_national_number_hints_total 3\n"), "\(metrics.body)")
    }

    @Test func pathsOutsideTheAPIAndOtherMethodsAreRefused() throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        let server = try ServeProcess(["--db", db])
        for path in ["/", "/v1", "/v1/lookup/", "/etc/passwd", "/v1/lookupx/1", "/metrics/x"] {
            let answer = try #require(try curl(["--path-as-is", server.url(path)]))
            #expect(answer.status == 404 || answer.status == 400, "\(path): \(answer.status)")
            #expect(!answer.body.contains("root:"))
        }
        // A path that climbs is a number that cannot be read, never a file.
        let climbing = try #require(try curl(["--path-as-is", server.url("/v1/lookup/../../../etc/passwd")]))
        #expect(climbing.status == 400 && climbing.body.contains("\"found\":false"))
        let post = try #require(try curl(["-X", "POST", "--data", "1", server.url("/v1/cnam/79131234567")]))
        #expect(post.status == 405 && post.headers["allow"] == "GET, HEAD")
        let get = try #require(try curl([server.url("/v1/lookup")]))
        #expect(get.status == 405 && get.headers["allow"] == "POST")
        // Malformed escapes and %00 stay text: a 400, never a lookup of what precedes them.
        for path in ["/v1/lookup/%zz79131234567", "/v1/lookup/79131234567%00", "/v1/lookup/7913%E2%80%AE1234567"] {
            let answer = try #require(try curl([server.url(path)]))
            #expect(answer.status == 400, "\(path): \(answer.status) \(answer.body)")
        }
    }

    @Test func aBatchIsAnsweredAsLookupDashJSONAnswersTheSameLines() throws {
        let dir = TempDir()
        // A build directory of several packs: the batch goes through the packs' bounds.
        var rows = ""
        for i in 0..<60 { rows += "7913\(String(1_000_000 + i * 7919))\tShop \(i)\t\(i % 5 == 0 ? "spam" : "identify")\n" }
        try rows.write(toFile: dir.path("in.tsv"), atomically: true, encoding: .utf8)
        let build = try lookup(["build", "-o", dir.path("set") + "/", dir.path("in.tsv"), "--max-entries", "15"])
        try #require(build.status == 0, "\(build.stderr)")
        let server = try ServeProcess(["--db", dir.path("set"), "--max-body-bytes", "200000"])
        var lines = rows.split(separator: "\n").map { String($0.split(separator: "\t")[0]) }
        lines += ["+7 913 100-00-00", "not a number", "", String(repeating: "9", count: 5000), "79131000000"]
        let body = lines.joined(separator: "\n") + "\n"
        try body.write(toFile: dir.path("body.txt"), atomically: true, encoding: .utf8)
        let expected = try lookup(["-", "--db", dir.path("set"), "--json"], stdin: Data(body.utf8))
        let answer = try #require(try curl(["--data-binary", "@" + dir.path("body.txt"), server.url("/v1/lookup")]))
        #expect(answer.status == 200 && answer.headers["content-type"] == "application/x-ndjson")
        #expect(answer.headers["transfer-encoding"] == "chunked")
        #expect(answer.body == expected.stdout)
        // The same numbers as a JSON array of strings and numbers: the same answers.
        let array = "[" + lines.prefix(60).enumerated().map { $0.offset % 2 == 0 ? "\"\($0.element)\"" : $0.element }.joined(separator: ", ") + "]"
        let fromArray = try #require(try curl(["--data-binary", array, server.url("/v1/lookup")]))
        #expect(fromArray.status == 200)
        #expect(fromArray.body == expected.lines.prefix(60).map { $0 + "\n" }.joined())
        let escaped = try #require(try curl(["--data-binary", "[\"\\u002B7 913 100-00-00\"]", server.url("/v1/lookup")]))
        #expect(escaped.body == expected.lines[60] + "\n")
        // A malformed array is refused before any answer.
        for bad in ["[1,]", "[\"1\"", "[{\"n\":1}]", "[1] x", "[\"\\q\"]"] {
            let refused = try #require(try curl(["--data-binary", bad, server.url("/v1/lookup")]))
            #expect(refused.status == 400 && refused.body.hasPrefix("{\"error\":"), "\(bad): \(refused.status) \(refused.body)")
        }
        // Over the body limit: 413 when declared, and once a chunked body has arrived.
        try String(repeating: "79131000000\n", count: 20_000).write(toFile: dir.path("big.txt"), atomically: true, encoding: .utf8)
        let declared = try #require(try curl(["--data-binary", "@" + dir.path("big.txt"), server.url("/v1/lookup")]))
        #expect(declared.status == 413)
        let chunked = try curl(["-H", "Transfer-Encoding: chunked", "--data-binary", "@" + dir.path("big.txt"), server.url("/v1/lookup")])
        #expect(chunked?.status == 413, "a chunked body over the limit: \(String(describing: chunked))")
        #expect(try #require(try curl([server.url("/healthz")])).status == 200)
    }

    @Test func aBatchRefusesEachJSONNumberThatIsNotDigitsAlone() throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        let server = try ServeProcess(["--db", db])
        // Read as text, the first two would be 79130000001 and the third 15.
        let refused = ["7913000000.1", "-79130000001", "1.5", "7.9131234567e10", "079131234567", "+79131234567"]
        let body = "[" + (refused + ["79131234567"]).joined(separator: ", ") + "]"
        let answer = try #require(try curl(["--data-binary", body, server.url("/v1/lookup")]))
        #expect(answer.status == 200, "\(answer.body)")
        let lines = splitLines(answer.body).map { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        try #require(lines.count == refused.count + 1, "\(answer.body)")
        for (written, line) in zip(refused, lines) {
            #expect(line?["input"] as? String == written && line?["found"] as? Bool == false && line?["error"] is String && line?["number"] == nil,
                    "\(written): \(String(describing: line))")
        }
        #expect(lines.last??["label"] as? String == "Pizza Hut", "\(answer.body)")
    }

    @Test func aStoreSwitchIsFollowedWithoutAFailedOrWrongAnswerAndTheOldSetIsUnmapped() throws {
        let dir = TempDir()
        let store = dir.path("store")
        let numbers: [UInt64] = [79131234567, 79131234568, 79990000000]
        func set(_ k: Int) throws -> String {
            let path = dir.path("set\(k)")
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            let tsv = numbers.map { "\($0)\tset \(k)\n" }.joined()
            try tsv.write(toFile: dir.path("set\(k).tsv"), atomically: true, encoding: .utf8)
            let build = try lookup(["build", "-o", path + "/", dir.path("set\(k).tsv"), "--max-entries", "2"])
            try #require(build.status == 0, "\(build.stderr)")
            return path
        }
        let sets = try (1...6).map(set)
        try #require(try lookup(["install", "--store", store, sets[0]]).status == 0)
        let server = try ServeProcess(["--store", store])
        let paths = numbers.map { "/v1/lookup/\($0)" }
        // Every answer any installed set gives: nothing else may be seen during the switches.
        var allowed: Set<String> = []
        for k in 1...6 {
            for n in numbers { allowed.insert("{\"number\":\(n),\"found\":true,\"label\":\"set \(k)\",\"category\":\"identify\",\"action\":\"identify\",\"match\":\"entry\"}\n") }
        }
        let fdsBefore = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(server.pid)/fd").count
        let stop = dir.path("stop")
        final class Box: @unchecked Sendable { var result: [[String: Any]] = [] }
        let box = Box()
        let load = DispatchGroup()
        let port = server.port
        onThread(in: load) {
            box.result = (try? serveClient(["hammer", "\(port)", "30", "--stop", stop] + paths)) ?? []
        }
        for k in 2...6 {
            usleep(150_000)
            let install = try lookup(["install", "--store", store, sets[k - 1]])
            try #require(install.status == 0, "\(install.stderr)")
        }
        // The server moves to the last set within a second.
        var last = ""
        for _ in 0..<40 {
            last = try #require(try curl([server.url(paths[0])])).body
            if last.contains("\"set 6\"") { break }
            usleep(50_000)
        }
        #expect(last.contains("\"set 6\""), "still answering \(last); stderr: \(server.stderr)")
        _ = FileManager.default.createFile(atPath: stop, contents: nil)
        #expect(load.wait(timeout: .now() + 40) == .success)
        let summary = try #require(box.result.first, "the load client printed nothing")
        #expect(summary["error_count"] as? Int == 0, "\(summary)")
        #expect((summary["statuses"] as? [String: Int])?.keys.sorted() == ["200"], "\(summary)")
        let seen = Set((summary["bodies"] as? [String: Int])?.keys.map { $0 } ?? [])
        #expect(seen.isSubset(of: allowed), "answers of no set: \(seen.subtracting(allowed))")
        #expect((summary["requests"] as? Int ?? 0) > 100, "\(summary)")
        // Only the current generation stays mapped; no descriptor leaked across 5 switches.
        // Before: the set loaded at start stayed mapped for the server's life (held by the
        // start-up code), its files shown " (deleted)" once later installs removed them.
        let current = try #require(try String(contentsOfFile: store + "/CURRENT", encoding: .utf8).split(separator: "\n").first?.split(separator: " ").last)
        let maps = try runTool("cat", ["/proc/\(server.pid)/maps"]).stdout   // (a /proc file says it is empty to a plain read)
        // The path column runs to the end of the line; a file removed since is marked " (deleted)".
        let mapped = Set(maps.split(separator: "\n").compactMap { line in line.firstIndex(of: "/").map { String(line[$0...]) } }
            .filter { $0.contains("/gen-") })
        #expect(!mapped.isEmpty && mapped.allSatisfy { $0.contains("/gen-\(current)/") },
                "mapped: \(mapped.sorted()); \(maps.split(separator: "\n").filter { $0.contains(".cid") })")
        let fdsAfter = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(server.pid)/fd").count
        #expect(fdsAfter <= fdsBefore + 2, "descriptors \(fdsBefore) before, \(fdsAfter) after")
        let metrics = try #require(try curl([server.url("/metrics")])).body
        #expect(metrics.contains("callerid_generation \(current)\n"))
    }

    @Test func aStoreWithAMissingPackIsServedFromTheOtherPacksAndTheMissingOneIsNamed() throws {
        let dir = TempDir()
        let rows = "79131234567\tPizza Hut\tidentify\n79131234568\tTaxi\tidentify\n79990000000\tDebt collector\tspam\n79990000001\tShop\tidentify\n"
        try rows.write(toFile: dir.path("in.tsv"), atomically: true, encoding: .utf8)
        let build = try lookup(["build", "-o", dir.path("set") + "/", dir.path("in.tsv"), "--max-entries", "2"])
        try #require(build.status == 0, "\(build.stderr)")
        let store = dir.path("store")
        try #require(try lookup(["install", "--store", store, dir.path("set")]).status == 0)
        // The pack of 7999…: gone from the current generation (as `lookup feed` and
        // `lookup store list` tolerate).
        let generation = try #require(try FileManager.default.contentsOfDirectory(atPath: store).first { $0.hasPrefix("gen-") })
        let packs = try FileManager.default.contentsOfDirectory(atPath: "\(store)/\(generation)").filter { $0.hasSuffix(".cid") }.sorted()
        try #require(packs.count == 2, "\(packs)")
        try FileManager.default.removeItem(atPath: "\(store)/\(generation)/\(packs[1])")
        let server = try ServeProcess(["--store", store])
        let found = try #require(try curl([server.url("/v1/cnam/79131234567")]))
        #expect(found.status == 200 && found.body == "Pizza Hut")
        // A number the missing pack could hold is never answered "unknown".
        let lost = try #require(try curl([server.url("/v1/lookup/79990000000")]))
        #expect(lost.status == 500 && lost.body.contains(packs[1]), "\(lost.status) \(lost.body)")
        let health = try #require(try curl([server.url("/healthz")]))
        #expect(health.status == 200 && health.body.contains("\"status\":\"degraded\"") && health.body.contains("\"missing\":[\"") && health.body.contains(packs[1]),
                "\(health.body)")
        #expect(server.stderr.contains("\(packs[1]) is missing"), "\(server.stderr)")
        let metrics = try #require(try curl([server.url("/metrics")])).body
        #expect(metrics.contains("callerid_database_files 1\n") && metrics.contains("callerid_database_files_missing 1\n"))
    }

    @Test func sighupOpensTheDatabaseFilesAgain() async throws {
        let dir = TempDir()
        let db = dir.path("city.cid")
        _ = try buildDatabase([Entry(number: 79131234567, label: "Old label", category: .identify)], at: db)
        let server = try ServeProcess(["--db", db])
        #expect(try #require(try curl([server.url("/v1/cnam/79131234567")])).body == "Old label")
        // Replaced by rename, as a build replaces it: the server keeps its open file until SIGHUP.
        _ = try buildDatabase([Entry(number: 79131234567, label: "New label", category: .identify)], at: db)
        #expect(try #require(try curl([server.url("/v1/cnam/79131234567")])).body == "Old label")
        server.send(SIGHUP)
        var body = ""
        for _ in 0..<40 {
            body = try #require(try curl([server.url("/v1/cnam/79131234567")])).body
            if body == "New label" { break }
            usleep(50_000)
        }
        #expect(body == "New label", "stderr: \(server.stderr)")
        #expect(try #require(try curl([server.url("/healthz")])).body.contains("\"reloads\":1"))
        // A SIGHUP that finds no data keeps the data in use.
        try FileManager.default.removeItem(atPath: db)
        server.send(SIGHUP)
        try await Task.sleep(for: .milliseconds(600))
        #expect(try #require(try curl([server.url("/v1/cnam/79131234567")])).body == "New label")
        #expect(server.stderr.contains("still answering from"))
    }

    @Test func theJSONOptionPrintsTheStartLineAndTheEventsAsObjects() async throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        let server = try ServeProcess(["--db", db, "--json"])
        let start = try #require(try JSONSerialization.jsonObject(with: Data(server.startLine.utf8)) as? [String: Any])
        #expect(start["listening"] as? String == "127.0.0.1:\(server.port)" && start["entries"] as? Int == 4 && start["files"] as? Int == 1)
        server.send(SIGHUP)
        try await Task.sleep(for: .milliseconds(500))
        server.send(SIGTERM)
        #expect(server.exitStatus(within: 10) == 0)
        let events = splitLines(server.stderr).compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(events.map { $0["event"] as? String } == ["reload", "stopped"], "\(server.stderr)")
        #expect(events.first?["reason"] as? String == "SIGHUP")
    }

    @Test func sigtermFinishesTheRequestsInFlightAndExitsZero() throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        let server = try ServeProcess(["--db", db])
        // A batch whose body arrives in two halves, SIGTERM in between.
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/serve_client.py").path
        let client = Python.process(script, ["slow-post", "\(server.port)", "/v1/lookup"])
        let input = Pipe(), output = Pipe()
        client.standardInput = input
        client.standardOutput = output
        try client.run()
        input.fileHandleForWriting.write(Data("79131234567\n79990000000\nhalf\n".utf8))
        let sent = output.fileHandleForReading.availableData
        #expect(String(decoding: sent, as: UTF8.self).contains("\"sent\": \"half\""))
        // The batch is in flight once the server has its first line (the /metrics request
        // counts itself too).
        var inFlight = 0
        for _ in 0..<100 where inFlight < 2 {
            let metrics = try curl([server.url("/metrics")])?.body ?? ""
            inFlight = metrics.split(separator: "\n").first { $0.hasPrefix("callerid_http_requests_in_flight ") }
                .flatMap { Int($0.split(separator: " ")[1]) } ?? 0
            if inFlight < 2 { usleep(20_000) }
        }
        #expect(inFlight == 2)
        server.send(SIGTERM)
        usleep(300_000)
        // No new connection is taken while draining.
        let refused = try runTool("curl", ["-s", "--max-time", "2", server.url("/healthz")])
        #expect(refused.status != 0, "a new connection was answered while draining: \(refused.stdout)")
        #expect(server.process.isRunning)
        input.fileHandleForWriting.write(Data("79131234568\n74951234567\n".utf8))
        try input.fileHandleForWriting.close()
        let result = output.fileHandleForReading.readDataToEndOfFile()
        client.waitUntilExit()
        let answer = try #require(try JSONSerialization.jsonObject(with: result) as? [String: Any])
        #expect((answer["status_line"] as? String)?.hasPrefix("HTTP/1.1 200") == true, "\(answer)")
        #expect((answer["headers"] as? String)?.lowercased().contains("connection: close") == true)
        let lines = answer["lines"] as? [String] ?? []
        #expect(lines.count == 4 && lines[3].contains("\"number\":74951234567"), "\(lines)")
        #expect(server.exitStatus(within: 10) == 0, "stderr: \(server.stderr)")
    }

    @Test func slowIdleOversizedAndMalformedClientsDoNotStopTheOthers() async throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        let server = try ServeProcess(["--db", db, "--request-timeout", "1", "--max-header-bytes", "2048"])
        let port = "\(server.port)"
        // 300 idle connections and a slowloris, while a well-behaved client is answered.
        final class Box: @unchecked Sendable { var idle: [[String: Any]] = []; var slow: [[String: Any]] = [] }
        let box = Box()
        let group = DispatchGroup()
        onThread(in: group) { box.idle = (try? serveClient(["idle", port, "300", "2.5"])) ?? [] }
        onThread(in: group) { box.slow = (try? serveClient(["slow", port, "6"])) ?? [] }
        try await Task.sleep(for: .milliseconds(300))
        let good = try serveClient(["get", port, "/v1/lookup/79131234567", "/v1/cnam/79131234567"])
        #expect(good.map { $0["status"] as? Int } == [200, 200])
        // The slow client runs for seconds: awaited without holding the test's thread.
        #expect(try await offThread { group.wait(timeout: .now() + 30) } == .success)
        #expect(box.idle.last?["closed_by_server"] as? Int == 300, "\(box.idle)")
        let closedAfter = box.slow.first?["closed_after"] as? Double
        #expect(closedAfter != nil && closedAfter! < 3.5, "slowloris: \(box.slow)")
        // Headers over the limit, a malformed request line, a bare line end.
        let big = "GET /v1/lookup/79131234567 HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 4000))\r\n\r\n"
        let oversized = try serveClient(["raw", port, Data(big.utf8).map { String(format: "%02x", $0) }.joined()])
        #expect((oversized.first?["status_line"] as? String)?.contains(" 431 ") == true, "\(oversized)")
        for garbage in ["GARBAGE\r\n\r\n", "GET /v1/lookup/1 HTTP/9.9\r\n\r\n", "GET /v1/lookup/1\u{0} HTTP/1.1\r\nHost: x\r\n\r\n"] {
            let answer = try serveClient(["raw", port, Data(garbage.utf8).map { String(format: "%02x", $0) }.joined()])
            let status = answer.first?["status_line"] as? String ?? ""
            #expect(status.isEmpty || status.contains(" 400 ") || status.contains(" 505 "), "\(garbage.debugDescription): \(status)")
        }
        let after = try serveClient(["get", port, "/v1/lookup/79131234567"])
        #expect(after.first?["status"] as? Int == 200)
        let metrics = try #require(try curl([server.url("/metrics")])).body
        let timedOut = metrics.split(separator: "\n").first { $0.hasPrefix("callerid_http_connections_timed_out_total ") }
        #expect((timedOut.flatMap { Int($0.split(separator: " ")[1]) } ?? 0) >= 301, "\(timedOut ?? "none")")
    }

    @Test func manyQueryArgumentsAndHeaderLinesAreAnsweredWithinTheDocumentedLimits() throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        let server = try ServeProcess(["--db", db])
        // 200 query arguments (2 KB) before the country (its name's case ignored, as it always
        // was): read as the country it names.
        let arguments = (0..<200).map { "a\($0)=1" }.joined(separator: "&")
        let manyArguments = "GET /v1/cnam/8%20913%20123-45-67?\(arguments)&Country=R%55 HTTP/1.1\r\nHost: x\r\n\r\n"
        let named = try rawHTTP(server.port, Data(manyArguments.utf8))
        #expect(named["status_line"] as? String == "HTTP/1.1 200 OK" && named["body"] as? String == "Pizza Hut", "\(named)")
        // 150 short headers, 4.4 KB in all: under the 8 KiB and the 256 lines.
        let headers = (0..<150).map { String(format: "X-H%03d: abcdefghijklmnopqrstu\r\n", $0) }.joined()
        let manyHeaders = try rawHTTP(server.port, Data("GET /v1/lookup/79131234567 HTTP/1.1\r\nHost: x\r\n\(headers)\r\n".utf8))
        #expect(manyHeaders["status_line"] as? String == "HTTP/1.1 200 OK", "\(manyHeaders)")
        // Over 256 header lines: 431, from the route (empty on the caller-name endpoint).
        let lines = String(repeating: "a:\r\n", count: 300)
        let tooMany = try rawHTTP(server.port, Data("GET /v1/cnam/79131234567 HTTP/1.1\r\nHost: x\r\n\(lines)\r\n".utf8))
        #expect((tooMany["status_line"] as? String)?.contains(" 431 ") == true && tooMany["body"] as? String == "", "\(tooMany)")
    }

    @Test func bodiesOfUnknownCodingOrOverTheLimitAreAnsweredAndTheirConnectionsClosed() throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        let server = try ServeProcess(["--db", db, "--max-body-bytes", "1000"])
        for (coding, status) in [("gzip, chunked", 501), ("chunked, gzip", 400), ("gzip", 400)] {
            let request = "POST /v1/lookup HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: \(coding)\r\n\r\n0\r\n\r\n"
            let answer = try streamHTTP(server.port, Data(request.utf8))
            #expect(answer.statusLines == ["HTTP/1.1 \(status) \(status == 501 ? "Not Implemented" : "Bad Request")"] && answer.closed, "\(coding): \(answer.text)")
        }
        // A chunked body that passes --max-body-bytes: read to its end, then refused with 413.
        let piece = String(repeating: "79131234567\n", count: 50)
        let chunks = String(repeating: String(piece.utf8.count, radix: 16) + "\r\n" + piece + "\r\n", count: 4) + "0\r\n\r\n"
        let over = try streamHTTP(server.port, Data(("POST /v1/lookup HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks).utf8))
        #expect(over.statusLines == ["HTTP/1.1 413 Content Too Large"] && over.closed, "\(over.text)")
        #expect(over.text.contains("{\"error\":\"the body is over 1000 bytes"), "\(over.text)")
        let metrics = try #require(try curl([server.url("/metrics")])).body
        #expect(metrics.contains("callerid_http_requests_total{endpoint=\"batch\",code=\"413\"} 1\n"), "\(metrics)")
    }

    @Test func everyRequestLeavesTheInFlightGaugeAndADrainDoesNotWaitForIt() throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        let server = try ServeProcess(["--db", db, "--drain-timeout", "8"])
        // Hostile requests whose clients go away before any answer; the last one overflows
        // libmicrohttpd's own memory (its query arguments after a NUL), which never tells that
        // request's end.
        let arguments = Array(repeating: "a", count: 2000).joined(separator: "&")
        let requests = [
            "GET /v1/cnam/79131234567?\(arguments) HTTP/1.1\r\nHost: x\r\n\r\n",
            "POST /v1/lookup HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
            "GET /v1/cnam/1\u{0}?\(arguments) HTTP/1.1\r\nHost: x\r\n\r\n",
        ]
        for request in requests { _ = try streamHTTP(server.port, Data(request.utf8), seconds: 0.3) }
        func inFlight() throws -> Int? {
            let metrics = try curl([server.url("/metrics")])?.body ?? ""
            return metrics.split(separator: "\n").first { $0.hasPrefix("callerid_http_requests_in_flight ") }.flatMap { Int($0.split(separator: " ")[1]) }
        }
        var gauge = try inFlight()
        for _ in 0..<20 where gauge != 1 {
            usleep(100_000)
            gauge = try inFlight()
        }
        #expect(gauge == 1, "in flight besides the /metrics request itself: \(String(describing: gauge))")
        let stop = Date()
        server.send(SIGTERM)
        #expect(server.exitStatus(within: 6) == 0)
        #expect(Date().timeIntervalSince(stop) < 3, "the drain waited for requests that had ended; stderr: \(server.stderr)")
    }

    /// A port already taken is refused with the address and the system's reason, exit 69.
    @Test func aTakenPortIsRefusedWithTheReason() throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        let first = try ServeProcess(["--db", db])
        let second = try lookup(["serve", "--db", db, "--listen", "127.0.0.1:\(first.port)"], timeout: 20)
        #expect(second.status == 69, "\(second.stderr)")
        #expect(second.stderr.contains("cannot listen on 127.0.0.1:\(first.port): Address already in use"), "\(second.stderr)")
    }

    @Test func theAccessLogHidesNumbersUnlessAsked() throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        for (showNumbers, log) in [(false, dir.path("hidden.log")), (true, dir.path("shown.log"))] {
            let server = try ServeProcess(["--db", db, "--access-log", log] + (showNumbers ? ["--log-numbers"] : []))
            _ = try curl([server.url("/v1/lookup/79131234567?country=RU")])
            _ = try curl([server.url("/v1/cnam/79131234567")])
            server.send(SIGTERM)
            #expect(server.exitStatus(within: 10) == 0)
            let text = try String(contentsOfFile: log, encoding: .utf8)
            let lines = splitLines(text)
            #expect(lines.count == 2, "\(text)")
            #expect(text.contains("9131234567") == showNumbers, "\(text)")
            if !showNumbers {
                #expect(lines[0].contains(" 127.0.0.1 GET /v1/lookup/*?country=RU 200 "), "\(text)")
                #expect(lines[1].contains(" GET /v1/cnam/* 200 9 "), "\(text)")
            }
        }
    }

    /// The log masked every digit outside an API number, the `1` of `/v1/` included: a batch
    /// was logged `POST /v#/lookup`. Only what can be a phone number is hidden now.
    @Test func theAccessLogHidesPhoneNumbersAndKeepsTheAPIVersion() throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        let log = dir.path("access.log")
        let server = try ServeProcess(["--db", db, "--access-log", log])
        _ = try curl(["-X", "POST", "--data-binary", "79131234567\n", server.url("/v1/lookup")])
        _ = try curl(["-X", "POST", "--data-binary", "79131234567\n", server.url("/v1/lookup?country=RU&ref=79131234567")])
        _ = try curl([server.url("/v1/cnam/79131234567")])
        _ = try curl([server.url("/v1/lookup/%2B7%20913%20123-45-67?country=RU&page=2")])
        _ = try curl([server.url("/v2/lookup/7-913-123-45-67")])
        _ = try curl([server.url("/healthz")])
        server.send(SIGTERM)
        #expect(server.exitStatus(within: 10) == 0)
        let text = try String(contentsOfFile: log, encoding: .utf8)
        let targets = splitLines(text).map { $0.split(separator: " ").dropFirst(2).prefix(2).joined(separator: " ") }
        #expect(targets == [
            "POST /v1/lookup",
            "POST /v1/lookup?country=RU&ref=###########",
            "GET /v1/cnam/*",
            "GET /v1/lookup/*?country=RU&page=2",
            "GET /v2/lookup/#-###-###-##-##",
            "GET /healthz",
        ], "\(text)")
        #expect(!text.contains("913"), "\(text)")
    }

    @Test(arguments: [
        ("/v1/lookup", "/v1/lookup"),
        ("/v1/lookup/", "/v1/lookup/"),
        ("/v1/lookup/79131234567", "/v1/lookup/*"),
        ("/v1/cnam/79131234567?country=RU", "/v1/cnam/*?country=RU"),
        ("/v1/lookup?x=%2B7%20(913)%20123-45-67", "/v1/lookup?x=%2B#%20(###)%20###-##-##"),
        ("/v1/lookup?x=%37%39%31%33%31", "/v1/lookup?x=#####"),
        ("/v12/x?page=123", "/v12/x?page=123"),
        ("/x/2026", "/x/####"),
    ])
    func theAccessLogHidesOnlyWhatCanBeAPhoneNumber(_ target: String, _ logged: String) {
        #expect(AccessLog.hidingNumbers(target) == logged)
    }

    @Test func aPortAloneListensOnLoopbackOnly() throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        // ServeProcess reads the port from "listening on 127.0.0.1:PORT": it throws for any other host.
        let server = try ServeProcess(["--db", db, "--listen", ":0"])
        #expect(server.startLine == "listening on 127.0.0.1:\(server.port)")
        // The kernel's own list: the listening socket is bound to 127.0.0.1 (0100007F), and no
        // socket listens on the port at another address.
        let port = String(format: "%04X", server.port)
        var local: [String] = []
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            for line in try String(contentsOfFile: table, encoding: .utf8).split(separator: "\n") {
                let fields = line.split(separator: " ")
                if fields.count > 3, fields[3] == "0A", fields[1].hasSuffix(":" + port) { local.append(String(fields[1])) }
            }
        }
        #expect(local == ["0100007F:" + port], "\(local)")
        #expect(try #require(try curl([server.url("/healthz")])).status == 200)
    }

    @Test func badArgumentsAndMissingDataAreRefusedWithTheirExitCodes() throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        #expect(try lookup(["serve"]).status == 64)
        #expect(try lookup(["serve", "--db", db, "--store", dir.path("store")]).status == 64)
        #expect(try lookup(["serve", "--store", db]).status == 64)
        #expect(try lookup(["serve", "--db", db, "--listen", "8080"]).status == 64)
        #expect(try lookup(["serve", "--db", db, "--listen", "::1:8080"]).status == 64)
        #expect(try lookup(["serve", "--db", db, "--request-timeout", "0"]).status == 64)
        #expect(try lookup(["serve", "--db", dir.path("missing.cid")]).status == 66)
        try Data("not a database".utf8).write(to: URL(fileURLWithPath: dir.path("bad.cid")))
        #expect(try lookup(["serve", "--db", dir.path("bad.cid")]).status == 65)
        // The address in use.
        let first = try ServeProcess(["--db", db])
        let second = try lookup(["serve", "--db", db, "--listen", "127.0.0.1:\(first.port)"])
        #expect(second.status == 69 && second.stderr.contains("in use"), "\(second.stderr)")
    }
}

/// Labels that would break a SIP header as they are: quotes, backslashes, angle brackets, line
/// breaks, control and hidden characters (the last ones only in a file that fails verify).
let sipHostileLabels = ["x\" <sip:666@evil.example>;tag=1", "Say \"hi\" \\ Сбербанк", "a\\\"b", "x\\", "<sip:1@evil.example>",
                        "Pizza\r\nVia: SIP/2.0/UDP evil.example", "tab\there", "\u{85}x\u{1B}[2J", "Pay\u{202E}dsu\u{202C} Bank",
                        "\"", "Fine"]

/// A file holding ``sipHostileLabels`` as numbers 1, 2, … (written without the label rule).
func sipHostileDatabase(_ dir: TempDir) throws -> String {
    let path = dir.path("hostile.cid")
    try Data(try HostileFileTests.imageWithLabels(sipHostileLabels.map { Array($0.utf8) }, hot: false)).write(to: URL(fileURLWithPath: path))
    return path
}

/// Kamailio's binary, when it is installed.
let kamailioPath = ["/usr/sbin/kamailio", "/usr/local/sbin/kamailio"].first { FileManager.default.isExecutableFile(atPath: $0) }

/// A SIP From header line read by RFC 3261's grammar (§25.1):
/// `"From:" SWS name-addr *(SEMI from-param)`, `name-addr = quoted-string LAQUOT addr-spec RAQUOT`,
/// `quoted-string = SWS DQUOTE *(qdtext / quoted-pair) DQUOTE`, `qdtext = LWS / %x21 / %x23-5B /
/// %x5D-7E / UTF8-NONASCII`, `quoted-pair = "\\" (%x00-09 / %x0B-0C / %x0E-7F)`. The display name
/// with its quoted-pairs unescaped, the URI between the angle brackets, the parameters; nil when
/// the line is not one such header (a line break in it, an unterminated quoted-string …).
func parseSIPFromHeader(_ line: String) -> (displayName: String, uri: String, parameters: [String])? {
    let b = Array(line.utf8)
    guard !b.contains(0x0D), !b.contains(0x0A), b.starts(with: Array("From:".utf8)) else { return nil }
    var i = 5
    func skipWhiteSpace() { while i < b.count, b[i] == 0x20 || b[i] == 0x09 { i += 1 } }
    skipWhiteSpace()
    guard i < b.count, b[i] == 0x22 else { return nil }
    i += 1
    var name: [UInt8] = []
    while true {
        guard i < b.count else { return nil }   // no closing quote
        let c = b[i]
        if c == 0x22 { i += 1; break }
        if c == 0x5C {
            guard i + 1 < b.count, b[i + 1] <= 0x7F, b[i + 1] != 0x0A, b[i + 1] != 0x0D else { return nil }
            name.append(b[i + 1])
            i += 2
            continue
        }
        guard c == 0x20 || c == 0x09 || c == 0x21 || (0x23...0x5B).contains(c) || (0x5D...0x7E).contains(c) || c >= 0x80 else { return nil }
        name.append(c)
        i += 1
    }
    skipWhiteSpace()
    guard i < b.count, b[i] == 0x3C, let close = b[i...].firstIndex(of: 0x3E) else { return nil }
    let uri = b[(i + 1)..<close]
    guard !uri.contains(0x3C), !uri.contains(0x22), !uri.contains(0x20) else { return nil }
    i = close + 1
    skipWhiteSpace()
    var parameters: [String] = []
    while i < b.count {
        guard b[i] == 0x3B else { return nil }
        i += 1
        skipWhiteSpace()
        let end = b[i...].firstIndex(of: 0x3B) ?? b.count
        let parameter = b[i..<end]
        guard !parameter.isEmpty, !parameter.contains(where: { $0 == 0x22 || $0 == 0x3C || $0 == 0x3E || $0 <= 0x20 }) else { return nil }
        parameters.append(String(decoding: parameter, as: UTF8.self))
        i = end
    }
    guard let displayName = String(validating: name, as: UTF8.self) else { return nil }   // UTF8-NONASCII is valid UTF-8
    return (displayName, String(decoding: uri, as: UTF8.self), parameters)
}
