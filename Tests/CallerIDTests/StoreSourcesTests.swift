import Foundation
import Testing
@testable import CallerID
@testable import CallerIDDirectory
import CallerIDURLSession

// A store composed of sources: regions the user picks from several publishers, each with its
// own key, beside a starter set from a local folder; every step one atomic generation.

/// One source as the model sees it: every region it offers, the regions subscribed.
private struct ModelSource {
    var name: String
    var regions: [(name: String, entries: [Entry])]
    var subscribed: [String]

    var files: [DirectoryTestFile] {
        regions.filter { subscribed.contains($0.name) }.map { DirectoryTestFile(name: "\(name).\($0.name).cid", region: $0.name, entries: $0.entries) }
    }
}

/// Writes `regions` as a build directory the way `lookup build --split-by` does (one file per
/// region with its bounds, entries, actions and SHA-256) and signs it with `key` when given.
private func publish(_ dir: String, _ regions: [(name: String, entries: [Entry])], version: String, key: SigningSecretKey?) throws {
    try? FileManager.default.removeItem(atPath: dir)
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    var files: [DirectoryManifest.File] = []
    for r in regions {
        let path = dir + "/" + r.name + ".cid"
        _ = try buildDatabase(r.entries, at: path)
        var f = DirectoryManifest.File(file: r.name + ".cid", region: r.name, kind: "all", entries: r.entries.count,
                                       bytes: try #require(FileSystem.fileSize(path)), xxh3: try Checksum.xxh3(fileAt: path),
                                       sha256: try DirectoryManifest.sha256Hex(fileAt: path))
        let numbers = r.entries.map(\.number).sorted()
        f.firstNumber = numbers.first
        f.lastNumber = numbers.last
        f.ranges = 0
        let identify = r.entries.filter { $0.category.action == .identify }.count
        f.actions = ["identify": identify, "block": r.entries.count - identify]
        files.append(f)
    }
    var manifest = DirectoryManifest(files: files, datasetVersion: version)
    manifest.buildTime = "2026-06-0\(version)T00:00:00Z"
    try manifest.jsonData().write(to: URL(fileURLWithPath: dir + "/manifest.json"))
    if let key { try ManifestSignature.sign(directory: dir, with: key) }
}

/// Twelve regions `r01`…`r12` of 60 entries; `changed` regions get labels of `version`.
private func cityRegions(version: Int, changed: Set<String> = []) -> [(name: String, entries: [Entry])] {
    (1...12).map { i in
        let name = String(format: "r%02d", i)
        let base = 79_000_000_000 + UInt64(i) * 10_000_000
        return (name, (0..<60).map { j in
            Entry(number: base + UInt64(j) * 7919, label: "\(name) \(j)\(changed.contains(name) ? " v\(version)" : "")")
        })
    }
}

/// A block list: every 6th number of each city region, and 40 of its own.
private func blockList() throws -> [(name: String, entries: [Entry])] {
    let spam = try Category.named("spam")
    var numbers = cityRegions(version: 1).flatMap { $0.entries.enumerated().filter { $0.offset % 6 == 5 }.map(\.element.number) }
    numbers += (0..<40).map { 79_800_000_000 + UInt64($0) * 3 }
    return [("spam", numbers.sorted().map { Entry(number: $0, label: "Spam", category: spam) })]
}

/// The starter set: every 10th number of each city region, and 50 of its own.
private func starterEntries(label: String = "Starter") -> [Entry] {
    var numbers = cityRegions(version: 1).flatMap { $0.entries.enumerated().filter { $0.offset % 10 == 3 }.map(\.element.number) }
    numbers += (0..<50).map { 79_900_000_000 + UInt64($0) * 11 }
    return numbers.sorted().map { Entry(number: $0, label: "\(label) \($0 % 1000)") }
}

/// Two publishers on 127.0.0.1 (`web/city`, 12 regions, key A; `web/blocks`, a block list,
/// key B), a starter folder, and a store.
private struct TwoPublishers {
    let dir = TempDir()
    let keyA: SigningSecretKey
    let keyB: SigningSecretKey
    let server: FaultServer
    var store: String { dir.path("store") }
    var starter: String { dir.path("starter") }
    var city: String { server.url("city") }
    var blocks: String { server.url("blocks") }

    init() throws {
        keyA = try SigningSecretKey.generate()
        try keyA.write(to: dir.path("a"))
        keyB = try SigningSecretKey.generate()
        try keyB.write(to: dir.path("b"))
        try FileManager.default.createDirectory(atPath: dir.path("web"), withIntermediateDirectories: true)
        try publish(dir.path("web/city"), cityRegions(version: 1), version: "1", key: keyA)
        try publish(dir.path("web/blocks"), try blockList(), version: "1", key: keyB)
        try writeBuildDirectory(dir.path("starter"), [DirectoryTestFile(name: "top.cid", region: "top", entries: starterEntries())])
        server = try FaultServer(root: dir.path("web"))
    }

    /// The files requested since the last call (paths under the server's root).
    func requested() -> [String] { server.takeRequests().map { String($0.split(separator: " ")[0]) } }

    func run(_ args: [String], environment: [String: String] = [:]) throws -> CLIResult {
        let r = try lookup(args, environment: environment)
        return r
    }
}

/// Every number of `sources` (subscribed or not) and a few no source holds, asked of the
/// store with `lookup -`, against the model: the first source in precedence order whose
/// subscribed regions hold the number answers.
private func expectAnswers(_ store: String, _ sources: [ModelSource], sourceLocation: SourceLocation = #_sourceLocation) throws {
    var numbers = Set(sources.flatMap { $0.regions.flatMap { $0.entries.map(\.number) } })
    numbers.formUnion([79_000_000_001, 79_555_000_000, 79_999_999_999])
    let asked = numbers.sorted()
    // As the phone: the first blocking entry (precedence order) blocks, shown with the first
    // identifying entry's label where there is one; else the first identifying entry.
    var identifying: [UInt64: Entry] = [:], blocking: [UInt64: Entry] = [:]
    for s in sources.reversed() {
        for f in s.files {
            for e in f.entries {
                if e.category.action == .block { blocking[e.number] = e } else { identifying[e.number] = e }
            }
        }
    }
    let expected = asked.map { n in
        if let b = blocking[n] { return "\(n)\t\(identifying[n]?.label ?? b.label)\t\(b.category.name)" }
        return identifying[n].map { "\(n)\t\($0.label)\t\($0.category.name)" } ?? "\(n)\t-"
    }
    let r = try lookup(["-", "--db", store], stdin: Data(asked.map(String.init).joined(separator: "\n").utf8 + [0x0A]))
    #expect(r.status == 0 || r.status == 1, "\(r.stderr)", sourceLocation: sourceLocation)
    expectSameLines(r.lines, expected, "lookup - --db \(store) against the model", sourceLocation: sourceLocation)
}

/// Every slot of the current generation fed to the CallKit simulator as a phone would after
/// the step (the previous generation's slot first, then the incremental requests): strictly
/// ascending and duplicate-free (the simulator refuses anything else), and together the
/// model's lists. Returns the calls per slot of `lookup feed --from-previous` (every sink
/// call, "remove all" included; empty for a store's first generation).
private func expectFeeds(_ storePath: String, _ sources: [ModelSource], sourceLocation: SourceLocation = #_sourceLocation) throws -> [Int] {
    let store = try InstalledStore(path: storePath)
    let pinned = try store.pin()
    var ids: [(UInt64, String)] = [], blocks: [UInt64] = []
    var calls: [Int] = []
    for k in pinned.plan.slots.indices {
        let sim = CallDirectorySimulator()
        var cursor: LoadCursor? = nil
        if let previous = pinned.previous {
            try feedUntilComplete(DirectoryFeeder(try store.pin(previous), slot: k), sim, cursor: &cursor)
        }
        try feedUntilComplete(DirectoryFeeder(pinned, slot: k), sim, cursor: &cursor)
        let lists = simulatorLists(sim)
        #expect(lists.identification.map(\.0) == lists.identification.map(\.0).sorted(), sourceLocation: sourceLocation)
        ids += lists.identification
        blocks += lists.blocking
        if pinned.previous != nil {
            let r = try lookup(["feed", "--store", storePath, "--slot", "\(k + 1)/\(pinned.plan.slots.count)", "--from-previous", "--json"])
            #expect(r.status == 0, "\(r.stdout)", sourceLocation: sourceLocation)
            let j = try #require(try JSONSerialization.jsonObject(with: r.stdoutData) as? [String: Any])
            calls.append(try #require(j["calls"] as? Int, "\(r.stdout)", sourceLocation: sourceLocation))
        }
    }
    #expect(Set(ids.map(\.0)).count == ids.count && Set(blocks).count == blocks.count, sourceLocation: sourceLocation)
    let expected = expectedLists(sources.flatMap(\.files))
    #expect(sameLists((ids, blocks), expected), "the slots' lists differ from the model", sourceLocation: sourceLocation)
    return calls
}

private func json(_ r: CLIResult) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: r.stdoutData) as? [String: Any], "not JSON: \(r.stdout)\(r.stderr)")
}

@Suite struct StoreSourcesTests {
    /// The same publisher reached at another address is the same source: a fetch without
    /// --source of a key already pinned to a source is refused with that source's name (it
    /// would hold its regions twice), and --source NAME with the new address moves NAME to it
    /// and says so.
    /// The manifest's own URL fetches the set beside it (said on stderr); an empty store says
    /// what to run; the report counts the manifest's bytes apart from the files fetched.
    @Test func aFetchOfTheManifestsURLFetchesItsSetAndAnEmptyStoreSaysWhatToRun() throws {
        let fx = try TwoPublishers()
        try FileManager.default.createDirectory(atPath: fx.dir.path("empty"), withIntermediateDirectories: true)
        let noSet = try fx.run(["feed", "--store", fx.dir.path("empty")])
        #expect(noSet.status == 66 && noSet.stderr.contains("nothing installed yet (install a build directory: lookup install --store"), "\(noSet.stderr)")
        let r = try fx.run(["fetch", fx.city + "/manifest.json", "--store", fx.store, "--trust", fx.dir.path("a.pub"), "--source", "city", "--regions", "r02"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("names the set's manifest; fetching the set at \(fx.city)"), "\(r.stderr)")
        #expect(r.stdout.contains("bytes downloaded with the manifest and its signature"), "\(r.stdout)")
        #expect(try InstalledStore(path: fx.store).sources().first?.source.url == fx.city)
    }

    @Test func aFetchOfAPinnedKeyAtAnotherAddressNamesItsSourceInsteadOfAddingOne() throws {
        let fx = try TwoPublishers()
        let a = fx.dir.path("a.pub")
        var r = try fx.run(["fetch", fx.city, "--store", fx.store, "--trust", a, "--source", "city", "--regions", "r02"])
        #expect(r.status == 0, "\(r.stderr)")
        let mirror = fx.city.replacingOccurrences(of: "127.0.0.1", with: "localhost")
        r = try fx.run(["fetch", mirror, "--store", fx.store, "--trust", a])
        #expect(r.status == 64 && r.stderr.contains("source city is pinned to this key") && r.stderr.contains("--source city"), "\(r.stderr)")
        #expect(try InstalledStore(path: fx.store).sources().map(\.source.name) == ["city"])
        r = try fx.run(["fetch", mirror, "--store", fx.store, "--trust", a, "--source", "city", "--json"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("source city now follows \(mirror) (it was fetched from \(fx.city))"), "\(r.stderr)")
        #expect(r.stdout.contains("\"moved_from\":\(jsonQuote(fx.city))"), "\(r.stdout)")
        let sources = try InstalledStore(path: fx.store).sources()
        #expect(sources.map(\.source.name) == ["city"] && sources.first?.source.url == mirror)
        #expect(sources.first?.regions.map(\.name) == ["r02"])
    }

    /// The user's own set, step by step, from two publishers and a starter folder: after each
    /// step only the files the step needs were requested, every answer of `lookup - --db
    /// STORE` matches the model, and every slot feeds the model's lists, ascending and
    /// duplicate-free, as a delta from the step before (calls per slot printed). The slots
    /// are stable: a slot of the previous plan that holds no entry the step changed keeps its
    /// bounds, is reported unchanged by the step (`content_changed: false`) and gets zero calls
    /// from `lookup feed --from-previous`; a step that changes one region of one source leaves
    /// a slot untouched. Before, every step split the entries anew and every slot was reported
    /// changed: the slot that held none of the step's entries still got calls (3 regions
    /// subscribed: 81 in slot 2; r11 added: 27 in slot 1; r02 removed: 27 in slot 2).
    @Test func theUsersOwnSetFromTwoPublishersAndAStarterFolder() throws {
        let fx = try TwoPublishers()
        let a = fx.dir.path("a.pub"), b = fx.dir.path("b.pub")
        var starter = ModelSource(name: "starter", regions: [("top", starterEntries())], subscribed: ["top"])
        var city = ModelSource(name: "city", regions: cityRegions(version: 1), subscribed: [])
        var blocks = ModelSource(name: "blocks", regions: try blockList(), subscribed: [])
        var log: [String] = []
        var before: (plan: SlotPlan, model: [ModelSource])? = nil
        /// `report`: the step's `--json` output; `untouched`: how many slots the step must
        /// leave with the same bounds and entries at least.
        func step(_ name: String, _ model: [ModelSource], requested: [String], report: CLIResult, untouched: Int = 0) throws {
            #expect(fx.requested() == requested, "\(name): requests")
            try expectAnswers(fx.store, model)
            let calls = try expectFeeds(fx.store, model)
            let plan = try InstalledStore(path: fx.store).plan()
            let reported = try #require(try json(report)["slots"] as? [[String: Any]], "\(name): \(report.stdout)")
            #expect(reported.count == plan.slots.count, "\(name): slots reported")
            var same: [Int] = []
            if let before {
                #expect(calls.count == plan.slots.count)
                // The numbers whose entry the step changed (added, removed, relabelled, blocked
                // or not), by the model.
                let old = expectedLists(before.model.flatMap(\.files)), new = expectedLists(model.flatMap(\.files))
                let oldLabels = Dictionary(old.identification, uniquingKeysWith: { a, _ in a })
                let newLabels = Dictionary(new.identification, uniquingKeysWith: { a, _ in a })
                var changedNumbers = Set(oldLabels.keys).union(newLabels.keys).filter { oldLabels[$0] != newLabels[$0] }
                changedNumbers.formUnion(Set(old.blocking).symmetricDifference(new.blocking))
                for (k, slot) in plan.slots.enumerated() where k < calls.count && k < reported.count {
                    let changed = reported[k]["content_changed"] as? Bool
                    // A slot of the previous plan holding no changed number keeps its bounds,
                    // is reported unchanged and gets no call.
                    if before.plan.slots.indices.contains(k), !changedNumbers.contains(where: before.plan.slots[k].range.contains) {
                        same.append(k)
                        #expect(slot.range == before.plan.slots[k].range, "\(name): slot \(k + 1) holds no changed entry, yet its bounds moved")
                        #expect(calls[k] == 0, "\(name): slot \(k + 1)'s entries did not change, yet feed --from-previous made \(calls[k]) calls")
                        #expect(changed == false, "\(name): slot \(k + 1)'s entries did not change, yet it is reported changed")
                    } else {
                        #expect(changed == true, "\(name): slot \(k + 1)'s entries changed, yet it is reported unchanged")
                        #expect(calls[k] > 0, "\(name): slot \(k + 1)'s entries changed, yet no call")
                    }
                }
            }
            #expect(same.count >= untouched, "\(name): \(same.count) slots untouched, \(untouched) expected at least")
            before = (plan, model)
            let shown = calls.enumerated().map { "slot \($0.offset + 1): \($0.element)\(same.contains($0.offset) ? " (no entry changed)" : "")" }
            log.append("\(name): \(calls.isEmpty ? "first load" : shown.joined(separator: ", "))")
        }

        // What the city publisher offers: its region picker, from the signed manifest only.
        let list = try fx.run(["fetch", fx.city, "--trust", a, "--list", "--json"])
        #expect(list.status == 0, "\(list.stdout)")
        let offered = try #require(try json(list)["regions"] as? [[String: Any]])
        #expect(offered.map { $0["region"] as? String } == (1...12).map { String(format: "r%02d", $0) })
        #expect(offered.first?["entries"] as? Int == 60 && (offered.first?["numbers"] as? [[Int]])?.first == [79_010_000_000, 79_010_000_000 + 59 * 7919])
        #expect(fx.requested() == ["city/manifest.json", "city/manifest.json.sig"])

        // The app's first start: the starter set, a new store of two slots.
        var r = try fx.run(["install", "--store", fx.store, fx.starter, "--source", "starter", "--slots", "2", "--json"])
        #expect(r.status == 0, "\(r.stdout)")
        try step("starter installed", [starter], requested: [], report: r)

        // Three regions: only their files are downloaded.
        r = try fx.run(["fetch", fx.city, "--store", fx.store, "--trust", a, "--source", "city", "--regions", "r02,r05,r09", "--json"])
        #expect(r.status == 0, "\(r.stdout)")
        #expect(try json(r)["regions"] as? [String] == ["r02", "r05", "r09"])
        city.subscribed = ["r02", "r05", "r09"]
        try step("3 regions subscribed", [city, starter], requested: ["city/manifest.json", "city/manifest.json.sig", "city/r02.cid", "city/r05.cid", "city/r09.cid"], report: r)

        // One more region: only it is downloaded.
        r = try fx.run(["fetch", fx.city, "--store", fx.store, "--trust", a, "--source", "city", "--regions", "r11", "--json"])
        #expect(r.status == 0, "\(r.stdout)")
        city.subscribed.append("r11")
        try step("r11 added", [city, starter], requested: ["city/manifest.json", "city/manifest.json.sig", "city/r11.cid"], report: r)

        // A new version changes a subscribed region (r05) and another (r07): only r05 is downloaded.
        try publish(fx.dir.path("web/city"), cityRegions(version: 2, changed: ["r05", "r07"]), version: "2", key: fx.keyA)
        r = try fx.run(["fetch", fx.city, "--store", fx.store, "--trust", a, "--source", "city", "--json"])
        #expect(r.status == 0, "\(r.stdout)")
        #expect(try json(r)["fetched"] as? [String] == ["r05.cid"])
        city.regions = cityRegions(version: 2, changed: ["r05", "r07"])
        try step("r05 updated", [city, starter], requested: ["city/manifest.json", "city/manifest.json.sig", "city/r05.cid"], report: r, untouched: 1)

        // A region dropped: nothing requested, its packs gone.
        r = try fx.run(["store", "remove", "--store", fx.store, "--source", "city", "--regions", "r02", "--json"])
        #expect(r.status == 0, "\(r.stdout)")
        #expect(try json(r)["removed"] as? [String] == ["city/r02"])
        city.subscribed.removeAll { $0 == "r02" }
        try step("r02 removed", [city, starter], requested: [], report: r, untouched: 1)

        // The block list of another publisher, above the regions.
        r = try fx.run(["fetch", fx.blocks, "--store", fx.store, "--trust", b, "--source", "blocks", "--priority", "1", "--json"])
        #expect(r.status == 0, "\(r.stdout)")
        blocks.subscribed = ["spam"]
        try step("block list added", [blocks, city, starter], requested: ["blocks/manifest.json", "blocks/manifest.json.sig", "blocks/spam.cid"], report: r)

        // The starter set removed.
        r = try fx.run(["store", "remove", "--store", fx.store, "--source", "starter", "--json"])
        #expect(r.status == 0, "\(r.stdout)")
        starter.subscribed = []
        try step("starter removed", [blocks, city], requested: [], report: r)

        let listed = try json(try fx.run(["store", "list", "--store", fx.store, "--json"]))
        let sources = try #require(listed["sources"] as? [[String: Any]])
        #expect(sources.map { $0["name"] as? String } == ["blocks", "city"])
        #expect(sources.map { $0["key_id"] as? String } == [fx.keyB.publicKey.keyID, fx.keyA.publicKey.keyID])
        #expect(sources[1]["regions"] as? [String] == ["r05", "r09", "r11"] && sources[1]["dataset_version"] as? String == "2")
        print("calls per slot of lookup feed --from-previous, 2 slots:\n  " + log.joined(separator: "\n  "))
    }

    /// A source's sets must be signed by the key it was subscribed with: a manifest for one
    /// publisher signed by the other's key is refused, even with that key trusted, and the
    /// current generation stays in use. The Swift calls an app makes, through URLSession.
    @Test func eachSourceKeepsItsOwnKey() throws {
        let fx = try TwoPublishers()
        let store = try InstalledStore(path: fx.store)
        let client = URLSessionHTTPClient(timeout: 10)
        let offer = try DirectoryFetcher.offer(baseURL: fx.city, trust: fx.keyA.publicKey, client: client)
        #expect(offer.regions.count == 12 && offer.datasetVersion == "1")
        let cityFetcher = DirectoryFetcher(baseURL: fx.city, store: store, trust: fx.keyA.publicKey, client: client)
        let subscribed = try cityFetcher.subscribe("city", regions: ["r01", "r02"])
        #expect(subscribed.fetchedFiles == ["r01.cid", "r02.cid"] && subscribed.install?.generation.id == 1)
        try DirectoryFetcher(baseURL: fx.blocks, store: store, trust: fx.keyB.publicKey, client: client).subscribe("blocks")
        #expect(try store.sources().map(\.source.name) == ["city", "blocks"])
        #expect(try store.current()?.id == 2)

        // The city publisher's next manifest, signed with the block list's key.
        try publish(fx.dir.path("web/city"), cityRegions(version: 2, changed: ["r01"]), version: "2", key: fx.keyB)
        #expect { try cityFetcher.update("city") } throws: {
            ($0 as? DirectoryError)?.code == .badSignature && "\($0)".contains("not by the trusted key \(fx.keyA.publicKey.keyID)")
        }
        let withB = DirectoryFetcher(baseURL: fx.city, store: store, trust: fx.keyB.publicKey, client: client)
        #expect { try withB.update("city") } throws: {
            ($0 as? DirectoryError)?.code == .badSignature && "\($0)".contains("pinned to key \(fx.keyA.publicKey.keyID)")
        }
        let cli = try lookup(["fetch", fx.city, "--store", fx.store, "--trust", fx.dir.path("b.pub"), "--source", "city", "--json"])
        #expect(cli.status == 65 && cli.stdout.contains("pinned to key"), "\(cli.stdout)")
        #expect(try store.current()?.id == 2)
        // A local folder installed as the pinned source must be signed by its key too.
        #expect { try store.installSource("city", from: fx.dir.path("web/city")) } throws: { ($0 as? DirectoryError)?.code == .badSignature }

        // Signed by the right key again: installed; unsubscribe and remove, one call each.
        try publish(fx.dir.path("web/city"), cityRegions(version: 2, changed: ["r01"]), version: "2", key: fx.keyA)
        let updated = try cityFetcher.update("city")
        #expect(updated.fetchedFiles == ["r01.cid"] && updated.install?.changes.changed == ["city/r01"])
        let unsubscribed = try store.unsubscribe("city", regions: ["r01"])
        #expect(unsubscribed.changes.removed == ["city/r01"])
        #expect { try store.unsubscribe("city", regions: ["r07"]) } throws: { ($0 as? DirectoryError)?.code == .invalidArgument }
        #expect { try store.removeSource("nope") } throws: { ($0 as? DirectoryError)?.code == .invalidArgument }
        try store.removeSource("blocks")
        let left = try store.sources()
        #expect(left.map(\.source.name) == ["city"] && left[0].source.regions == ["r02"] && left[0].regions.map(\.files) == [["city.r02.cid"]])
        #expect(try store.current()?.id == 5)
    }

    /// Precedence: a higher source priority wins; at equal priorities the source subscribed
    /// first; inside a source its own file priorities keep their order. Checked on the merged
    /// stream against the model, and the composed priorities of one source do not move when
    /// another source is added or removed.
    @Test func sourcesTakePrecedenceByPriorityThenSubscriptionAndKeepTheirOwnOrder() throws {
        let dir = TempDir()
        let files = randomDirectoryFiles(seed: 31, count: 5, entries: 300, span: 2_000)
        // Source a: two files, priorities 2 and 0 (listed low first); source b: one file of
        // priority 5, subscribed after a; source c: priority 1 over both.
        try writeBuildDirectory(dir.path("a"), [DirectoryTestFile(name: "x.cid", region: "x", entries: files[0].entries, priority: 0),
                                                DirectoryTestFile(name: "y.cid", region: "y", entries: files[1].entries, priority: 2)])
        try writeBuildDirectory(dir.path("b"), [DirectoryTestFile(name: "z.cid", region: "z", entries: files[2].entries, priority: 5)])
        try writeBuildDirectory(dir.path("c"), [DirectoryTestFile(name: "w.cid", region: "w", entries: files[3].entries)])
        let store = try InstalledStore(path: dir.path("store"))
        try store.installSource("a", from: dir.path("a"), priority: 0)
        let before = try DirectoryManifest.read(directory: try #require(try store.current()).path).files.map(\.priority)
        try store.installSource("b", from: dir.path("b"), priority: 0)
        try store.installSource("c", from: dir.path("c"), priority: 1)
        let manifest = try DirectoryManifest.read(directory: try #require(try store.current()).path)
        #expect(manifest.files.map(\.file) == ["c.w.cid", "a.x.cid", "a.y.cid", "b.z.cid"])
        #expect(Array(manifest.files.map(\.priority)[1...2]) == before, "adding sources moved a's composed priorities")
        let model = [files[3], files[1], files[0], files[2]].map { DirectoryTestFile(name: $0.name, region: $0.region, entries: $0.entries) }
        #expect(sameLists(try streamLists(try store.snapshot()), expectedLists(model)))
        // Removing c leaves a's priorities and answers as they were.
        let report = try store.removeSource("c")
        #expect(report.changes.removed == ["c/w"] && report.changes.changed.isEmpty)
        #expect(sameLists(try streamLists(try store.snapshot()), expectedLists(Array(model.dropFirst()))))
        #expect { try store.installSource("d", from: dir.path("a"), priority: 2_000_000) } throws: { ($0 as? DirectoryError)?.code == .invalidArgument }
        #expect { try store.installSource("Bad.Name", from: dir.path("a")) } throws: { ($0 as? DirectoryError)?.code == .invalidArgument }
        #expect(StoreSource.name(forURL: "https://Example.org/caller-id/v2/") == "example-org-caller-id-v2")
    }

    /// Before (one set per store): a file missing from the store failed every feed with 66.
    /// Now a missing or damaged pack fails only its own source: the feed serves the other
    /// packs and names it, another source's step takes it from the previous generation or
    /// leaves it out, a damaged download fails only its source's fetch, and the source's next
    /// fetch downloads exactly what is missing.
    @Test func aMissingOrDamagedPackFailsOnlyItsOwnSource() throws {
        let fx = try TwoPublishers()
        let a = fx.dir.path("a.pub")
        #expect(try fx.run(["install", "--store", fx.store, fx.starter, "--source", "starter"]).status == 0)
        #expect(try fx.run(["fetch", fx.city, "--store", fx.store, "--trust", a, "--source", "city", "--regions", "r01"]).status == 0)
        #expect(try fx.run(["fetch", fx.city, "--store", fx.store, "--trust", a, "--source", "city", "--regions", "r02"]).status == 0)
        let starter = ModelSource(name: "starter", regions: [("top", starterEntries())], subscribed: ["top"])
        var city = ModelSource(name: "city", regions: cityRegions(version: 1), subscribed: ["r01", "r02"])
        _ = fx.requested()

        // A damaged download fails the city's step (65); the set in use stays and answers.
        var r = try fx.run(["fetch", fx.server.url("city", faults: "short=r03.cid:300"), "--store", fx.store, "--trust", a, "--source", "city",
                            "--regions", "r03", "--json"])
        #expect(r.status == 65 && r.stdout.contains("r03.cid"), "\(r.stdout)")
        #expect(try InstalledStore(path: fx.store).current()?.id == 3)
        try expectAnswers(fx.store, [city, starter])

        // A pack deleted from the store: the feed serves the rest and names it.
        try FileManager.default.removeItem(atPath: fx.store + "/gen-3/city.r01.cid")
        r = try fx.run(["feed", "--store", fx.store, "--slot", "1/1", "--json"])
        #expect(r.status == 0, "\(r.stdout)")
        #expect(try json(r)["missing_packs"] as? [String] == ["city.r01.cid"] && r.stdout.contains("source city"))
        #expect(try json(r)["identification"] as? Int == expectedLists((city.files.dropFirst() + starter.files).map { $0 }).identification.count)
        // Another source's step: the pack is taken from the previous generation.
        try writeBuildDirectory(fx.starter, [DirectoryTestFile(name: "top.cid", region: "top", entries: starterEntries(label: "New"))])
        r = try fx.run(["install", "--store", fx.store, fx.starter, "--source", "starter", "--json"])
        #expect(r.status == 0, "\(r.stdout)")
        #expect(try json(r)["repaired"] as? [String] == ["city.r01.cid"] && (try json(r)["missing_packs"] as? [String])?.isEmpty == true)
        let newStarter = ModelSource(name: "starter", regions: [("top", starterEntries(label: "New"))], subscribed: ["top"])
        try expectAnswers(fx.store, [city, newStarter])

        // Lost everywhere (r01) and damaged in place (r02, in every generation that links it):
        // the next step of another source leaves both out and says so.
        for g in ["gen-3", "gen-4"] { try? FileManager.default.removeItem(atPath: fx.store + "/\(g)/city.r01.cid") }
        let r02 = try #require(FileHandle(forUpdatingAtPath: fx.store + "/gen-4/city.r02.cid"))
        var bytes = try bytesOf(fx.store + "/gen-4/city.r02.cid")
        bytes[bytes.count / 2] ^= 0x40
        try r02.write(contentsOf: Data(bytes))   // in place: every generation linking it sees the damage
        try r02.close()
        r = try fx.run(["install", "--store", fx.store, fx.starter, "--source", "starter", "--priority", "-2", "--json"])
        #expect(r.status == 0, "\(r.stdout)")
        #expect(try json(r)["missing_packs"] as? [String] == ["city.r01.cid", "city.r02.cid"])
        let listed = try json(try fx.run(["store", "list", "--store", fx.store, "--json"]))
        let cityListed = try #require((listed["sources"] as? [[String: Any]])?.first { $0["name"] as? String == "city" })
        #expect(cityListed["missing_packs"] as? [String] == ["city.r01.cid", "city.r02.cid"])
        city.subscribed = []
        try expectAnswers(fx.store, [city, newStarter])

        // The city's next fetch downloads exactly the two missing packs.
        _ = fx.requested()
        r = try fx.run(["fetch", fx.city, "--store", fx.store, "--trust", a, "--source", "city", "--json"])
        #expect(r.status == 0, "\(r.stdout)")
        #expect(fx.requested() == ["city/manifest.json", "city/manifest.json.sig", "city/r01.cid", "city/r02.cid"])
        city.subscribed = ["r01", "r02"]
        try expectAnswers(fx.store, [city, newStarter])
    }

    /// Killed (SIGKILL) at each durable step of subscribing through a fetch and of removing a
    /// region, the store holds the old set or the new one, whole and verified, and the step
    /// run again completes.
    @Test func aStepKilledAtAnyPointLeavesTheOldSetOrTheNewOne() throws {
        let fx = try TwoPublishers()
        let a = fx.dir.path("a.pub")
        #expect(try fx.run(["install", "--store", fx.store, fx.starter, "--source", "starter"]).status == 0)
        #expect(try fx.run(["fetch", fx.city, "--store", fx.store, "--trust", a, "--source", "city", "--regions", "r01"]).status == 0)
        let store = try InstalledStore(path: fx.store)
        /// The city's subscribed regions in the current generation, every pack intact and verified.
        func state() throws -> [String] {
            let pinned = try store.pin()
            #expect(pinned.snapshot.unreadable.isEmpty)
            for f in pinned.manifest.files { try InstalledStore.verify(pinned.generation.path + "/" + f.file, f, reportedAs: f.file) }
            return try #require(try store.sources().first { $0.source.name == "city" }).regions.map(\.name)
        }
        let subscribe = ["fetch", fx.city, "--store", fx.store, "--trust", a, "--source", "city", "--regions", "r02"]
        let remove = ["store", "remove", "--store", fx.store, "--source", "city", "--regions", "r02"]
        for point in ["downloaded", "staged", "verified", "planned", "renamed", "switched"] {
            let killed = try fx.run(subscribe, environment: ["CALLERID_TEST_KILL_AT": point])
            #expect(killed.status == 9, "\(point): \(killed.stdout)\(killed.stderr)")
            #expect(try state() == (point == "switched" ? ["r01", "r02"] : ["r01"]), "subscribe killed at \(point)")
            #expect(try fx.run(subscribe).status == 0)
            #expect(try state() == ["r01", "r02"])
            guard point != "downloaded" else {
                // A removal downloads nothing: no such step to kill it at.
                #expect(try fx.run(remove).status == 0)
                continue
            }
            let killedRemove = try fx.run(remove, environment: ["CALLERID_TEST_KILL_AT": point])
            #expect(killedRemove.status == 9, "\(point): \(killedRemove.stderr)")
            #expect(try state() == (point == "switched" ? ["r01"] : ["r01", "r02"]), "remove killed at \(point)")
            if point != "switched" { #expect(try fx.run(remove).status == 0) }
            #expect(try state() == ["r01"])
        }
        // What the kills left (staging folders, generations never switched to, downloads) is
        // gone after the next step.
        #expect(try fx.run(subscribe).status == 0)
        #expect(FileManager.default.fileExists(atPath: fx.store + "/.fetch") == false)
        #expect(try FileManager.default.contentsOfDirectory(atPath: fx.store).filter { $0.hasPrefix(".staging") || $0.hasPrefix("gen-") }.count == 2)
    }

    /// Before: an install took a manifest's `first_number`/`last_number` on trust, and a query
    /// of the store, which asks a pack only for numbers inside them, then missed the entries
    /// the bounds left out (here the file's largest, answered "not found"). Now every install
    /// checks the bounds against the file, as `lookup verify` does.
    @Test func anInstallRefusesBoundsThatHideEntries() throws {
        let dir = TempDir()
        let entries = (0..<50).map { Entry(number: 79_000_000_000 + UInt64($0) * 13, label: "e\($0)") }
        try writeBuildDirectory(dir.path("set"), [DirectoryTestFile(name: "a.cid", region: "a", entries: entries)])
        let manifest = dir.path("set/manifest.json")
        let text = try String(contentsOfFile: manifest, encoding: .utf8)
        try text.replacingOccurrences(of: "\"first_number\": null, \"last_number\": null",
                                      with: "\"first_number\": \(entries[0].number), \"last_number\": \(entries[48].number)")
            .write(toFile: manifest, atomically: true, encoding: .utf8)
        let store = try InstalledStore(path: dir.path("store"))
        #expect { try store.install(from: dir.path("set")) } throws: {
            ($0 as? DirectoryError)?.code == .badManifest && "\($0)".contains("last_number \(entries[48].number), but the file holds \(entries[49].number)")
        }
        #expect { try store.installSource("a", from: dir.path("set")) } throws: { ($0 as? DirectoryError)?.code == .badManifest }
        #expect(try store.current() == nil)
    }

    /// A store installed without sources keeps working: a source joining it keeps the set as
    /// source `default`, and an install without --source replaces every source, as before.
    @Test func aStoreInstalledWithoutSourcesBecomesSourceDefault() throws {
        let fx = try TwoPublishers()
        let plain = fx.dir.path("web/city")
        #expect(try fx.run(["install", "--store", fx.store, plain]).status == 0)
        var r = try fx.run(["store", "list", "--store", fx.store, "--json"])
        let implicit = try #require((try json(r)["sources"] as? [[String: Any]])?.first)
        #expect(implicit["name"] as? String == "default" && implicit["implicit"] as? Bool == true)

        r = try fx.run(["fetch", fx.blocks, "--store", fx.store, "--trust", fx.dir.path("b.pub"), "--source", "blocks", "--priority", "1", "--json"])
        #expect(r.status == 0, "\(r.stdout)")
        #expect(try json(r)["files_reused"] as? Int == 0)
        let defaults = ModelSource(name: "default", regions: cityRegions(version: 1), subscribed: cityRegions(version: 1).map(\.name))
        let blocks = ModelSource(name: "blocks", regions: try blockList(), subscribed: ["spam"])
        try expectAnswers(fx.store, [blocks, defaults])
        let gen = try #require(try InstalledStore(path: fx.store).current())
        #expect(FileManager.default.fileExists(atPath: gen.path + "/default.r01.cid"))
        // Hard links: the set's files were not copied.
        var old = stat(), new = stat()
        stat(fx.store + "/gen-1/r01.cid", &old)
        stat(gen.path + "/default.r01.cid", &new)
        #expect(old.st_ino == new.st_ino)

        // Unknown regions and sources are usage errors; nothing changes.
        #expect(try fx.run(["fetch", fx.city, "--store", fx.store, "--trust", fx.dir.path("a.pub"), "--source", "city", "--regions", "r99"]).status == 64)
        #expect(try fx.run(["store", "remove", "--store", fx.store, "--source", "nope"]).status == 64)
        #expect(try fx.run(["install", "--store", fx.store, plain, "--regions", "r01"]).status == 64)

        // An install without --source replaces the set, sources and all.
        #expect(try fx.run(["install", "--store", fx.store, plain]).status == 0)
        let now = try #require(try InstalledStore(path: fx.store).current())
        #expect(!FileManager.default.fileExists(atPath: now.path + "/sources.json"))
        try expectAnswers(fx.store, [defaults])
    }
}
