import Foundation
import Testing
@testable import CallerID
@testable import CallerIDDirectory

// Setting up a store by fetching a set larger than one extension, and repairing a store whose
// current generation lost a file, from the command line.

@Suite struct StoreSetupAndRepairTests {
    /// Before: `lookup fetch` had no `--slots`, so a new store could not take a set larger than
    /// one extension; `install --store S --slots 3` without a build directory failed "nothing
    /// installed yet"; and the retry reported the files the failed attempt had downloaded as
    /// "fetched".
    @Test func aFetchSetsUpANewStoreForASetLargerThanOneExtension() throws {
        let fx = try FetchFixture()
        try fx.publish("v1", version: 1)   // 900 entries
        let small = ["--max-entries", "500"]
        let r = try fx.fetch("v1", small)
        #expect(r.status == 65, "\(r.stdout)")
        #expect(r.stdout.contains("2 needed") && r.stdout.contains("--slots"), "\(r.stdout)")
        #expect(!FileManager.default.fileExists(atPath: fx.store + "/CURRENT"))

        let install = try lookup(["install", "--store", fx.store, "--slots", "2"])
        #expect(install.status == 66)
        #expect(install.stderr.contains("nothing installed yet") && install.stderr.contains("lookup fetch"), "\(install.stderr)")

        _ = fx.server.takeRequests()
        let retry = try fx.fetch("v1", small + ["--slots", "2"])
        #expect(retry.status == 0, "\(retry.stdout)")
        let j = try fx.json(retry)
        #expect(j["fetched"] as? [String] == [] && j["files_cached"] as? Int == 3, "\(retry.stdout)")
        #expect(fx.server.takeRequests().map { $0.split(separator: " ")[0] } == ["v1/manifest.json", "v1/manifest.json.sig"])
        let plan = try InstalledStore(path: fx.store).plan()
        #expect(plan.slots.count == 2 && plan.maxEntries == 500)

        // Up to date, with other settings: the same data installed again with them.
        let three = try fx.fetch("v1", ["--slots", "3"])
        #expect(three.status == 0, "\(three.stdout)")
        #expect(try fx.json(three)["up_to_date"] as? Bool == true)
        #expect(try InstalledStore(path: fx.store).plan().slots.count == 3)
        #expect(try fx.current() == (2, "1"))
    }

    /// Before: one file deleted from the current generation failed every slot's feed with 66
    /// although the previous generation held the file, and `lookup install --store S` failed
    /// the same way instead of repairing the store.
    @Test func aFileLostFromTheCurrentGenerationIsRepairedFromThePreviousOneOrFetchedAgain() throws {
        let fx = try FetchFixture()
        try fx.publish("v1", version: 1)
        try fx.publish("v2", version: 2)   // kazan changed; moscow and omsk hard-linked from generation 1
        #expect(try fx.fetch("v1").status == 0)
        #expect(try fx.fetch("v2").status == 0)
        try FileManager.default.removeItem(atPath: fx.store + "/gen-2/moscow.cid")

        let feed = try lookup(["feed", "--store", fx.store])
        #expect(feed.status == 66)
        #expect(feed.stderr.contains("gen-2/moscow.cid") && feed.stderr.contains("lookup install --store"), "\(feed.stderr)")

        let repair = try lookup(["install", "--store", fx.store, "--json"])
        #expect(repair.status == 0, "\(repair.stdout)\(repair.stderr)")
        let j = try #require(try JSONSerialization.jsonObject(with: repair.stdoutData) as? [String: Any])
        #expect(j["repaired"] as? [String] == ["moscow.cid"])
        #expect(try fx.current() == (3, "2"))
        #expect(try lookup(["feed", "--store", fx.store]).status == 0)

        // Lost from the current and the previous generation: the error says to fetch, and a
        // fetch of the installed set downloads only that file.
        try FileManager.default.removeItem(atPath: fx.store + "/gen-3/kazan.cid")
        try FileManager.default.removeItem(atPath: fx.store + "/gen-2/kazan.cid")
        let cannot = try lookup(["install", "--store", fx.store])
        #expect(cannot.status == 66)
        #expect(cannot.stderr.contains("no copy of kazan.cid") && cannot.stderr.contains("lookup fetch"), "\(cannot.stderr)")
        _ = fx.server.takeRequests()
        let fetched = try fx.fetch("v2")
        #expect(fetched.status == 0, "\(fetched.stdout)")
        #expect(try fx.json(fetched)["fetched"] as? [String] == ["kazan.cid"])
        #expect(fx.server.takeRequests().map { $0.split(separator: " ")[0] } == ["v2/manifest.json", "v2/manifest.json.sig", "v2/kazan.cid"])
        #expect(try fx.current() == (4, "2"))
        #expect(try lookup(["feed", "--store", fx.store]).status == 0)
    }

    /// Before: a file damaged in place in the store (same size, other bytes) was taken as the
    /// current generation's copy by every later fetch of a set that held it, and the install
    /// refused the set (65, "XXH3 … differs … (damaged file)"); a fetch of the installed set
    /// called it up to date. No fetch could get past the damage.
    @Test func aFileDamagedInTheStoreIsDownloadedAgainByTheNextFetch() throws {
        let (fx, _) = try FetchFixture.fetchedV1()
        func damage(_ file: String) throws {
            var bytes = try bytesOf(file)
            bytes[bytes.count / 2] ^= 0x20
            try Data(bytes).write(to: URL(fileURLWithPath: file))   // in place: the same inode
        }
        try damage(fx.store + "/gen-1/moscow.cid")
        let install = try lookup(["install", "--store", fx.store])
        #expect(install.status == 65)
        #expect(install.stderr.contains("moscow.cid") && install.stderr.contains("lookup fetch"), "\(install.stderr)")
        let same = try fx.fetch("v1")
        #expect(same.status == 0, "\(same.stdout)")
        #expect(try fx.json(same)["fetched"] as? [String] == ["moscow.cid"])
        #expect(try fx.current() == (2, "1"))

        try damage(fx.store + "/gen-2/omsk.cid")
        let next = try fx.fetch("v2")
        #expect(next.status == 0, "\(next.stdout)")
        #expect((try fx.json(next)["fetched"] as? [String])?.sorted() == ["kazan.cid", "omsk.cid"])
        #expect(try fx.current() == (3, "2"))
    }
}
