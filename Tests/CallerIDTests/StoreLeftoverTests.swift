import Foundation
import Testing
@testable import CallerID
@testable import CallerIDDirectory

/// What a killed writer leaves in a store folder
/// (`.CURRENT.tmp-*` from the atomic writer, `*.dat.nosync*` from Foundation's atomic
/// `createFile` that earlier versions used) is removed by the next successful install, and
/// nothing else is touched.
@Suite struct StoreLeftoverTests {
    @Test func theNextInstallRemovesWhatKilledWritersLeft() throws {
        let dir = TempDir()
        try writeBuildDirectory(dir.path("v1"), StoreInstallAndFeedTests.files(1))
        try writeBuildDirectory(dir.path("v2"), StoreInstallAndFeedTests.files(2))
        let store = try InstalledStore(path: dir.path("store"))
        try store.install(from: dir.path("v1"))

        let leftovers = [".CURRENT.tmp-a1B2c3", ".CURRENT.tmp-4242", "CURRENT.dat.nosync1f2e", ".manifest.json.dat.nosyncA9"]
        let kept = ["notes.txt", "CURRENT.bak"]
        for name in leftovers + kept {
            #expect(FileManager.default.createFile(atPath: dir.path("store/" + name), contents: Data("x".utf8)))
        }
        try store.install(from: dir.path("v2"))

        let names = Set(try FileManager.default.contentsOfDirectory(atPath: dir.path("store")))
        for name in leftovers { #expect(!names.contains(name), "\(name) should be removed") }
        for name in kept { #expect(names.contains(name), "\(name) is not a leftover and must stay") }
        // The install itself left no temporary file, and the store reads the new generation.
        #expect(names.filter(FileSystem.isWriteLeftover).isEmpty)
        #expect(try store.pin().generation.id == 2)
    }

    @Test func storeFilesAreWrittenWithoutFoundationTemporaries() throws {
        let dir = TempDir()
        try writeBuildDirectory(dir.path("v1"), StoreInstallAndFeedTests.files(1))
        let store = try InstalledStore(path: dir.path("store"))
        try store.install(from: dir.path("v1"))
        let pointer = try String(contentsOfFile: dir.path("store/CURRENT"), encoding: .utf8)
        #expect(pointer == "current 1\n")
        let gen = try FileManager.default.contentsOfDirectory(atPath: dir.path("store/gen-1")).sorted()
        #expect(gen == ["a-1.cid", "b-1.cid", "manifest.json", "plan.json", "settings.json"])
    }
}
