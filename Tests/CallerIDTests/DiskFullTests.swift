import Foundation
import Testing
@testable import CallerID
@testable import CallerIDDirectory

// The disk fills up (`LOOKUP_TEST_DISK_FULL_AFTER`: `write(2)` fails with ENOSPC after that
// many bytes written to files) at every point of a fetch and an install, and under a running
// server's access log. Every command writes through one loop, so the seam reaches each of
// them; the build's spill is covered in BoundedBuildTests. A full disk must end with a message
// that says so and the previous generation intact and in use, never a half-installed one.

@Suite struct DiskFullTests {
    /// Runs `attempt` with the disk full after 0, 64, 128, … bytes until it succeeds; every
    /// failure must name the full disk and leave `unchanged` true. Returns the failures seen.
    private func fillTheDiskEverywhere(_ what: String, attempt: ([String: String]) throws -> CLIResult,
                                       unchanged: () throws -> Bool) throws -> Int {
        var limit = 0
        var failures = 0
        while true {
            let r = try attempt(["LOOKUP_TEST_DISK_FULL_AFTER": String(limit)])
            if r.status == 0 { break }
            failures += 1
            #expect(r.status == 74, "\(what), disk full after \(limit) bytes: exit \(r.status): \(r.stderr)")
            // On stderr, or in the JSON report on stdout under --json.
            #expect((r.stderr + r.stdout).contains("No space left on device"), "\(what), disk full after \(limit) bytes: \(r.stderr)\(r.stdout)")
            #expect(try unchanged(), "\(what), disk full after \(limit) bytes: the previous generation is not the one in use")
            guard limit < 1 << 24 else {
                Issue.record("\(what) still fails with \(limit) bytes of disk: \(r.stderr)")
                break
            }
            limit = limit == 0 ? 64 : limit * 2
        }
        return failures
    }

    @Test func aFetchThatFillsTheDiskKeepsThePreviousGenerationAndResumesLater() throws {
        let (fx, _) = try FetchFixture.fetchedV1()
        let failures = try fillTheDiskEverywhere("fetch", attempt: { try fx.fetch("v2", environment: $0) },
                                                 unchanged: { try fx.current() == (1, "1") })
        #expect(failures >= 3, "the download's append was never cut by the full disk")
        #expect(try fx.current() == (2, "2"))
        #expect(!FileManager.default.fileExists(atPath: fx.store + "/.fetch"))
    }

    /// Install hard-links a build's files into the store when both are on one file system and
    /// copies them otherwise; both ways, and the manifest and CURRENT written after them, meet
    /// the full disk.
    @Test(arguments: [false, true])
    func anInstallThatFillsTheDiskKeepsThePreviousGeneration(buildOnAnotherFileSystem: Bool) throws {
        let dir = TempDir()
        var builds = dir
        if buildOnAnotherFileSystem {
            guard let shm = TempDir(in: "/dev/shm") else { return }   // no tmpfs here: the copy path is not reached
            builds = shm
        }
        try writeBuildDirectory(builds.path("v1"), DirectoryCLITests.v1(), datasetVersion: "1")
        try writeBuildDirectory(builds.path("v2"), DirectoryCLITests.v2(), datasetVersion: "2")
        let store = dir.path("store")
        #expect(try lookup(["install", "--store", store, builds.path("v1")]).status == 0)
        func current() throws -> (UInt64, String?) {
            let pinned = try InstalledStore(path: store).pin()
            for db in pinned.snapshot.databases { try db.verify() }
            return (pinned.id, pinned.manifest.datasetVersion)
        }
        let failures = try fillTheDiskEverywhere("install", attempt: {
            try lookup(["install", "--store", store, builds.path("v2")], environment: $0)
        }, unchanged: { try current() == (1, "1") })
        #expect(failures >= (buildOnAnotherFileSystem ? 3 : 1))
        #expect(try current() == (2, "2"))
    }

    /// The server answers on when its access log cannot be written, says so once, and says so
    /// again when the log takes lines.
    @Test func aFullDiskUnderTheAccessLogDoesNotStopTheAnswers() throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        let log = dir.path("access.log")
        let server = try ServeProcess(["--db", db, "--access-log", log], environment: ["LOOKUP_TEST_DISK_FULL_AFTER": "150"])
        for _ in 0..<5 {
            let answer = try #require(try curl([server.url("/v1/cnam/79131234567")]))
            #expect(answer.status == 200 && answer.body == "Pizza Hut")
            usleep(300_000)   // past a flush of the log (four a second)
        }
        server.send(SIGTERM)
        #expect(server.exitStatus(within: 10) == 0)
        let written = try FileManager.default.attributesOfItem(atPath: log)[.size] as? Int ?? -1
        #expect(written == 150)
        let said = server.stderr
        #expect(said.components(separatedBy: "cannot write (No space left on device)").count == 2, "\(said)")
        #expect(said.contains("access log \(log): cannot write"), "\(said)")
    }
}
