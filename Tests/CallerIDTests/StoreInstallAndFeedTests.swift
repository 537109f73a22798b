import Foundation
import Testing
@testable import CallerID
@testable import CallerIDDirectory

/// The Call Directory store, install and feed under attack and in daily use.
@Suite struct StoreInstallAndFeedTests {
    /// Two regions whose labels and sizes carry the version, so that what is fed tells which
    /// generation it came from.
    static func files(_ version: Int, count: Int = 120) -> [DirectoryTestFile] {
        let spam = try! Category("spam", action: .block)
        return [
            DirectoryTestFile(name: "a-1.cid", region: "a", entries: (0..<(count + version * 7)).map {
                Entry(number: 79_130_000_000 + UInt64($0 * 10), label: "A\($0) v\(version)", category: $0 % 9 == 0 ? spam : .identify)
            }),
            DirectoryTestFile(name: "b-1.cid", region: "b", entries: (0..<(count / 2 + version)).map {
                Entry(number: 44_200_000_000 + UInt64($0), label: "B\($0) v\(version)")
            }),
        ]
    }

    // MARK: DatabaseSet

    @Test func databaseSetResolvesFilesBuildDirectoriesAndStores() throws {
        let dir = TempDir()
        try writeBuildDirectory(dir.path("v1"), Self.files(1))
        try writeBuildDirectory(dir.path("v2"), Self.files(2))

        let build = try DatabaseSet.resolve(path: dir.path("v1"))
        #expect(build.kind == .buildDirectory && build.generation == nil)
        #expect(build.files == [dir.path("v1") + "/a-1.cid", dir.path("v1") + "/b-1.cid"])
        #expect(try DatabaseSet.resolve(path: dir.path("v1") + "/").files == build.files)

        let file = try DatabaseSet.resolve(path: dir.path("v1/b-1.cid"))
        #expect(file.kind == .file && file.files == [dir.path("v1/b-1.cid")] && file.manifest == nil)

        let store = try InstalledStore(path: dir.path("store"))
        try store.install(from: dir.path("v1"))
        try store.install(from: dir.path("v2"))
        let set = try DatabaseSet.resolve(path: dir.path("store"))
        #expect(set.kind == .store && set.generation == 2)
        #expect(set.files == [dir.path("store") + "/gen-2/a-1.cid", dir.path("store") + "/gen-2/b-1.cid"])
        // The files listed are those of the generation named, and they open.
        for (path, f) in zip(set.files, Self.files(2)) {
            #expect(try Database(path: path).count == f.entries.count)
        }

        for missing in [dir.path("nope"), dir.path("empty")] {
            if missing.hasSuffix("empty") { try FileManager.default.createDirectory(atPath: missing, withIntermediateDirectories: true) }
            #expect { try DatabaseSet.resolve(path: missing) } throws: { ($0 as? DirectoryError)?.code == .fileNotFound }
        }
    }

    // MARK: A feed pins one generation

    /// Feeds every slot of a pinned generation through fresh simulators; the lists fed and the
    /// per-slot counts.
    static func feedAll(_ pinned: InstalledGeneration) throws -> (lists: (identification: [(UInt64, String)], blocking: [UInt64]), counts: [Int]) {
        var ids: [(UInt64, String)] = [], blocks: [UInt64] = [], counts: [Int] = []
        for slot in pinned.plan.slots.indices {
            let sim = CallDirectorySimulator(maxEntries: pinned.plan.maxEntries)
            var cursor: LoadCursor? = nil
            try feedUntilComplete(try DirectoryFeeder(pinned, slot: slot), sim, cursor: &cursor, chunk: 50)
            let l = simulatorLists(sim)
            ids += l.identification
            blocks += l.blocking
            counts.append(sim.count)
        }
        return ((ids, blocks), counts)
    }

    /// The generation pinned before two installs is what is fed after them, slot plan included,
    /// even though its folder is gone by then.
    @Test func aFeedSendsThePinnedGenerationAfterLaterInstalls() throws {
        let dir = TempDir()
        var settings = FeedSettings()
        settings.slots = 2
        let store = try InstalledStore(path: dir.path("store"))
        for v in 1...3 { try writeBuildDirectory(dir.path("v\(v)"), Self.files(v, count: 200 * v), datasetVersion: "v\(v)") }
        try store.install(from: dir.path("v1"), settings: settings)

        let pinned = try store.pin()
        #expect(pinned.id == 1 && pinned.manifest.datasetVersion == "v1" && pinned.previous == nil)
        try store.install(from: dir.path("v2"))
        try store.install(from: dir.path("v3"))
        #expect(!FileManager.default.fileExists(atPath: pinned.generation.path))   // generation 1 is gone

        let fed = try Self.feedAll(pinned)
        #expect(sameLists(fed.lists, expectedLists(Self.files(1, count: 200), settings: settings)))
        #expect(fed.counts == pinned.plan.slots.map(\.count))
        // The store's current generation is another set, with another plan.
        let now = try store.pin()
        #expect(now.id == 3 && now.previous?.id == 2 && now.plan != pinned.plan)
        #expect(sameLists(try Self.feedAll(now).lists, expectedLists(Self.files(3, count: 600), settings: settings)))
        // A plan made anew is made from the pinned generation's own entries.
        let one = try pinned.replanned(slots: 1, maxEntries: 1_999_999)
        #expect(one.plan.slots.map(\.count) == [fed.counts.reduce(0, +)] && one.id == pinned.id)
    }

    /// Two installers and a feeder at once: every feed is exactly one installed version (its
    /// entries and its own plan's slot counts). Bounded: 2 × 6 installs of small sets.
    @Test func feedsRacingTwoInstallersNeverMixGenerations() throws {
        let dir = TempDir()
        var settings = FeedSettings()
        settings.slots = 2
        let store = try InstalledStore(path: dir.path("store"))
        let versions = 1...4
        var expected: [String: (identification: [(UInt64, String)], blocking: [UInt64])] = [:]
        for v in versions {
            try writeBuildDirectory(dir.path("v\(v)"), Self.files(v, count: 60 * v), datasetVersion: "v\(v)")
            expected["v\(v)"] = expectedLists(Self.files(v, count: 60 * v), settings: settings)
        }
        try store.install(from: dir.path("v1"), settings: settings)

        let builds = versions.map { dir.path("v\($0)") }
        let failures = StoreFeedLocked<[String]>([])
        let installing = StoreFeedLocked(2)
        let group = DispatchGroup()
        for installer in 0..<2 {
            onThread(in: group) {
                for i in 0..<6 {
                    let v = (installer * 2 + i) % versions.count + 1
                    do { try store.install(from: builds[v - 1]) } catch { failures.update { $0.append("install: \(error)") } }
                }
                installing.update { $0 -= 1 }
            }
        }
        var feeds = 0
        repeat {
            do {
                let pinned = try store.pin()
                let fed = try Self.feedAll(pinned)
                let version = pinned.manifest.datasetVersion ?? "?"
                if !sameLists(fed.lists, expected[version] ?? ([], [])) || fed.counts != pinned.plan.slots.map(\.count) {
                    failures.update { $0.append("generation \(pinned.id) (\(version)): fed \(fed.counts), plan \(pinned.plan.slots.map(\.count))") }
                }
            } catch {
                failures.update { $0.append("feed: \(error)") }
            }
            feeds += 1
        } while installing.value > 0 && feeds < 500
        group.wait()
        #expect(failures.value.isEmpty, "\(failures.value.prefix(5))")
        #expect(feeds >= 1)
        #expect(try store.current()?.id == 13)
    }

    // MARK: CallKit's cap

    @Test func theSimulatorEnforcesCallKitsCap() throws {
        #expect(CallDirectorySimulator.callKitMaximumEntries == 1_999_999)
        #expect(CallDirectorySimulator(maxEntries: 3_000_000).maxEntries == 1_999_999)
        #expect(CallDirectorySimulator(maxEntries: 3_000_000, systemCap: 3_000_000).maxEntries == 3_000_000)
        // A budget above the system's cap fails where the system's cap is reached.
        let sim = CallDirectorySimulator(maxEntries: 50, systemCap: 10)
        try sim.beginRequest()
        for i in 1...11 { sim.addBlockingEntry(Int64(79_000_000_000 + i)) }
        #expect { try sim.complete() } throws: { ($0 as? CallDirectoryError)?.code == .maximumEntriesExceeded }
    }

    @Test func installRefusesABudgetAboveCallKitsCap() throws {
        let dir = TempDir()
        try writeBuildDirectory(dir.path("v1"), Self.files(1))
        let store = try InstalledStore(path: dir.path("store"))
        var settings = FeedSettings()
        settings.maxEntries = 3_000_000
        #expect { try store.install(from: dir.path("v1"), settings: settings) } throws: {
            ($0 as? DirectoryError)?.code == .invalidArgument && "\($0)".contains("1,999,999")
        }
        #expect(!FileManager.default.fileExists(atPath: dir.path("store")))
        let cli = try lookup(["install", "--store", dir.path("store"), dir.path("v1"), "--max-entries", "3000000"])
        #expect(cli.status == 64 && cli.stderr.contains("1,999,999"))
        #expect(!FileManager.default.fileExists(atPath: dir.path("store")))
    }

    @Test func feedReportsCallKitsErrorForABudgetAboveTheSystemCap() throws {
        let dir = TempDir()
        try writeBuildDirectory(dir.path("v1"), Self.files(1))
        let store = dir.path("store")
        #expect(try lookup(["install", "--store", store, dir.path("v1")]).status == 0)
        let total = expectedLists(Self.files(1)).identification.count + expectedLists(Self.files(1)).blocking.count
        // An OS whose cap is below the set: the budget asked for is not granted.
        for simulate in [true, false] {
            let r = try lookup(["feed", "--store", store, "--max-entries", "3000000", "--model-os-cap", "\(total - 1)", "--json"]
                               + (simulate ? ["--simulate"] : []))
            #expect(r.status == 65)
            let j = try #require(try jsonObjects(r.stdout).first)
            #expect((j["error"] as? [String: Any])?["code"] as? Int == 5 && j["max_entries"] as? Int == total - 1)
            #expect((j["note"] as? String)?.contains("above the system's cap") == true)
        }
        // Without the flag the cap is CallKit's.
        let ok = try lookup(["feed", "--store", store, "--max-entries", "3000000", "--simulate", "--json"])
        let okMax = try jsonObjects(ok.stdout).first?["max_entries"] as? Int
        #expect(ok.status == 0 && okMax == 1_999_999)
    }

    // MARK: No empty request when the chunks divide the entries exactly

    @Test(arguments: [1, 2, 3, 5])
    func chunksThatDivideExactlyTakeNoExtraRequest(_ parts: Int) throws {
        let files = Self.files(1, count: 150)
        let dir = TempDir()
        try writeBuildDirectory(dir.path("v1"), files)
        let snapshot = try DirectorySnapshot(directory: dir.path("v1"))
        let expected = expectedLists(files)
        let total = expected.identification.count + expected.blocking.count
        // Make the total divisible by `parts` by feeding a range that drops a few numbers.
        let all = (expected.identification.map(\.0) + expected.blocking).sorted()
        let keep = total - total % parts
        let range: Range<UInt64> = 0..<(keep == total ? UInt64.max : all[keep])
        let count = all.filter { range.contains($0) }.count
        try #require(count % parts == 0)
        let feeder = DirectoryFeeder(target: snapshot, generation: 1, range: range) { _ in nil }
        let sim = CallDirectorySimulator()
        var cursor: LoadCursor? = nil
        let requests = try feedUntilComplete(feeder, sim, cursor: &cursor, chunk: count / parts)
        #expect(requests == parts && sim.count == count)
        // One more entry than a multiple takes one more request, which is not empty.
        let sim2 = CallDirectorySimulator()
        var c2: LoadCursor? = nil
        #expect(try feedUntilComplete(feeder, sim2, cursor: &c2, chunk: max(1, (count - 1) / parts)) > parts || count / parts == 1)
    }

    @Test func aDeltaThatFillsItsChunkCompletesInOneRequest() throws {
        let dir = TempDir()
        let store = try InstalledStore(path: dir.path("store"))
        var v2 = Self.files(1)
        v2[1].entries[3].label = "changed"                 // one removal + one addition
        v2[1].entries.removeLast()                          // one removal
        try writeBuildDirectory(dir.path("v1"), Self.files(1))
        try writeBuildDirectory(dir.path("v2"), v2)
        try store.install(from: dir.path("v1"))
        let sim = CallDirectorySimulator()
        var cursor: LoadCursor? = nil
        try feedUntilComplete(try DirectoryFeeder(store: store, slot: 0), sim, cursor: &cursor)
        try store.install(from: dir.path("v2"))
        try sim.beginRequest()
        let r = try DirectoryFeeder(store: store, slot: 0).serve(sim, cursor: cursor, chunk: 3)
        try sim.complete()
        #expect(r.mode == .delta && r.calls == 3 && r.isComplete)
        #expect(sameLists(simulatorLists(sim), expectedLists(v2)))
    }

    @Test func feedChunkEqualToTheEntriesIsOneRequest() throws {
        let dir = TempDir()
        try writeBuildDirectory(dir.path("v1"), Self.files(1))
        let store = dir.path("store")
        #expect(try lookup(["install", "--store", store, dir.path("v1")]).status == 0)
        let e = expectedLists(Self.files(1))
        let total = e.identification.count + e.blocking.count
        for (chunk, requests) in [(total, 1), (total / 2 + total % 2, 2), (total - 1, 2)] {
            for simulate in [[], ["--simulate"]] {
                let r = try lookup(["feed", "--store", store, "--chunk", "\(chunk)", "--json"] + simulate)
                let j = try #require(try jsonObjects(r.stdout).first)
                #expect(r.status == 0 && j["requests"] as? Int == requests, "chunk \(chunk) \(simulate)")
            }
        }
    }

    // MARK: Install's bad categories and rules are usage errors

    @Test func installNamesTheKnownCategoriesAndTreatsHugeRulesAsBad() throws {
        let dir = TempDir()
        try writeBuildDirectory(dir.path("v1"), Self.files(1))
        let store = dir.path("store")
        #expect(try lookup(["install", "--store", store, dir.path("v1")]).status == 0)
        let bad = try lookup(["install", "--store", store, "--block-categories", "nosuch"])
        #expect(bad.status == 64 && bad.stderr.contains("'nosuch'") && bad.stderr.contains("spam"), "\(bad.stderr)")
        let mixed = try lookup(["install", "--store", store, dir.path("v1"), "--block-categories", "spam,Typo"])
        #expect(mixed.status == 64 && mixed.stderr.contains("'typo'") && !mixed.stderr.contains("'spam'"))
        #expect(try lookup(["install", "--store", store, "--block-categories", "spam"]).status == 0)
        #expect(try lookup(["install", "--store", store, "--block-categories", "all"]).status == 0)
        for rule in ["+1##############", "+1 ### ### ####", "1..99999999999"] {
            let r = try lookup(["install", "--store", store, "--rule", rule])
            #expect(r.status == 64 && r.stderr.contains("more than any extension holds"), "\(rule): \(r.status) \(r.stderr)")
        }
        // Within CallKit's cap but over this store's budget: a budget matter (65).
        let over = try lookup(["install", "--store", store, "--max-entries", "1000", "--rule", "+7 913 ### ##"])
        #expect(over.status == 65)
        #expect(try InstalledStore(path: store).current()?.id == 3)
    }

    // MARK: What install is given

    @Test func installChecksItsSourceBeforeCreatingTheStore() throws {
        let dir = TempDir()
        try writeBuildDirectory(dir.path("v1"), Self.files(1))
        let missing = try lookup(["install", "--store", dir.path("new"), dir.path("missingdir")])
        #expect(missing.status == 66 && missing.stderr.contains("missingdir"))
        #expect(!FileManager.default.fileExists(atPath: dir.path("new")))

        let single = try lookup(["install", "--store", dir.path("new"), dir.path("v1/a-1.cid")])
        #expect(single.status == 64 && single.stderr.contains("single database file") && !single.stderr.contains("no manifest.json"), "\(single.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.path("new")))

        try FileManager.default.createDirectory(atPath: dir.path("plain"), withIntermediateDirectories: true)
        let plain = try lookup(["install", "--store", dir.path("new"), dir.path("plain")])
        #expect(plain.status == 66 && plain.stderr.contains("no manifest.json"))
        #expect(!FileManager.default.fileExists(atPath: dir.path("new")))
    }

    @Test func aDamagedDownloadIsReportedUnderTheUsersPath() throws {
        let dir = TempDir()
        let store = try InstalledStore(path: dir.path("store"))
        try writeBuildDirectory(dir.path("good"), Self.files(1))
        try store.install(from: dir.path("good"))
        for damage in ["flip", "validHash"] {
            let bad = dir.path("bad-\(damage)")
            try writeBuildDirectory(bad, Self.files(2))
            let victim = bad + "/a-1.cid"
            var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: victim)))
            bytes[bytes.count / 2] ^= 0x40
            try Data(bytes).write(to: URL(fileURLWithPath: victim))
            if damage == "validHash" {
                let manifest = try String(contentsOfFile: bad + "/manifest.json", encoding: .utf8)
                let listed = try DirectoryManifest.read(directory: bad).files[0].xxh3
                try Data(manifest.replacingOccurrences(of: hex16(listed), with: hex16(try Checksum.xxh3(fileAt: victim))).utf8)
                    .write(to: URL(fileURLWithPath: bad + "/manifest.json"))
            }
            #expect { try store.install(from: bad) } throws: { e in
                let m = "\(e)"
                return (e as? DirectoryError)?.code == .corrupt && m.contains(victim) && !m.contains(".staging")
            }
            let cli = try lookup(["install", "--store", dir.path("store"), bad])
            #expect(cli.status == 65 && cli.stderr.contains(victim) && !cli.stderr.contains(".staging"), "\(cli.stderr)")
        }
    }

    // MARK: feed --json fails in JSON

    @Test func feedJSONFailuresAreOneJSONObject() throws {
        let dir = TempDir()
        try writeBuildDirectory(dir.path("v1"), Self.files(1))
        let store = dir.path("store")
        try FileManager.default.createDirectory(atPath: dir.path("empty"), withIntermediateDirectories: true)
        var cases: [([String], Int32, String)] = [
            (["feed", "--store", dir.path("nope"), "--json"], 66, "file-not-found"),
            (["feed", "--store", dir.path("empty"), "--json"], 66, "file-not-found"),
            (["feed", "--json"], 64, "usage"),
            (["feed", "--store", store, "--json", "--chunk", "0"], 64, "usage"),
            (["feed", "--store", store, "--json", "--bogus"], 64, "usage"),
            (["install", "--store", store, dir.path("nope"), "--json"], 66, "file-not-found"),
        ]
        cases.append((["feed", "--store", store, "--slot", "3/2", "--json"], 64, "usage"))
        #expect(try lookup(["install", "--store", store, dir.path("v1")]).status == 0)
        try FileManager.default.createDirectory(atPath: dir.path("damaged"), withIntermediateDirectories: true)
        try Data("current 9\n".utf8).write(to: URL(fileURLWithPath: dir.path("damaged/CURRENT")))
        cases.append((["feed", "--store", dir.path("damaged"), "--json"], 65, "bad-manifest"))
        for (args, status, code) in cases {
            let r = try lookup(args)
            #expect(r.status == status && r.stderr.isEmpty, "\(args): \(r.status) \(r.stderr)")
            let objects = try jsonObjects(r.stdout)
            #expect(objects.count == 1, "\(args): \(r.stdout)")
            let error = objects.first?["error"] as? [String: Any]
            #expect(error?["code"] as? String == code && (error?["message"] as? String)?.isEmpty == false, "\(args): \(r.stdout)")
            #expect(objects.first?["exit_code"] as? Int == Int(status))
        }
    }
}

/// A value shared between threads behind a lock.
final class StoreFeedLocked<Value>: @unchecked Sendable {
    private var stored: Value
    private let lock = NSLock()
    init(_ value: Value) { stored = value }
    var value: Value { lock.lock(); defer { lock.unlock() }; return stored }
    func update(_ body: (inout Value) -> Void) { lock.lock(); defer { lock.unlock() }; body(&stored) }
}
