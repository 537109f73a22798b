import Foundation
import Testing
@testable import CallerID
@testable import CallerIDDirectory

// A number gets one answer everywhere: what `lookup --db STORE`, `lookup -`, `lookup dump`,
// `lookup export --live-caller-id` and `lookup serve` answer for a number of a store composed
// of sources is what the phone does with it, that is the two lists the Call Directory feed
// makes from the same store (precedence per list, the allow list, the category choice and the
// rules applied as the feed applies them).

/// A store of sources with random priorities and settings, and its feed's two lists.
private struct ComposedStore {
    let path: String
    let numbers: [UInt64]
    let identification: [UInt64: String]
    let blocking: Set<UInt64>

    init(seed: UInt64, in dir: TempDir) throws {
        var rng = SeededGenerator(seed: seed)
        // 2–3 sources of 1–2 files each over a small shared number space, so that numbers are
        // identified by one source and blocked by another.
        let files = randomDirectoryFiles(seed: seed, count: 5, entries: 120, span: 500)
        let store = try InstalledStore(path: dir.path("store"))
        var union = Set<UInt64>()
        var next = 0
        let sources = Int.random(in: 2...3, using: &rng)
        for s in 0..<sources {
            let take = s == sources - 1 ? files.count - next : Int.random(in: 1...2, using: &rng)
            let part = Array(files[next..<next + take])
            next += take
            try writeBuildDirectory(dir.path("set\(s)"), part)
            for f in part { for e in f.entries { union.insert(e.number) } }
            try store.installSource("src\(s)", from: dir.path("set\(s)"), priority: Int.random(in: 0...3, using: &rng))
        }
        let sorted = union.sorted()
        var settings = FeedSettings()
        settings.allowList = sorted.filter { _ in Int.random(in: 0..<12, using: &rng) == 0 }
        if Bool.random(using: &rng) { settings.blockCategories = ["spam", "BLOCK"] }
        for _ in 0..<Int.random(in: 0...2, using: &rng) {
            let first = sorted[Int.random(in: 0..<sorted.count, using: &rng)]
            settings.rules.append(try BlockingRule("\(first)..\(first + UInt64.random(in: 0...30, using: &rng))"))
        }
        settings.identification = Int.random(in: 0..<5, using: &rng) != 0
        settings.blocking = Int.random(in: 0..<5, using: &rng) != 0
        try store.updateSettings(settings)

        let lists = try streamLists(try store.snapshot())
        path = store.path
        identification = Dictionary(uniqueKeysWithValues: lists.identification)
        blocking = Set(lists.blocking)
        // Every number of the union, of the rules and of the allow list, and some absent ones.
        var asked = union.union(lists.blocking).union(settings.allowList)
        asked.insert(79_000_000_000 + 600)
        asked.insert(1)
        numbers = asked.sorted()
    }

    /// Checks an answer of `lookup --json` (or of the server) against the feed's lists.
    func expectPhoneAnswer(_ answer: [String: Any], _ n: UInt64, _ how: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let found = answer["found"] as? Bool
        let action = answer["action"] as? String, label = answer["label"] as? String
        if blocking.contains(n) {
            #expect(found == true && action == "block", "\(n) (\(how)): the phone blocks it, answered \(answer)", sourceLocation: sourceLocation)
            if let shown = identification[n] {
                #expect(label == shown, "\(n) (\(how)): the phone shows \(shown), answered \(answer)", sourceLocation: sourceLocation)
            }
        } else if let shown = identification[n] {
            #expect(found == true && action == "identify" && label == shown,
                    "\(n) (\(how)): the phone identifies it as \(shown), answered \(answer)", sourceLocation: sourceLocation)
        } else {
            #expect(found == false, "\(n) (\(how)): the phone neither blocks nor identifies it, answered \(answer)", sourceLocation: sourceLocation)
        }
    }
}

private func jsonLines(_ text: String) -> [[String: Any]] {
    text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
}

struct OneAnswerTests {
    @Test func aStoreIdentifyingANumberThatAnotherSourceBlocksAnswersBlockedAsThePhoneDoes() throws {
        let dir = TempDir()
        try writeBuildDirectory(dir.path("city"), [DirectoryTestFile(name: "city.cid", region: "city", entries: [
            Entry(number: 79110000048, label: "Shop A", category: .identify),
            Entry(number: 79110000049, label: "Shop B", category: .identify),
        ])])
        try writeBuildDirectory(dir.path("toxic"), [DirectoryTestFile(name: "toxic.cid", region: "toxic", entries: [
            Entry(number: 79110000048, label: "Debt Co", category: try Category("collector", action: .block)),
            Entry(number: 79110000050, label: "Polls", category: try Category("survey", action: .block)),
        ])])
        let store = try InstalledStore(path: dir.path("store"))
        try store.installSource("city", from: dir.path("city"), priority: 2)
        try store.installSource("toxic", from: dir.path("toxic"), priority: 1)
        let blocked = try lookup(["79110000048", "--db", store.path, "--json"])
        #expect(blocked.status == 0)
        let answer = try #require(jsonLines(blocked.stdout).first)
        #expect(answer["action"] as? String == "block" && answer["category"] as? String == "collector")
        #expect(answer["label"] as? String == "Shop A", "the identifying label is what the phone shows")
        // The allow list lets it through: identified again. A rule blocks a number no entry holds.
        var settings = FeedSettings(allowList: [79110000048], rules: [try BlockingRule("79110000060..79110000061")])
        try store.updateSettings(settings)
        let allowed = try #require(jsonLines(try lookup(["79110000048", "--db", store.path, "--json"]).stdout).first)
        #expect(allowed["action"] as? String == "identify" && allowed["label"] as? String == "Shop A")
        let ruled = try lookup(["79110000061", "--db", store.path])
        #expect(ruled.status == 0 && ruled.stdout == "79110000061\t\tblock\trule:79110000060-79110000061\n")
        // A category the user did not choose is not blocked; the identification stands.
        settings = FeedSettings(blockCategories: ["spam"])
        try store.updateSettings(settings)
        let unchosen = try #require(jsonLines(try lookup(["79110000048", "--db", store.path, "--json"]).stdout).first)
        #expect(unchosen["action"] as? String == "identify")
        let onlyBlocked = try lookup(["79110000050", "--db", store.path])
        #expect(onlyBlocked.status == 1 && onlyBlocked.stdout == "79110000050\t-\n")
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6] as [UInt64])
    func everyNumberOfARandomComposedStoreGetsThePhonesAnswerFromLookupAndTheServer(seed: UInt64) throws {
        let dir = TempDir()
        let store = try ComposedStore(seed: seed, in: dir)
        let body = store.numbers.map(String.init).joined(separator: "\n") + "\n"
        let batch = try lookup(["-", "--db", store.path, "--json"], stdin: Data(body.utf8))
        #expect(batch.status == 0, "\(batch.stderr)")
        let answers = jsonLines(batch.stdout)
        try #require(answers.count == store.numbers.count)
        for (n, answer) in zip(store.numbers, answers) { store.expectPhoneAnswer(answer, n, "lookup -") }
        // One number at a time (the first, a few blocked and identified ones).
        for n in store.numbers.prefix(3) + store.blocking.sorted().prefix(3) + store.identification.keys.sorted().prefix(3) {
            let one = try lookup([String(n), "--db", store.path, "--json"])
            store.expectPhoneAnswer(try #require(jsonLines(one.stdout).first), n, "lookup N")
        }
        // dump: the two lists as one stream, every number as its point answer; --action: one list.
        let dump = try lookup(["dump", "--db", store.path, "--json"])
        #expect(dump.status == 0, "\(dump.stderr)")
        let dumped = jsonLines(dump.stdout)
        let listed = Set(store.identification.keys).union(store.blocking).sorted()
        #expect(dumped.map { ($0["number"] as? NSNumber)?.uint64Value ?? 0 } == listed)
        for line in dumped {
            var answer = line
            answer["found"] = true
            store.expectPhoneAnswer(answer, (line["number"] as? NSNumber)?.uint64Value ?? 0, "dump")
        }
        let blockList = try lookup(["dump", "--db", store.path, "--action", "block"])
        #expect(blockList.lines.map { UInt64($0.split(separator: "\t")[0]) ?? 0 } == store.blocking.sorted())
        let idList = try lookup(["dump", "--db", store.path, "--action", "identify"])
        #expect(idList.lines.map { UInt64($0.split(separator: "\t")[0]) ?? 0 } == store.identification.keys.sorted())
        // The Live Caller ID export of the store: a row for each number of the lists, blocked
        // exactly where the blocking list holds it.
        let export = try lookup(["export", "--live-caller-id", dir.path("lcid"), "--text", "--db", store.path])
        #expect(export.status == 0, "\(export.stderr)")
        let text = try String(contentsOfFile: dir.path("lcid/input.txtpb"), encoding: .utf8)
        var exported: [UInt64: Bool] = [:]
        for block in text.components(separatedBy: "identities {").dropFirst() {
            let key = try #require(block.firstMatch(of: /key: "\+(\d+)"/)?.1)
            exported[UInt64(key)!] = block.contains("block: true")
        }
        #expect(exported.keys.sorted() == listed)
        #expect(exported.filter(\.value).keys.sorted() == store.blocking.sorted())
        // The server, from the same store.
        let server = try ServeProcess(["--store", store.path, "--max-body-bytes", "1000000"])
        try body.write(toFile: dir.path("body.txt"), atomically: true, encoding: .utf8)
        let served = try #require(try curl(["--data-binary", "@" + dir.path("body.txt"), server.url("/v1/lookup")]))
        #expect(served.status == 200)
        let servedAnswers = jsonLines(served.body)
        try #require(servedAnswers.count == store.numbers.count)
        for (n, answer) in zip(store.numbers, servedAnswers) { store.expectPhoneAnswer(answer, n, "serve") }
    }
}

/// A region is answered by one source: the starter set's packs of a region another source is
/// subscribed to are left out, so a number the publisher deleted from that region stops
/// answering; unsubscribing the region brings the starter's pack back.
struct RegionOwnershipTests {
    private static func entries(_ range: ClosedRange<UInt64>, _ label: String, step: UInt64 = 1) -> [Entry] {
        stride(from: range.lowerBound, through: range.upperBound, by: Int(step)).map { Entry(number: $0, label: "\(label) \($0 % 1000)") }
    }

    @Test func aNumberDeletedFromASubscribedRegionNoLongerAnswersFromTheStarter() throws {
        let dir = TempDir()
        let kazan: ClosedRange<UInt64> = 78_432_000_000...78_432_000_199, moscow: ClosedRange<UInt64> = 74_950_000_000...74_950_000_199
        // The starter: the top numbers of each region, under the publisher's region names.
        try writeBuildDirectory(dir.path("starter"), [
            DirectoryTestFile(name: "kazan.cid", region: "kazan", entries: Self.entries(kazan, "Старый", step: 10)),
            DirectoryTestFile(name: "moscow.cid", region: "moscow", entries: Self.entries(moscow, "Top", step: 10)),
        ])
        func city(_ version: Int, deleting deleted: Set<UInt64>) throws -> String {
            let path = dir.path("city\(version)")
            try writeBuildDirectory(path, [
                DirectoryTestFile(name: "kazan.cid", region: "kazan", entries: Self.entries(kazan, "City").filter { !deleted.contains($0.number) }),
                DirectoryTestFile(name: "moscow.cid", region: "moscow", entries: Self.entries(moscow, "City")),
            ], datasetVersion: "v\(version)")
            return path
        }
        let store = try InstalledStore(path: dir.path("store"))
        try store.installSource("starter", from: dir.path("starter"))
        try store.installSource("city", from: try city(1, deleting: []), regions: ["kazan"], priority: 0)
        // The publisher deletes 100 Kazan numbers, 10 of which the starter holds.
        let deleted = Set(kazan.lowerBound..<kazan.lowerBound + 100)
        try store.installSource("city", from: try city(2, deleting: deleted))

        let asked = Array(kazan) + [moscow.lowerBound, moscow.lowerBound + 10, moscow.lowerBound + 1]
        let body = asked.map(String.init).joined(separator: "\n") + "\n"
        var answers = try lookup(["-", "--db", store.path], stdin: Data(body.utf8)).lines
        for (n, line) in zip(asked, answers) {
            if deleted.contains(n) {
                #expect(line == "\(n)\t-", "a number deleted from Kazan still answers: \(line)")
            } else if kazan.contains(n) {
                #expect(line.hasPrefix("\(n)\tCity "), "\(line)")
            }
        }
        // Moscow is not subscribed from the city source: the starter still answers there.
        #expect(answers.suffix(3) == ["\(moscow.lowerBound)\tTop 0\tidentify", "\(moscow.lowerBound + 10)\tTop 10\tidentify", "\(moscow.lowerBound + 1)\t-"])
        // The phone gets the same: no deleted number in the feed's identification list.
        let lists = try streamLists(try store.snapshot())
        #expect(!lists.identification.contains { deleted.contains($0.0) })
        #expect(lists.identification.filter { kazan.contains($0.0) }.count == kazan.count - deleted.count)
        let listed = try #require(try store.sources().first { $0.source.name == "starter" })
        #expect(listed.shadowed == ["kazan"] && listed.missingPacks.isEmpty)

        // Kazan unsubscribed from the city source: the starter answers for it again.
        try store.unsubscribe("city", regions: ["kazan"])
        answers = try lookup(["-", "--db", store.path], stdin: Data(body.utf8)).lines
        #expect(answers[0] == "\(kazan.lowerBound)\tСтарый 0\tidentify" && answers[1] == "\(kazan.lowerBound + 1)\t-")
        #expect(try store.sources().first { $0.source.name == "starter" }?.shadowed == [])
    }
}

extension RegionOwnershipTests {
    /// `lookup build --top N --top-only --split-by field` writes only the starter set, one file
    /// per region keyed as the full build's regions; installed beside the full build, a
    /// subscribed region replaces the starter's part of it and the rest keeps answering.
    @Test func aStarterBuiltPerRegionIsReplacedRegionByRegion() throws {
        let dir = TempDir()
        var rows = "number\tname\tregion\tweight\n"
        for i in 0..<30 {
            let region = i % 2 == 0 ? "Kazan" : "Omsk"
            rows += "7\(region == "Kazan" ? "843" : "381")\(String(2_000_000 + i))\tShop \(i)\t\(region)\t\(i)\n"
        }
        try rows.write(toFile: dir.path("master.tsv"), atomically: true, encoding: .utf8)
        let common = ["--region-field", "region", "--weight-field", "weight", "--split-by", "field"]
        let full = try lookup(["build", "-o", dir.path("city") + "/", dir.path("master.tsv")] + common)
        #expect(full.status == 0, "\(full.stderr)")
        let top = try lookup(["build", "-o", dir.path("starter") + "/", dir.path("master.tsv"), "--top", "3", "--top-only"] + common)
        #expect(top.status == 0, "\(top.stderr)")
        let city = try DirectoryManifest.read(directory: dir.path("city"))
        let starter = try DirectoryManifest.read(directory: dir.path("starter"))
        #expect(Set(starter.files.map(\.regionKey)) == Set(city.files.map(\.regionKey)))
        #expect(starter.files.allSatisfy { $0.kind == "top" && $0.entries == 3 })
        #expect(starter.files.count == 2, "only the top sets: \(starter.files.map(\.file))")
        // The heaviest three of Kazan: rows 28, 26, 24.
        let kazan = try #require(starter.files.first { $0.regionKey == city.files.first { $0.file.lowercased().contains("kazan") }?.regionKey })
        let dumped = try lookup(["dump", "--db", dir.path("starter") + "/" + kazan.file])
        #expect(dumped.lines.map { $0.split(separator: "\t")[1] } == ["Shop 24", "Shop 26", "Shop 28"])

        let store = dir.path("store")
        #expect(try lookup(["install", "--store", store, dir.path("starter"), "--source", "starter"]).status == 0)
        #expect(try lookup(["install", "--store", store, dir.path("city"), "--source", "city", "--regions", kazan.regionKey, "--priority", "0"]).status == 0)
        let list = try lookup(["store", "list", "--store", store, "--json"])
        #expect(list.stdout.contains("\"shadowed\":[\(jsonQuote(kazan.regionKey))]"), "\(list.stdout)")
        #expect(try lookup(["78432000024", "--db", store]).stdout == "78432000024\tShop 24\tidentify\n")
        #expect(try lookup(["73812000029", "--db", store]).stdout == "73812000029\tShop 29\tidentify\n")   // Omsk: the starter's
        #expect(try lookup(["73812000001", "--db", store]).status == 1)
    }
}
