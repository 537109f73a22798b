import Foundation
import Testing
@testable import CallerID
@testable import CallerIDDirectory

/// The installed store: verified, staged, atomic installs that never lose the set in use.
@Suite struct DirectoryStoreTests {
    static func files(_ version: Int) -> [DirectoryTestFile] {
        let spam = try! Category("spam", action: .block)
        return [
            DirectoryTestFile(name: "moscow-1.cid", region: "moscow", entries: (0..<500).map {
                Entry(number: 7_495_000_0000 + UInt64($0 * 7), label: "M\($0) v\(version)", category: $0 % 5 == 0 ? spam : .identify)
            }),
            DirectoryTestFile(name: "kazan-1.cid", region: "kazan", entries: (0..<300).map {
                Entry(number: 7_843_000_0000 + UInt64($0 * 3), label: "K\($0)")
            }),
        ]
    }

    /// Full load of slot 0 of the store's current generation into a fresh simulator.
    static func loadAll(_ store: InstalledStore) throws -> (identification: [(UInt64, String)], blocking: [UInt64]) {
        let sim = CallDirectorySimulator()
        var cursor: LoadCursor? = nil
        try feedUntilComplete(try DirectoryFeeder(store: store, slot: 0), sim, cursor: &cursor)
        return simulatorLists(sim)
    }

    @Test func installSwitchesAndKeepsThePreviousGeneration() throws {
        let dir = TempDir()
        let store = try InstalledStore(path: dir.path("store"))
        #expect(try store.current() == nil)
        try writeBuildDirectory(dir.path("v1"), Self.files(1))
        let r1 = try store.install(from: dir.path("v1"))
        #expect(r1.generation.id == 1 && r1.previous == nil && r1.copiedFiles == 2 && r1.linkedFiles == 0)
        #expect(r1.changes.added == ["kazan", "moscow"])
        #expect(try store.current() == r1.generation)
        #expect(sameLists(try Self.loadAll(store), expectedLists(Self.files(1))))

        // v2 changes moscow only: kazan is hard-linked, moscow copied.
        var v2 = Self.files(2)
        v2[1] = Self.files(1)[1]
        try writeBuildDirectory(dir.path("v2"), v2)
        let r2 = try store.install(from: dir.path("v2"))
        #expect(r2.generation.id == 2 && r2.previous?.id == 1)
        #expect(r2.linkedFiles == 1 && r2.copiedFiles == 1)
        #expect(r2.changes.changed == ["moscow"] && r2.changes.unchanged == ["kazan"])
        #expect(try store.previous()?.id == 1)
        #expect(FileManager.default.fileExists(atPath: dir.path("store/gen-1/moscow-1.cid")))
        #expect(sameLists(try Self.loadAll(store), expectedLists(v2)))

        // v3: generation 1 goes, 2 stays as the previous one.
        try writeBuildDirectory(dir.path("v3"), Self.files(3))
        let r3 = try store.install(from: dir.path("v3"))
        #expect(r3.generation.id == 3 && r3.previous?.id == 2)
        #expect(!FileManager.default.fileExists(atPath: dir.path("store/gen-1")))
        #expect(store.generation(2) != nil && store.generation(1) == nil)
        #expect(try FileSystem.list(dir.path("store")).filter { $0.hasPrefix(".staging") }.isEmpty)
    }

    enum Damage: String, CaseIterable {
        case flippedByte, truncated, validHashBadContent, missingFile, badManifest, extendedFile
    }

    @Test(arguments: Damage.allCases)
    func aDamagedSetLeavesThePreviousSetInPlaceAndInUse(_ damage: Damage) throws {
        let dir = TempDir()
        let store = try InstalledStore(path: dir.path("store"))
        try writeBuildDirectory(dir.path("v1"), Self.files(1))
        try store.install(from: dir.path("v1"))
        let pointer = try Data(contentsOf: URL(fileURLWithPath: dir.path("store/CURRENT")))
        let before = try Self.loadAll(store)

        let bad = dir.path("v2")
        try writeBuildDirectory(bad, Self.files(2))
        let victim = bad + "/moscow-1.cid"
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: victim)))
        switch damage {
        case .flippedByte:
            bytes[bytes.count / 2] ^= 0x40
            try Data(bytes).write(to: URL(fileURLWithPath: victim))
        case .truncated:
            try Data(bytes[..<(bytes.count - 100)]).write(to: URL(fileURLWithPath: victim))
        case .extendedFile:
            try Data(bytes + [0]).write(to: URL(fileURLWithPath: victim))
        case .validHashBadContent:
            // The manifest agrees with the damaged file: only the database check catches it.
            bytes[bytes.count / 2] ^= 0x40
            try Data(bytes).write(to: URL(fileURLWithPath: victim))
            let manifest = try String(contentsOfFile: bad + "/manifest.json", encoding: .utf8)
            let listed = try DirectoryManifest.read(directory: bad).files[0].xxh3
            let fixed = manifest.replacingOccurrences(of: hex16(listed), with: hex16(try Checksum.xxh3(fileAt: victim)))
            #expect(fixed != manifest)
            try Data(fixed.utf8).write(to: URL(fileURLWithPath: bad + "/manifest.json"))
        case .missingFile:
            try FileManager.default.removeItem(atPath: victim)
        case .badManifest:
            try Data("{\"files\": [".utf8).write(to: URL(fileURLWithPath: bad + "/manifest.json"))
        }
        #expect { try store.install(from: bad) } throws: { error in
            guard let e = error as? DirectoryError else { return false }
            switch damage {
            case .missingFile: return e.code == .fileNotFound
            case .badManifest: return e.code == .badManifest
            case .validHashBadContent: return e.code == .corrupt && e.message.contains("moscow-1.cid") && e.message.contains("damaged database")
            default: return e.code == .corrupt && e.message.contains("moscow-1.cid")
            }
        }
        // Same pointer, same generation, same lists; no staging left behind.
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.path("store/CURRENT"))) == pointer)
        #expect(try store.current()?.id == 1)
        #expect(sameLists(try Self.loadAll(store), before))
        #expect(FileSystem.list(dir.path("store")).sorted() == [".lock", "CURRENT", "gen-1"])
        // And the next good install works.
        try writeBuildDirectory(dir.path("v3"), Self.files(3))
        #expect(try store.install(from: dir.path("v3")).generation.id == 2)
    }

    @Test func settingsUpdateIsANewGenerationOfLinkedFiles() throws {
        let dir = TempDir()
        let store = try InstalledStore(path: dir.path("store"))
        try writeBuildDirectory(dir.path("v1"), Self.files(1))
        try store.install(from: dir.path("v1"))
        let blocked = expectedLists(Self.files(1)).blocking
        var settings = try store.settings()
        settings.allowList = [blocked[0], blocked[3]]
        settings.rules = [try BlockingRule("+7 843 000 00 #")]
        let r = try store.updateSettings(settings)
        #expect(r.generation.id == 2 && r.linkedFiles == 2 && r.copiedFiles == 0 && r.changes.isEmpty)
        #expect(try store.settings() == settings)
        #expect(sameLists(try Self.loadAll(store), expectedLists(Self.files(1), settings: settings)))
        // The next data install keeps the settings.
        try writeBuildDirectory(dir.path("v2"), Self.files(2))
        #expect(try store.install(from: dir.path("v2")).settings == settings)
    }

    @Test func aSetOverTheBudgetIsRefused() throws {
        let dir = TempDir()
        let store = try InstalledStore(path: dir.path("store"))
        try writeBuildDirectory(dir.path("v1"), Self.files(1))
        try store.install(from: dir.path("v1"))
        var small = FeedSettings()
        small.maxEntries = 400
        #expect { try store.install(from: dir.path("v1"), settings: small) } throws: {
            ($0 as? DirectoryError)?.code == .budgetExceeded && "\($0)".contains("800 entries")
        }
        small.slots = 2
        let r = try store.install(from: dir.path("v1"), settings: small)
        #expect(r.plan.slots.count == 2 && r.plan.slots.allSatisfy { $0.count <= 400 })
        #expect(try store.current()?.id == 2)
    }

    /// What a crash can leave behind (a staging folder, a generation renamed but never made
    /// current, a damaged pointer) never blocks the next install, which cleans it up.
    @Test func leftoversOfACrashAreCleanedByTheNextInstall() throws {
        let dir = TempDir()
        let store = try InstalledStore(path: dir.path("store"))
        try writeBuildDirectory(dir.path("v1"), Self.files(1))
        try store.install(from: dir.path("v1"))
        try FileManager.default.createDirectory(atPath: dir.path("store/.staging-2"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: dir.path("store/gen-1"), toPath: dir.path("store/gen-5"))
        #expect(try store.current()?.id == 1)   // a stray generation is not in use
        let r = try store.install(from: dir.path("v1"))
        #expect(r.generation.id == 6 && r.previous?.id == 1)
        #expect(FileSystem.list(dir.path("store")).sorted() == [".lock", "CURRENT", "gen-1", "gen-6"])

        try Data("current 42\n".utf8).write(to: URL(fileURLWithPath: dir.path("store/CURRENT")))
        #expect { try store.current() } throws: { ($0 as? DirectoryError)?.code == .badManifest }
        let repaired = try store.install(from: dir.path("v1"))
        #expect(repaired.generation.id == 7 && repaired.previous == nil)
        #expect(sameLists(try Self.loadAll(store), expectedLists(Self.files(1))))
    }

    @Test func changedRegionsComparesHashes() {
        func file(_ name: String, _ region: String?, _ hash: UInt64) -> DirectoryManifest.File {
            DirectoryManifest.File(file: name, region: region, bytes: 10, xxh3: hash)
        }
        let old = DirectoryManifest(files: [file("a-1", "a", 1), file("a-2", "a", 2), file("b-1", "b", 3), file("c-1", "c", 4)])
        let new = DirectoryManifest(files: [file("a-1", "a", 1), file("a-2", "a", 2), file("b-1", "b", 9), file("d-1", "d", 5)])
        let c = changedRegions(old, new)
        #expect(c.added == ["d"] && c.removed == ["c"] && c.changed == ["b"] && c.unchanged == ["a"])
        #expect(changedRegions(nil, new).added == ["a", "b", "d"])
        #expect(changedRegions(new, new).isEmpty)
    }
}
