import Foundation
import Testing
@testable import CallerID
import CallerIDDirectory
import CallerIDPipeline
import CallerIDQuery
import CallerIDServe

// `POST /v1/reports`: what a body gives the report log, the log's segments (whole lines only,
// a torn tail cut at the next start), and a real server killed with SIGKILL under load whose
// every 2xx report `lookup reports` then reads.

struct ReportIntakeTests {
    private let numbers = ReportNumbers(reader: (try? NumberNormalizer(rules: .automatic)) ?? NumberNormalizer(), country: nil)

    private func lines(_ taken: ReportUpload.Taken) -> [[String: Any]] {
        String(decoding: taken.lines, as: UTF8.self).split(separator: "\n").map {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] ?? [:]
        }
    }

    @Test func aBodyOfReportsIsTakenRowByRowAndEachRefusalNamesItsIndex() throws {
        let body = """
            {"number":"+79131234567","category":"Collector","client":"a","comment":"called at night"}
            {"number":"8 913 123-45-68","category":"spam","client":"b"}
            {"number":"+79131234569","category":"nope","client":"c"}
            {"number":"+79131234570","category":"safe"}
            {"number":"+79131234571","category":"scam","client":"d","time":"2026-12-01T10:00:00Z"}
            {"number":"+79131234572","category":"scam","client":"e","time":"2099-01-01T00:00:00Z"}
            {"number":"+79131234573","category":"scam","client":"f","time":"1796119200000"}
            {"number":{"x":1},"category":"scam","client":"g"}
            {"number":"+79131234574" "category":"scam"}

            """
        let now: Int64 = 1_796_652_710
        let taken = ReportUpload.take(Array(body.utf8), numbers: numbers, sender: "app", now: now)
        #expect(taken.body == nil && taken.count == 2)
        let written = lines(taken)
        #expect(written.map { $0["number"] as? String } == ["+79131234567", "+79131234571"])
        #expect(written[0]["category"] as? String == "collector" && written[0]["time"] as? Int == Int(now) && written[0]["key"] as? String == "app")
        #expect(written[1]["time"] as? Int == 1_796_119_200)
        let refused = Dictionary(uniqueKeysWithValues: taken.refusals.map { ($0.index ?? -1, $0.message) })
        #expect(refused.keys.sorted() == [1, 2, 3, 5, 6, 7, 8], "\(refused)")
        #expect(refused[1]?.contains("number") == true)   // a national form without a country
        #expect(refused[2]?.contains("give one of") == true && refused[3]?.contains("no client") == true)
        #expect(refused[5]?.contains("future") == true && refused[6]?.contains("milliseconds") == true)
        #expect(refused[7]?.contains("object or array") == true && refused[8]?.contains("JSON syntax") == true)
        // With the sender's country the national form reads.
        let russian = ReportUpload.take(Array(#"[{"number":"8 913 123-45-68","category":"spam","client":"b"}]"#.utf8),
                                        numbers: ReportNumbers(reader: numbers.reader, country: "RU"), sender: "app", now: now)
        #expect(russian.count == 1 && lines(russian)[0]["number"] as? String == "+79131234568")
    }

    /// The reporter is the hash of the sender and its client's id: the same id sent with two
    /// keys is two reporters, and the id itself is never written.
    @Test func theReporterIsNeverTheSendersWord() {
        func reporter(_ sender: String, _ client: String) -> String? {
            let taken = ReportUpload.take(Array(#"{"number":"+79131234567","category":"spam","client":"\#(client)"}"#.utf8),
                                          numbers: numbers, sender: sender, now: 1)
            #expect(!String(decoding: taken.lines, as: UTF8.self).contains(client))
            return lines(taken).first?["reporter"] as? String
        }
        #expect(reporter("app", "device-42") == reporter("app", "device-42"))
        #expect(reporter("app", "device-42") != reporter("other", "device-42"))
        #expect(reporter("app", "device-42") != reporter("app", "device-43"))
        #expect(reporter("app", "device-42")?.hasPrefix("r") == true && reporter("app", "device-42")?.count == 33)
    }

    @Test(arguments: ["", "   \n", "[", "[{\"number\":1},", "[{}] x", "{\"number\":\"1\"} {}\n".replacingOccurrences(of: " {}", with: "") + "[1]"])
    func aBodyThatIsNoReportsIsRefusedWhole(_ body: String) {
        let taken = ReportUpload.take(Array(body.utf8), numbers: numbers, sender: "app", now: 1)
        #expect(taken.count == 0)
        #expect(taken.body != nil || !taken.refusals.isEmpty, "\(body)")
    }

    @Test func aBodyOfMoreThanTenThousandReportsIsRefusedWhole() {
        let body = "[" + Array(repeating: #"{"number":"+79131234567","category":"spam","client":"a"}"#, count: ReportIntake.maxReports + 1)
            .joined(separator: ",") + "]"
        let taken = ReportUpload.take(Array(body.utf8), numbers: numbers, sender: "app", now: 1)
        #expect(taken.count == 0 && taken.body?.contains("more than 10000") == true)
    }

    /// Bodies made by mutating good ones (fixed seed: bytes flipped, cut, duplicated, spliced,
    /// nested deep): the intake never traps, every line it writes is one JSON object with the
    /// log's fields and an E.164 number, and each report is either taken or refused, never both.
    @Test func mutatedBodiesNeverTrapAndEveryWrittenLineIsWhole() throws {
        let good = [
            #"[{"number":"+79131234567","category":"collector","client":"a"},{"number":"+79131234568","category":"safe","client":"b","time":1796119200}]"#,
            "{\"number\":\"+79131234567\",\"category\":\"spam\",\"client\":\"c\"}\n{\"number\":\"+442079460000\",\"category\":\"scam\",\"client\":\"d\"}\n",
        ].map { Array($0.utf8) }
        var rng = SeededGenerator(seed: 47)
        for round in 0..<3_000 {
            var body = good[round % good.count]
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                let i = Int.random(in: 0..<max(1, body.count), using: &rng)
                switch Int.random(in: 0..<6, using: &rng) {
                case 0 where !body.isEmpty: body[i] = UInt8.random(in: 0...255, using: &rng)
                case 1: body = Array(body.prefix(i))
                case 2: body.insert(contentsOf: body.prefix(i).suffix(16), at: min(i, body.count))
                case 3: body.insert(contentsOf: Array(repeating: UInt8(ascii: "["), count: 2_000), at: min(i, body.count))
                case 4: body.insert(contentsOf: [0x00, 0xFF, 0xC0, 0x80, 0x22, 0x5C], at: min(i, body.count))
                default: body.insert(contentsOf: Array("{\"number\":".utf8), at: min(i, body.count))
                }
            }
            let taken = ReportUpload.take(body, numbers: numbers, sender: "app", now: 1_796_652_710)
            let written = lines(taken)
            #expect(written.count == taken.count)
            for line in written {
                #expect(Set(line.keys) == ["number", "reporter", "time", "category", "received", "key"], "\(line)")
                let number = line["number"] as? String ?? ""
                #expect(number.hasPrefix("+") && UInt64(number.dropFirst()) != nil, "\(number)")
            }
            if case .success(let reports) = ReportIntake.reports(in: body) {
                #expect(taken.count + taken.refusals.count == reports.count)
            }
        }
    }

    @Test func theLogClosesASegmentPastItsSizeAndEachClosedOneHoldsWholeLines() throws {
        let dir = TempDir()
        let log = try ReportLog(directory: dir.path("reports"), maxSegmentBytes: 4096)
        let line = Array(#"{"number":"+79131234567","reporter":"r1","time":1,"category":"spam"}"#.utf8) + [0x0A]
        for _ in 0..<200 { try log.append(line, count: 1) }
        log.close()
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path("reports")).sorted()
        #expect(names.count == (200 * line.count + 4095) / 4096 && names.allSatisfy { $0.hasSuffix(".jsonl") }, "\(names)")
        var total = 0
        for name in names {
            let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: dir.path("reports/" + name))))
            #expect(bytes.count <= 4096 && bytes.last == 0x0A)
            total += bytes.count / line.count
        }
        #expect(total == 200 && log.reportsWritten == 200)
    }

    /// A server killed in the middle of a write leaves a torn last line in its open segment:
    /// the next start cuts it back to its last whole line and closes it.
    @Test func aTornTailIsCutAtTheNextStart() throws {
        let dir = TempDir()
        let reports = dir.path("reports")
        try FileManager.default.createDirectory(atPath: reports, withIntermediateDirectories: true)
        let whole = "{\"number\":\"+79131234567\",\"reporter\":\"r1\",\"time\":1,\"category\":\"spam\"}\n"
        try Data((whole + whole + "{\"number\":\"+7913").utf8).write(to: URL(fileURLWithPath: reports + "/reports-20261207-000001.jsonl.open"))
        try Data("{\"num".utf8).write(to: URL(fileURLWithPath: reports + "/reports-20261207-000002.jsonl.open"))
        let log = try ReportLog(directory: reports)
        #expect(try String(contentsOfFile: reports + "/reports-20261207-000001.jsonl", encoding: .utf8) == whole + whole)
        #expect(try Data(contentsOf: URL(fileURLWithPath: reports + "/reports-20261207-000002.jsonl")).isEmpty)
        try log.append(Array(whole.utf8), count: 1, now: Date(timeIntervalSince1970: 1_796_652_710))   // 2026-12-07
        log.close()
        #expect(FileManager.default.fileExists(atPath: reports + "/reports-20261207-000003.jsonl"))
    }
}

struct ServeReportTests {
    @Test func intakeNeedsTheReportPermissionAndItsDirectory() throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        let keys = dir.path("keys")
        let app = try lookup(["serve", "--keys", keys, "--add-key", "app", "--may", "report"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let pbx = try lookup(["serve", "--keys", keys, "--add-key", "pbx", "--may", "lookup"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let server = try ServeProcess(["--db", db, "--keys", keys, "--reports-dir", dir.path("reports")])
        func post(_ key: String?, _ body: String, _ extra: [String] = []) throws -> HTTPAnswer {
            try #require(try curl(["-X", "POST", "--data-binary", body] + (key.map { ["-H", "Authorization: Bearer \($0)"] } ?? []) + extra
                                  + [server.url("/v1/reports")]))
        }
        let one = #"{"number":"+79131234567","category":"collector","client":"device-1"}"#
        #expect(try post(nil, one).status == 401)
        #expect(try post(pbx, one).status == 403)
        let taken = try post(app, one)
        #expect(taken.status == 200 && taken.body.contains("\"accepted\":1"), "\(taken.body)")
        let refused = try post(app, #"{"number":"+79131234567","category":"nope","client":"device-1"}"#)
        #expect(refused.status == 400 && refused.body.contains("\"accepted\":0") && refused.body.contains("\"index\":0"))
        try Data(repeating: 0x20, count: ReportUpload.maxBytes + 1).write(to: URL(fileURLWithPath: dir.path("big.json")))
        #expect(try post(app, "@" + dir.path("big.json")).status == 413)
        #expect(try #require(try curl(["-H", "Authorization: Bearer \(app)", server.url("/v1/reports")])).status == 405)
        let off = try ServeProcess(["--db", db, "--keys", keys])
        let none = try #require(try curl(["-X", "POST", "--data-binary", one, "-H", "Authorization: Bearer \(app)", off.url("/v1/reports")]))
        #expect(none.status == 404 && none.body.contains("--reports-dir"))
    }

    /// SIGHUP closes the open segment: what was taken so far is in a closed `.jsonl` that
    /// `lookup reports` reads while the server goes on taking reports into a new one.
    @Test func sighupClosesTheOpenSegment() async throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        let reports = dir.path("reports")
        let server = try ServeProcess(["--db", db, "--reports-dir", reports])
        func post(_ number: Int) throws -> Int {
            try #require(try curl(["-X", "POST", "--data-binary", #"{"number":"+\#(number)","category":"spam","client":"x"}"#,
                                   server.url("/v1/reports")])).status
        }
        func files(_ suffix: String) throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: reports).filter { $0.hasSuffix(suffix) } }
        #expect(try post(79131234567) == 200 && post(79131234568) == 200)
        #expect(try files(".jsonl").isEmpty && files(".open").count == 1)
        server.send(SIGHUP)
        for _ in 0..<100 where (try? files(".jsonl").isEmpty) ?? true { try await Task.sleep(nanoseconds: 20_000_000) }
        let closed = try files(".jsonl")
        #expect(closed.count == 1)
        #expect(try post(79131234569) == 200)
        #expect(try files(".open").count == 1)
        let read = try lookup(["reports", "--records", dir.path("records.tsv")] + closed.map { reports + "/" + $0 })
        #expect(read.status == 0 && read.stdout.contains("\"reports\":2"), "\(read.stdout) \(read.stderr)")
    }

    /// 100,000 reports sent in batches while the server is killed with SIGKILL at random moments
    /// and started again on the same directory: every report of a batch answered 200 is read by
    /// `lookup reports` afterwards, which finds no bad row (nothing torn) and nothing unsent.
    @Test func everyReportAnswered2xxSurvivesKillNine() throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        let reports = dir.path("reports")
        let client = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/report_client.py").path
        let size = 100, batches = 1_000, first = 79_000_000_000
        var accepted = Set<Int>()
        var rng = SeededGenerator(seed: 9)
        var next = first
        var rounds = 0
        while next < first + size * batches {
            rounds += 1
            let server = try ServeProcess(["--db", db, "--reports-dir", reports])
            let left = (first + size * batches - next) / size
            if rounds < 6 {
                let delay = Double.random(in: 0.05...0.5, using: &rng)
                let pid = server.pid
                DispatchQueue.global().asyncAfter(deadline: .now() + delay) { _ = kill(pid, SIGKILL) }
            }
            let run = try runTool("python3", [client, "\(server.port)", "\(next)", "\(left)", "\(size)"], timeout: 300)
            for line in run.lines { if let start = Int(line) { accepted.insert(start) } }
            if rounds >= 6 {
                server.send(SIGTERM)
                #expect(server.exitStatus(within: 20) == 0)
            } else {
                _ = server.exitStatus(within: 10)
            }
            // The next round sends the batches after the last one answered (those sent into the
            // kill may or may not be in the log: never answered, they are sent again).
            next = (accepted.max().map { $0 + size } ?? first)
        }
        #expect(rounds > 1 && accepted.count == batches, "\(rounds) rounds, \(accepted.count) batches")
        // One more start closes what the last kill left open, cut to its whole lines.
        let last = try ServeProcess(["--db", db, "--reports-dir", reports])
        last.send(SIGTERM)
        #expect(last.exitStatus(within: 20) == 0)
        let segments = try FileManager.default.contentsOfDirectory(atPath: reports).filter { $0.hasSuffix(".jsonl") }.sorted()
        let open = try FileManager.default.contentsOfDirectory(atPath: reports).filter { $0.hasSuffix(".open") }
        #expect(!segments.isEmpty && open.isEmpty)
        let records = dir.path("records.tsv")
        let read = try lookup(["reports", "--records", records] + segments.map { reports + "/" + $0 })
        #expect(read.status == 0, "\(read.stderr)")   // no bad row: nothing torn
        var seen = Set<Int>()
        for line in try String(contentsOfFile: records, encoding: .utf8).split(separator: "\n") {
            let fields = line.split(separator: "\t")
            if fields.count > 1, let n = Int(fields[1]) { seen.insert(n) }
        }
        for start in accepted {
            #expect((start..<(start + size)).allSatisfy { seen.contains($0) }, "batch \(start) was answered 200 but is not in the log")
        }
        #expect(seen.allSatisfy { $0 >= first && $0 < first + size * batches })
    }
}
