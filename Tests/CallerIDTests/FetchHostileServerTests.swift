import Foundation
import Testing
@testable import CallerID
@testable import CallerIDDirectory

// `lookup fetch` against servers that misbehave on purpose (Fixtures/fault_server.py on
// 127.0.0.1): they drip, send error pages or files that never end, lie about lengths, send
// more than the signed size, or a signed manifest claims more than any disk holds. Every fetch
// must end by itself within its deadline with the right exit code, leave the current
// generation in use, leave no more bytes in the store than the signed set's files, and never
// spoil the next fetch from an honest server.

/// Bytes of the regular files under `path` (0 when it does not exist).
func bytesUnder(_ path: String) -> Int {
    guard let walk = FileManager.default.enumerator(atPath: path) else { return 0 }
    var total = 0
    for case let name as String in walk {
        total += FileSystem.fileSize(path + "/" + name) ?? 0
    }
    return total
}

/// One hostile answer and how the fetch must end.
struct HostileServerCase: Sendable, CustomTestStringConvertible {
    var faults: String
    var exit: Int32
    var says: String
    /// An honest fetch of the same set follows and must install it.
    var thenHonest = false
    var testDescription: String { faults }
}

@Suite struct FetchHostileServerTests {
    /// Short deadlines for the hostile fetches: half a second of grace, then 1,000 bytes/s.
    static let fast = ["--grace", "0.5", "--min-rate", "1000"]

    // Before: a dripping server kept `lookup fetch` alive for ever (curl's only limit was
    // 1 byte/s over 30 s); an error status with an endless body was read to the end; a
    // manifest over 8 MiB or a signature over 4,096 bytes ended in 74 "transfer stopped"; a
    // part the server stopped sending in the write callback (more bytes than signed) was kept,
    // and the next fetch from an honest server resumed it and failed with "SHA-256 … differs
    // from the signed manifest's … (altered after signing)", as did one after a short,
    // garbled body.
    static let cases: [HostileServerCase] = [
        HostileServerCase(faults: "drip=manifest.json:2", exit: 69, says: "slower than 1000 bytes/s"),
        HostileServerCase(faults: "drip=kazan.cid:50", exit: 69, says: "slower than 1000 bytes/s", thenHonest: true),
        HostileServerCase(faults: "drip=kazan.cid:0", exit: 69, says: "0 bytes in", thenHonest: true),
        HostileServerCase(faults: "status=manifest.json:500", exit: 69, says: "HTTP 500"),
        HostileServerCase(faults: "status=manifest.json.sig:404", exit: 65, says: "not signed"),
        HostileServerCase(faults: "status=kazan.cid:503", exit: 69, says: "HTTP 503", thenHonest: true),
        HostileServerCase(faults: "endless=kazan.cid:0", exit: 65, says: "more than", thenHonest: true),
        HostileServerCase(faults: "lie=kazan.cid:100", exit: 65, says: "more than", thenHonest: true),
        HostileServerCase(faults: "garbage=kazan.cid:1500", exit: 69, says: "kazan.cid", thenHonest: true),
        HostileServerCase(faults: "endless=manifest.json:0", exit: 65, says: "larger than 8388608 bytes"),
        HostileServerCase(faults: "endless=manifest.json.sig:0", exit: 65, says: "larger than 4096 bytes"),
    ]

    @Test(arguments: cases)
    func aHostileServerEndsTheFetchWithinItsDeadlineAndSpoilsNothing(_ c: HostileServerCase) async throws {
        let (fx, signed) = try FetchFixture.fetchedV1()
        let r = try await fx.fetchAwaiting("v2", faults: c.faults, Self.fast, timeout: 20)
        #expect(r.status == c.exit, "\(r.stdout)")
        #expect(try fx.json(r)["exit_code"] as? Int == Int(c.exit))
        #expect(r.stdout.contains(c.says), "\(r.stdout)")
        // The grace, then about a second for the rate check to see the server fall behind.
        #expect(r.seconds < 0.5 + 4, "the fetch ended after \(r.seconds) s")
        #expect(try fx.current() == (1, "1"))
        let left = bytesUnder(fx.store + "/.fetch")
        #expect(left <= signed.files.reduce(0) { $0 + $1.bytes }, "\(left) bytes left in .fetch")
        if c.thenHonest {
            let honest = try fx.fetch("v2")
            #expect(honest.status == 0, "\(honest.stdout)")
            #expect(try fx.current() == (2, "2"))
            #expect(!FileManager.default.fileExists(atPath: fx.store + "/.fetch"))
        }
    }

    /// Before: a manifest signed by the trusted key that claimed `bytes: 2^62` made the fetch
    /// write whatever the server sent until the disk was full (2.5 GB left in `.fetch/`).
    @Test func aSignedClaimLargerThanTheDiskIsExit74BeforeAnyDownload() throws {
        let (fx, v2) = try FetchFixture.fetchedV1()
        var manifest = v2
        let kazan = try #require(manifest.files.firstIndex { $0.file == "kazan.cid" })
        manifest.files[kazan].bytes = 1 << 62
        let web = fx.dir.path("web/v2")
        let data = manifest.jsonData()
        try data.write(to: URL(fileURLWithPath: web + "/manifest.json"))
        let signature = try ManifestSignature.sign([UInt8](data), with: fx.key)
        try Data(signature.fileText.utf8).write(to: URL(fileURLWithPath: web + "/" + ManifestSignature.fileName))
        _ = fx.server.takeRequests()

        let r = try fx.fetch("v2", [], timeout: 20)
        #expect(r.status == 74, "\(r.stdout)")
        #expect(r.stdout.contains("need 4,611,686,018,427,387,904 bytes") && r.stdout.contains("free"), "\(r.stdout)")
        #expect(fx.server.takeRequests().map { $0.split(separator: " ")[0] } == ["v2/manifest.json", "v2/manifest.json.sig"])
        #expect(bytesUnder(fx.store + "/.fetch") == 0)
        #expect(try fx.current() == (1, "1"))
    }

    /// Before: a fetch held the store's install lock from its first request to its install,
    /// so a local `lookup install` waited as long as a dripping server kept the fetch alive.
    @Test func aLocalInstallDoesNotWaitForAFetchInProgress() async throws {
        let (fx, _) = try FetchFixture.fetchedV1()
        try fx.publish("v3", version: 3)
        _ = fx.server.takeRequests()
        let binary = try #require(BuiltProducts.lookup)
        let fetch = Process()
        fetch.executableURL = binary
        fetch.arguments = ["fetch", fx.server.url("v2", faults: "drip=manifest.json:2"), "--store", fx.store, "--trust", fx.pub,
                           "--grace", "3", "--min-rate", "1000"]
        fetch.standardOutput = FileHandle.nullDevice
        fetch.standardError = FileHandle.nullDevice
        try fetch.run()
        defer { if fetch.isRunning { kill(fetch.processIdentifier, SIGKILL) }; fetch.waitUntilExit() }
        // Wait until the fetch is talking to the server.
        for _ in 0..<500 where !FileManager.default.fileExists(atPath: fx.dir.path("web/requests.log")) { usleep(10_000) }

        let started = Date()
        let install = try lookup(["install", "--store", fx.store, fx.dir.path("web/v3"), "--trust", fx.pub])
        let seconds = Date().timeIntervalSince(started)
        #expect(install.status == 0, "\(install.stderr)")
        #expect(fetch.isRunning, "the fetch was still downloading while the install ran")
        #expect(seconds < 2.5, "the install waited \(seconds) s")
        #expect(try fx.current() == (2, "3"))
        // The fetch ends at its deadline (3 s of grace, then the rate check): waited for without
        // holding the test's thread.
        while fetch.isRunning { try await Task.sleep(for: .milliseconds(20)) }
        fetch.waitUntilExit()
        #expect(fetch.terminationStatus == 69)
        #expect(try fx.current() == (2, "3"))
    }
}
