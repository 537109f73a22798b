import Foundation
import Testing
@testable import CallerID
@testable import CallerIDDirectory

/// Issue 11, helper A: the Call Directory store, install and feed under attack and in daily use.
@Suite struct StoreFeedRegressionTests {
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

    // MARK: DatabaseSet (item 15, the store part)

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
}
