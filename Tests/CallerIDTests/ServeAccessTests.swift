import Foundation
import Testing
@testable import CallerID
import CallerIDDirectory
import CallerIDQuery
import CallerIDServe

// `lookup serve` on the open network: API keys kept as hashes, 401/403 by key and permission,
// token buckets per key and per client address in fixed memory (429 with Retry-After), the
// refusal to listen openly without keys, and the OpenCNAM-shaped caller-name API. The rules
// in-process first, then a real server on 127.0.0.1 asked with curl.

/// A request as the HTTP layer hands it over, for the access rules.
private func request(_ path: String = "/v1/lookup/1", query: String? = nil, authorization: String? = nil,
                     forwardedFor: String? = nil, client: String = "127.0.0.1") -> IncomingRequest {
    IncomingRequest(method: .get, path: path, country: nil, contentType: nil, contentLength: nil,
                    query: query, authorization: authorization, forwardedFor: forwardedFor, client: client)
}

/// A clock the test moves.
private final class TestClock: Sendable {
    private let nanoseconds = Locked<UInt64>(1_000_000_000)
    var now: UInt64 { nanoseconds.current }
    func advance(seconds: Double) { nanoseconds.withLock { $0 += UInt64(seconds * 1e9) } }
}

struct ServeAccessRuleTests {
    @Test func aKeysFileIsReadAndEachBadLineNamedWithItsNumber() throws {
        let hash = String(repeating: "ab", count: 32)
        let keys = try APIKeys.parse("""
            # keys of the office
            pbx-1  sha256:\(hash)  lookup
            app\tsha256:\(String(repeating: "cd", count: 32))\tlookup,report,metrics rate=10/s burst=20   # the backend

            """, path: "keys")
        #expect(keys.keys.map(\.name) == ["pbx-1", "app"])
        #expect(keys.keys[0].may == .lookup && keys.keys[0].rate == nil)
        #expect(keys.keys[1].may == [.lookup, .report, .metrics] && keys.keys[1].rate == RateLimit(perSecond: 10, burst: 20))
        let bad: [(String, String)] = [
            ("a sha256:\(hash)", "keys:1: a key line is"),
            ("a sha256:ABC lookup", "64 lowercase hex"),
            ("a sha256:\(hash) lookup,drop", "permissions 'lookup,drop'"),
            ("a sha256:\(hash) lookup rate=fast", "rate= takes"),
            ("a sha256:\(hash) lookup burst=5", "burst= needs rate="),
            ("a sha256:\(hash) lookup colour=red", "unknown field"),
            ("a\"b sha256:\(hash) lookup", "letters, digits"),
            ("a sha256:\(hash) lookup\na sha256:\(String(repeating: "ef", count: 32)) lookup", "keys:2: key name 'a' is used twice"),
            ("a sha256:\(hash) lookup\nb sha256:\(hash) lookup", "keys:2: the same key is listed twice"),
        ]
        for (text, message) in bad {
            #expect(throws: QueryError.self, "\(text)") { try APIKeys.parse(text, path: "keys") }
            do { _ = try APIKeys.parse(text, path: "keys") } catch { #expect(error.message.contains(message), "\(error.message)") }
        }
    }

    @Test func aNewKeyIsLetInByItsHashAloneAndOnlyForWhatItMay() throws {
        let made = try APIKeys.newKey(name: "pbx", may: .lookup)
        #expect(made.secret.hasPrefix("cid_") && made.secret.count == 47)
        #expect(!made.line.contains(made.secret) && made.line.hasPrefix("pbx sha256:") && made.line.hasSuffix(" lookup"))
        let other = try APIKeys.newKey(name: "scraper", may: .metrics)
        #expect(other.secret != made.secret)
        let keys = try APIKeys.parse(made.line + "\n" + other.line, path: "keys")
        var settings = AccessSettings()
        settings.keys = keys
        let access = AccessControl(settings)
        #expect(access.admit(request(authorization: "Bearer \(made.secret)"), needs: .lookup) == .success(keys.keys[0]))
        #expect(access.admit(request(authorization: "bearer  \(made.secret)"), needs: .lookup) == .success(keys.keys[0]))
        #expect(access.admit(request(query: "api_key=\(made.secret)"), needs: .lookup) == .success(keys.keys[0]))
        #expect(access.admit(request(query: "format=pbx&auth_token=\(made.secret)"), needs: .lookup) == .success(keys.keys[0]))
        guard case .failure(.unauthorized) = access.admit(request(), needs: .lookup) else { Issue.record("no key"); return }
        guard case .failure(.unauthorized) = access.admit(request(authorization: "Bearer \(made.secret)x"), needs: .lookup) else { Issue.record("wrong key"); return }
        guard case .failure(.unauthorized) = access.admit(request(authorization: "Basic \(made.secret)"), needs: .lookup) else { Issue.record("basic"); return }
        guard case .failure(.forbidden(let why)) = access.admit(request(authorization: "Bearer \(other.secret)"), needs: .lookup) else {
            Issue.record("metrics key on lookup"); return
        }
        #expect(why.contains("scraper") && !why.contains(other.secret))
        // What is open to all needs no key.
        #expect(access.admit(request(), needs: nil) == .success(nil))
    }

    @Test func aBucketLetsItsBurstThroughThenOneRequestPerTokenWithTheWaitToldAhead() {
        let clock = TestClock()
        let limiter = RateLimiter(RateLimit(perSecond: 2, burst: 3)) { clock.now }
        #expect((0..<3).allSatisfy { _ in limiter.take(42) == nil })
        let wait = limiter.take(42)
        #expect(wait != nil && abs(wait! - 0.5) < 1e-9)
        #expect(limiter.take(7) == nil)   // another client has its own bucket
        clock.advance(seconds: 0.5)
        #expect(limiter.take(42) == nil)
        #expect(limiter.take(42) != nil)
        clock.advance(seconds: 60)
        #expect((0..<3).allSatisfy { _ in limiter.take(42) == nil } && limiter.take(42) != nil)   // refilled to the burst, no more
    }

    /// A flood of a million client addresses leaves the table as it was made (its slots full,
    /// none added), and a client that keeps asking is still held to its rate while it goes on.
    @Test func aMillionClientAddressesDoNotGrowTheLimitersMemory() {
        let clock = TestClock()
        let limiter = RateLimiter(RateLimit(perSecond: 1, burst: 1)) { clock.now }
        #expect(limiter.capacity == 65_536)
        let bytes = limiter.tableBytes
        #expect(bytes == 65_536 * 24 && limiter.remembered == 0)
        var refused = 0, twice = 0
        var rng = SeededGenerator(seed: 46)
        for i in 0..<1_000_000 {
            if limiter.take(UInt64.random(in: 0...UInt64.max, using: &rng)) != nil { refused += 1 }
            if i % 1000 == 0 {
                clock.advance(seconds: 0.001)
                _ = limiter.take(1)   // the steady client, asking far faster than one a second
                if limiter.take(1) == nil { twice += 1 }
            }
        }
        #expect(refused == 0, "a new address starts with a full bucket")
        #expect(twice == 0, "the steady client got two in a row")
        #expect(limiter.tableBytes == bytes && limiter.remembered == limiter.capacity)
    }

    @Test func aProxysForwardedAddressCountsOnlyWhenTrusted() {
        var settings = AccessSettings()
        settings.rate = RateLimit(perSecond: 1, burst: 1)
        for trusted in [false, true] {
            settings.trustProxy = trusted
            let access = AccessControl(settings)
            #expect(access.client(of: request(forwardedFor: "203.0.113.9, 198.51.100.7", client: "10.0.0.1")) == (trusted ? "198.51.100.7" : "10.0.0.1"))
            #expect(access.admit(request(forwardedFor: "198.51.100.1", client: "10.0.0.1"), needs: .lookup) == .success(nil))
            let second = access.admit(request(forwardedFor: "198.51.100.2", client: "10.0.0.1"), needs: .lookup)
            if trusted {
                #expect(second == .success(nil))
            } else {
                guard case .failure(.limited(let seconds, false)) = second else { Issue.record("\(second)"); continue }
                #expect(seconds == 1)
            }
        }
    }

    @Test func queryArgumentsAreDecodedAsLibmicrohttpdDecodesCountry() {
        let r = request(query: "FORMAT=pbx&api_key=a%2Bb%3D&empty&name=Ivan+Petrov&x=%ZZ&charset=%D0%A4&bad=%FF")
        #expect(r.argument("format") == "pbx" && r.argument("api_key") == "a+b=" && r.argument("empty") == "")
        #expect(r.argument("name") == "Ivan Petrov" && r.argument("x") == "%ZZ" && r.argument("charset") == "Ф")
        #expect(r.argument("bad") == nil && r.argument("missing") == nil && request().argument("format") == nil)
    }

    @Test func asciiCallerNamesAreTransliteratedAndStaySIPSafe() {
        var rule = CallerNameRule()
        rule.ascii = true
        rule.maxCharacters = 40
        func name(_ label: String, blocks: Bool = false) -> String {
            var bytes = Array(label.utf8)
            return bytes.withUnsafeMutableBytes { rule.name(label: UnsafeRawBufferPointer($0), blocks: blocks) }
        }
        #expect(name("Сбербанк") == "Sberbank")
        #expect(name("Коллекторы «Долг»", blocks: true) == "SPAM? Kollektory <<Dolg>>".replacingOccurrences(of: "<<", with: "((").replacingOccurrences(of: ">>", with: "))"))
        #expect(name("Müller & Söhne") == "Muller & Sohne")
        #expect(name("Pizza \"Hut\"") == "Pizza 'Hut'")
        let symbol = name("☎ Call")
        #expect(symbol.unicodeScalars.allSatisfy { $0.isASCII }, "\(symbol)")
        rule.maxCharacters = 15
        #expect(name("Сбербанк Онлайн Поддержка") == "Sberbank Onlajn")
    }

    @Test func theAccessLogNeverHoldsAKeySentInTheURL() {
        #expect(AccessLog.hidingKeys("/v3/phone/+1650?format=pbx&auth_token=s3cret&x=1") == "/v3/phone/+1650?format=pbx&auth_token=***&x=1")
        #expect(AccessLog.hidingKeys("/v1/cnam/1?API_KEY=abc") == "/v1/cnam/1?API_KEY=***")
        #expect(AccessLog.hidingKeys("/v1/cnam/1?api%5Fkey=abc") == "/v1/cnam/1?api%5Fkey=***")
        #expect(AccessLog.hidingKeys("/healthz") == "/healthz")
    }
}

struct ServeAccessTests {
    @Test func keysLetInWhatTheyMayAndTheLogNamesTheKeyNeverTheSecret() throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        let keys = dir.path("keys")
        func addKey(_ name: String, _ may: String) throws -> String {
            let run = try lookup(["serve", "--keys", keys, "--add-key", name, "--may", may])
            #expect(run.status == 0 && run.stderr.contains("added key \(name)"), "\(run.stderr)")
            return run.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let pbx = try addKey("pbx", "lookup")
        let scraper = try addKey("scraper", "metrics")
        #expect(try lookup(["serve", "--keys", keys, "--add-key", "pbx", "--may", "lookup"]).status == 64)   // a name once
        let file = try String(contentsOfFile: keys, encoding: .utf8)
        #expect(!file.contains(pbx) && !file.contains(scraper) && splitLines(file).count == 2)

        let log = dir.path("access.log")
        let server = try ServeProcess(["--db", db, "--keys", keys, "--access-log", log])
        let none = try #require(try curl([server.url("/v1/lookup/79131234567")]))
        #expect(none.status == 401 && none.headers["www-authenticate"]?.hasPrefix("Bearer") == true && none.body.contains("\"error\""))
        #expect(try #require(try curl(["-H", "Authorization: Bearer nope", server.url("/v1/lookup/79131234567")])).status == 401)
        let forbidden = try #require(try curl(["-H", "Authorization: Bearer \(scraper)", server.url("/v1/lookup/79131234567")]))
        #expect(forbidden.status == 403 && forbidden.body.contains("may not use lookup"))
        let bearer = try #require(try curl(["-H", "Authorization: Bearer \(pbx)", server.url("/v1/lookup/79131234567")]))
        #expect(bearer.status == 200 && bearer.body.contains("Pizza Hut"))
        #expect(try #require(try curl([server.url("/v1/cnam/79131234567?api_key=\(pbx)")])).body == "Pizza Hut")
        let quiet = try #require(try curl([server.url("/v1/cnam/79131234567")]))
        #expect(quiet.status == 401 && quiet.body.isEmpty)   // a caller-name body is always a name
        #expect(try #require(try curl([server.url("/metrics?api_key=\(scraper)")])).status == 200)
        #expect(try #require(try curl([server.url("/metrics?api_key=\(pbx)")])).status == 403)
        #expect(try #require(try curl([server.url("/healthz")])).status == 200)
        server.send(SIGTERM)
        #expect(server.exitStatus(within: 10) == 0)
        let logged = try String(contentsOfFile: log, encoding: .utf8)
        #expect(!logged.contains(pbx) && !logged.contains(scraper), "\(logged)")
        #expect(logged.contains("api_key=*** 200") && logged.contains(" key=pbx\n") && logged.contains(" key=scraper\n"), "\(logged)")
    }

    /// SIGHUP reads the keys file again: a key added is let in, a key removed (it leaked) gets
    /// 401, and a file that cannot be used leaves the keys in force.
    @Test func sighupAddsAndRevokesKeys() async throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        let keys = dir.path("keys")
        func addKey(_ name: String) throws -> String {
            try lookup(["serve", "--keys", keys, "--add-key", name, "--may", "lookup"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let leaked = try addKey("leaked")
        let server = try ServeProcess(["--db", db, "--keys", keys])
        func status(_ key: String) throws -> Int {
            try #require(try curl(["-H", "Authorization: Bearer \(key)", server.url("/v1/lookup/79131234567")])).status
        }
        #expect(try status(leaked) == 200)
        let fresh = try addKey("fresh")
        #expect(try status(fresh) == 401)   // not read yet
        let lines = try String(contentsOfFile: keys, encoding: .utf8).split(separator: "\n").filter { !$0.hasPrefix("leaked ") }
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: keys))
        server.send(SIGHUP)
        for _ in 0..<100 where !server.stderr.contains("read again") { try await Task.sleep(nanoseconds: 20_000_000) }
        #expect(try status(fresh) == 200, "\(server.stderr)")
        #expect(try status(leaked) == 401)
        try Data("fresh sha256:nothex lookup\n".utf8).write(to: URL(fileURLWithPath: keys))
        server.send(SIGHUP)
        for _ in 0..<100 where !server.stderr.contains("not read again") { try await Task.sleep(nanoseconds: 20_000_000) }
        #expect(server.stderr.contains("keys in force are kept"), "\(server.stderr)")
        #expect(try status(fresh) == 200)
    }

    @Test func pastItsRateAClientIsAnswered429WithRetryAfterAndCounted() throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        let server = try ServeProcess(["--db", db, "--rate", "1/min", "--burst", "2", "--trust-proxy"])
        func ask(_ from: String) throws -> HTTPAnswer {
            try #require(try curl(["-H", "X-Forwarded-For: \(from)", server.url("/v1/lookup/79131234567")]))
        }
        #expect(try ask("198.51.100.1").status == 200)
        #expect(try ask("198.51.100.1").status == 200)
        let refused = try ask("198.51.100.1")
        #expect(refused.status == 429 && Int(refused.headers["retry-after"] ?? "") ?? 0 >= 50, "\(refused.headers)")
        #expect(refused.body.contains("from this address"))
        #expect(try ask("198.51.100.2").status == 200)   // another client
        #expect(try #require(try curl([server.url("/healthz")])).status == 200)   // health checks are never limited
        let metrics = try #require(try curl([server.url("/metrics")])).body
        #expect(metrics.contains("callerid_rate_limited_total{by=\"client\"} 1"), "\(metrics)")
        #expect(metrics.contains("callerid_http_requests_total{endpoint=\"lookup\",code=\"429\"} 1"), "\(metrics)")
    }

    @Test func aNonLoopbackAddressNeedsKeysOrOpen() throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        let refused = try lookup(["serve", "--db", db, "--listen", "0.0.0.0:0"])
        #expect(refused.status == 64 && refused.stderr.contains("--open"), "\(refused.stderr)")
        #expect(try lookup(["serve", "--db", db, "--listen", "[::]:0"]).status == 64)
        let open = try ServeProcess(["--db", db, "--listen", "0.0.0.0:0", "--open", "--json"])
        #expect(open.startLine.contains("\"listening\":\"0.0.0.0:"))
        #expect(try #require(try curl([open.url("/healthz")])).status == 200)
        #expect(try lookup(["serve", "--db", db, "--rate", "fast"]).status == 64)
        #expect(try lookup(["serve", "--db", db, "--burst", "3"]).status == 64)
        #expect(try lookup(["serve", "--db", db, "--add-key", "x", "--may", "lookup"]).status == 64)
        #expect(try lookup(["serve", "--db", db, "--keys", dir.path("keys"), "--add-key", "x", "--may", "drop"]).status == 64)
    }

    /// OpenCNAM's answer as its clients document it (the passport client's example, its `v2`
    /// path): what a PBX module made for it reads. Ours holds the same fields with the same
    /// types, but the two dates it has no source for.
    @Test func theOpenCNAMShapedAnswerMatchesOpenCNAMsOwn() throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        let server = try ServeProcess(["--db", db])
        let recorded = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/opencnam-response.json"))) as? [String: Any])
        let answer = try #require(try curl([server.url("/v3/phone/+79131234567")]))
        #expect(answer.status == 200 && answer.headers["content-type"] == "application/json")
        let ours = try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])
        #expect(Set(ours.keys) == Set(recorded.keys).subtracting(["created", "updated"]))
        for (key, value) in ours { #expect(type(of: value) == type(of: recorded[key]!), "\(key)") }
        #expect(ours["name"] as? String == "Pizza Hut" && ours["number"] as? String == "+79131234567")
        #expect(ours["uri"] as? String == "/v3/phone/+79131234567" && ours["price"] as? Int == 0)

        for format in ["text", "pbx", "PBX"] {
            let text = try #require(try curl([server.url("/v3/phone/79990000000?format=\(format)")]))
            #expect(text.status == 200 && text.body == "SPAM? Debt coll" && text.headers["content-type"] == "text/plain; charset=utf-8")
        }
        let ascii = try #require(try curl([server.url("/v3/phone/74951234567?format=text&charset=ascii")]))
        #expect(ascii.body == "Say 'hi' / Sber", "\(ascii.body)")
        #expect(try #require(try curl([server.url("/v1/cnam/74951234567?charset=ascii")])).body == "Say 'hi' / Sber")
        let missing = try #require(try curl([server.url("/v3/phone/79131234568")]))
        #expect(missing.status == 404 && missing.body.contains("\"error\""))
        let missingText = try #require(try curl([server.url("/v3/phone/79131234568?format=pbx")]))
        #expect(missingText.status == 404 && missingText.body.isEmpty)
        #expect(try #require(try curl([server.url("/v3/phone/79131234567?format=xml")])).status == 400)
        #expect(try #require(try curl([server.url("/v3/phone/hello?format=text")])).body.isEmpty)
    }
}
