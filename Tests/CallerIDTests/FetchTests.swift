import Foundation
import Testing
@testable import CallerID
@testable import CallerIDDirectory
import CallerIDURLSession

// `lookup fetch` against a real HTTP server on 127.0.0.1 (Fixtures/fault_server.py) that
// injects faults per request: the server dies mid-file, serves a truncated file, ignores
// Range. Every failure must end with the right exit code and the previous generation
// intact and in use.

/// The fault-injecting server, started for one test and killed when released.
final class FaultServer {
    let root: String
    let port: Int
    private let process: Process

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/fault_server.py").path

    init(root: String) throws {
        self.root = root
        let portFile = root + "/.port"
        process = Python.process(Self.script, [root, portFile])
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        var port: Int? = nil
        for _ in 0..<500 {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8), let p = Int(text) { port = p; break }
            usleep(10_000)
        }
        guard let port else {
            kill(process.processIdentifier, SIGKILL)
            throw DirectoryError(.io, "the test server did not start (python3 \(Self.script))")
        }
        self.port = port
    }

    /// The URL of `folder` under `root`, with faults (`-` for none).
    func url(_ folder: String, faults: String = "-") -> String { "http://127.0.0.1:\(port)/\(faults)/\(folder)" }

    /// GET lines logged since the last call: `PATH RANGE`.
    func takeRequests() -> [String] {
        let log = root + "/requests.log"
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: log)
        return text.split(separator: "\n").map { String($0.dropFirst(4)) }
    }

    deinit {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

/// A served folder `web/`, keys, and a store installed from a first signed set.
struct FetchFixture {
    let dir = TempDir()
    let key: SigningSecretKey
    let server: FaultServer
    var store: String { dir.path("store") }
    var pub: String { dir.path("k.pub") }

    init() throws {
        key = try SigningSecretKey.generate()
        try key.write(to: dir.path("k"))
        try FileManager.default.createDirectory(atPath: dir.path("web"), withIntermediateDirectories: true)
        server = try FaultServer(root: dir.path("web"))
    }

    /// A fixture whose store holds set `v1` (generation 1, fetched), with `v2` published
    /// (`kazan` changed); returns it and `v2`'s manifest.
    static func fetchedV1() throws -> (FetchFixture, DirectoryManifest) {
        let fx = try FetchFixture()
        try fx.publish("v1", version: 1)
        let r = try fx.fetch("v1")
        #expect(r.status == 0, "\(r.stdout)")
        return (fx, try fx.publish("v2", version: 2))
    }

    /// Publishes a signed set as `web/NAME`.
    @discardableResult
    func publish(_ name: String, version: Int, changed: String = "kazan", buildTime: String? = nil, key: SigningSecretKey? = nil) throws -> DirectoryManifest {
        try writeSignedSet(dir.path("web/" + name), signedRegions(version: version, changed: changed), version: String(version),
                           buildTime: buildTime ?? "2026-06-0\(version)T00:00:00Z", key: key ?? self.key)
    }

    func fetch(_ name: String, faults: String = "-", _ extra: [String] = [], environment: [String: String] = [:],
               timeout: Double = 60) throws -> CLIResult {
        try lookup(fetchArguments(name, faults) + extra, environment: environment, timeout: timeout)
    }

    /// ``fetch(_:faults:_:environment:timeout:)`` for a fetch that spends its time waiting on a
    /// hostile server: the test's thread is free meanwhile.
    func fetchAwaiting(_ name: String, faults: String, _ extra: [String] = [], timeout: Double) async throws -> CLIResult {
        try await lookupAwaiting(fetchArguments(name, faults) + extra, timeout: timeout)
    }

    private func fetchArguments(_ name: String, _ faults: String) -> [String] {
        ["fetch", server.url(name, faults: faults), "--store", store, "--trust", pub, "--json"]
    }

    /// Current generation id and dataset version; the generation's databases open and verify.
    func current() throws -> (id: UInt64, version: String?) {
        let s = try InstalledStore(path: store)
        let pinned = try s.pin()
        for db in pinned.snapshot.databases { try db.verify() }
        return (pinned.id, pinned.manifest.datasetVersion)
    }

    func json(_ r: CLIResult) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: r.stdoutData) as? [String: Any], "not JSON: \(r.stdout)")
    }
}

@Suite struct FetchTests {
    @Test func aFetchInstallsTheSetThenFindsItUpToDate() throws {
        let fx = try FetchFixture()
        try fx.publish("v1", version: 1)
        let r = try fx.fetch("v1")
        #expect(r.status == 0, "\(r.stdout)")
        let j = try fx.json(r)
        #expect(j["files_fetched"] as? Int == 3 && j["files_reused"] as? Int == 0)
        #expect(try fx.current() == (1, "1"))
        _ = fx.server.takeRequests()
        let again = try fx.json(try fx.fetch("v1"))
        #expect(again["up_to_date"] as? Bool == true)
        #expect(fx.server.takeRequests().map { $0.split(separator: " ")[0] } == ["v1/manifest.json", "v1/manifest.json.sig"])
        #expect(try fx.current().id == 1)
        #expect(!FileManager.default.fileExists(atPath: fx.store + "/.fetch"))
    }

    @Test func afterAOneRegionChangeOnlyThatRegionsFileIsDownloaded() throws {
        let fx = try FetchFixture()
        try fx.publish("v1", version: 1, changed: "omsk")
        #expect(try fx.fetch("v1").status == 0)
        try fx.publish("v2", version: 2, changed: "omsk")
        _ = fx.server.takeRequests()
        let r = try fx.fetch("v2")
        #expect(r.status == 0, "\(r.stdout)")
        let j = try fx.json(r)
        #expect(j["fetched"] as? [String] == ["omsk.cid"])
        #expect(j["files_reused"] as? Int == 2)
        let files = fx.server.takeRequests().map { String($0.split(separator: " ")[0]) }
        #expect(files == ["v2/manifest.json", "v2/manifest.json.sig", "v2/omsk.cid"])
        #expect(try fx.current() == (2, "2"))
        // Unchanged files are the previous generation's, hard-linked.
        var a = stat(), b = stat()
        stat(fx.store + "/gen-1/moscow.cid", &a)
        stat(fx.store + "/gen-2/moscow.cid", &b)
        #expect(a.st_ino == b.st_ino)
    }

    @Test(arguments: [true, false])
    func theServerDyingMidFileIsExit69AndTheNextFetchResumes(_ ranges: Bool) throws {
        let fx = try FetchFixture()
        try fx.publish("v1", version: 1)
        #expect(try fx.fetch("v1").status == 0)
        try fx.publish("v2", version: 2)
        let r = try fx.fetch("v2", faults: "die=kazan.cid:300")
        #expect(r.status == 69, "\(r.stdout)")
        #expect(try fx.json(r)["exit_code"] as? Int == 69)
        #expect(try fx.current() == (1, "1"))
        _ = fx.server.takeRequests()
        let resumed = try fx.fetch("v2", faults: ranges ? "-" : "norange")
        #expect(resumed.status == 0, "\(resumed.stdout)")
        let kazan = fx.server.takeRequests().filter { $0.hasPrefix("v2/kazan.cid") }
        #expect(kazan == ["v2/kazan.cid bytes=300-"], "the interrupted file is asked for from where it stopped")
        #expect(try fx.json(resumed)["bytes_resumed"] as? Int == (ranges ? 300 : 0))
        #expect(try fx.current() == (2, "2"))
    }

    @Test func aTruncatedFileIsExit65() throws {
        let fx = try FetchFixture()
        try fx.publish("v1", version: 1)
        #expect(try fx.fetch("v1").status == 0)
        try fx.publish("v2", version: 2)
        let r = try fx.fetch("v2", faults: "short=kazan.cid:500")
        #expect(r.status == 65, "\(r.stdout)")
        #expect(r.stdout.contains("kazan.cid") && r.stdout.contains("500 bytes"))
        #expect(try fx.current() == (1, "1"))
    }

    @Test func aFileAlteredAfterSigningIsExit65() throws {
        let fx = try FetchFixture()
        try fx.publish("v1", version: 1)
        #expect(try fx.fetch("v1").status == 0)
        try fx.publish("v2", version: 2)
        let path = fx.dir.path("web/v2/kazan.cid")
        var bytes = try bytesOf(path)
        bytes[bytes.count / 3] ^= 0x01
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let r = try fx.fetch("v2")
        #expect(r.status == 65, "\(r.stdout)")
        #expect(r.stdout.contains("SHA-256"))
        #expect(try fx.current() == (1, "1"))
    }

    @Test func anAlteredManifestIsExit65() throws {
        let fx = try FetchFixture()
        try fx.publish("v1", version: 1)
        #expect(try fx.fetch("v1").status == 0)
        try fx.publish("v2", version: 2)
        let path = fx.dir.path("web/v2/manifest.json")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        try text.replacingOccurrences(of: "\"dataset_version\" : \"2\"", with: "\"dataset_version\" : \"9\"")
            .write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try String(contentsOfFile: path, encoding: .utf8) != text)
        let r = try fx.fetch("v2")
        #expect(r.status == 65, "\(r.stdout)")
        #expect(try fx.json(r)["error"].flatMap { ($0 as? [String: Any])?["code"] as? String } == "bad-signature")
        #expect(try fx.current() == (1, "1"))
    }

    @Test func aSignatureFromAnotherKeyIsExit65() throws {
        let fx = try FetchFixture()
        try fx.publish("v1", version: 1)
        #expect(try fx.fetch("v1").status == 0)
        try fx.publish("v2", version: 2, key: try SigningSecretKey.generate())
        let r = try fx.fetch("v2")
        #expect(r.status == 65, "\(r.stdout)")
        #expect(r.stdout.contains("signed by key"))
        #expect(try fx.current() == (1, "1"))
    }

    @Test func anOlderSignedManifestIsRefusedUnlessDowngradeIsAllowed() throws {
        let fx = try FetchFixture()
        try fx.publish("v1", version: 1)
        try fx.publish("v2", version: 2)
        #expect(try fx.fetch("v2").status == 0)
        let r = try fx.fetch("v1")
        #expect(r.status == 65, "\(r.stdout)")
        #expect(try fx.json(r)["error"].flatMap { ($0 as? [String: Any])?["code"] as? String } == "downgrade")
        #expect(try fx.current() == (1, "2"))
        let allowed = try fx.fetch("v1", ["--allow-downgrade"])
        #expect(allowed.status == 0, "\(allowed.stdout)")
        #expect(try fx.current() == (2, "1"))
    }

    @Test func aFullDiskIsExit74AndLeavesThePreviousGeneration() throws {
        let fx = try FetchFixture()
        try fx.publish("v1", version: 1)
        #expect(try fx.fetch("v1").status == 0)
        try fx.publish("v2", version: 2)
        let r = try fx.fetch("v2", environment: ["CALLERID_TEST_DISK_SPACE": "1000"])
        #expect(r.status == 74, "\(r.stdout)")
        #expect(r.stdout.contains("No space left on device"))
        #expect(try fx.current() == (1, "1"))
        #expect(try fx.fetch("v2").status == 0)
        #expect(try fx.current() == (2, "2"))
    }

    /// An interrupted fetch (Ctrl-C, or SIGTERM from a service manager) used to end with no
    /// word on what it left. It says that the installed store is untouched and that the next
    /// fetch resumes; it still ends by the signal (130 in a shell for Ctrl-C); the next fetch
    /// asks for the cut file from where it stopped and installs.
    @Test(arguments: [SIGINT, SIGTERM])
    func anInterruptedFetchSaysTheStoreIsUntouchedAndTheNextFetchResumes(_ signal: Int32) throws {
        let (fx, _) = try FetchFixture.fetchedV1()
        let binary = try #require(BuiltProducts.lookup, "build the lookup executable first")
        let child = Process()
        child.executableURL = binary
        child.arguments = ["fetch", fx.server.url("v2", faults: "drip=kazan.cid:200"), "--store", fx.store, "--trust", fx.pub]
        child.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        child.standardError = errors
        try child.run()
        // Mid-transfer: part of kazan.cid is on disk.
        let objects = fx.store + "/.fetch/objects"
        var part: String? = nil
        let deadline = Date().addingTimeInterval(30)
        while part == nil && child.isRunning && Date() < deadline {
            usleep(20_000)
            part = (try? FileManager.default.contentsOfDirectory(atPath: objects))?.first { name in
                name.hasSuffix(".part") && ((try? FileManager.default.attributesOfItem(atPath: objects + "/" + name)[.size] as? Int) ?? 0) > 0
            }
        }
        try #require(part != nil && child.isRunning, "no partial download seen")
        kill(child.processIdentifier, signal)
        child.waitUntilExit()
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(child.terminationReason == .uncaughtSignal && child.terminationStatus == signal,
                "ended with \(child.terminationStatus) (\(child.terminationReason)): a shell reports 128 + the signal, 130 for SIGINT")
        #expect(stderr.contains("interrupted; the installed store \(fx.store) is untouched") && stderr.contains("The next 'lookup fetch' resumes"),
                "\(stderr)")
        #expect(try fx.current() == (1, "1"))
        let kept = try #require(FileManager.default.attributesOfItem(atPath: objects + "/" + part!)[.size] as? Int)

        _ = fx.server.takeRequests()
        let resumed = try fx.fetch("v2")
        #expect(resumed.status == 0, "\(resumed.stdout)")
        #expect(fx.server.takeRequests().filter { $0.hasPrefix("v2/kazan.cid") } == ["v2/kazan.cid bytes=\(kept)-"])
        #expect(try fx.json(resumed)["bytes_resumed"] as? Int == kept)
        #expect(try fx.current() == (2, "2"))
    }

    @Test func twoFetchesAtOnceDoNotInterleave() throws {
        let fx = try FetchFixture()
        try fx.publish("v1", version: 1)
        #expect(try fx.fetch("v1").status == 0)
        try fx.publish("v2", version: 2)
        _ = fx.server.takeRequests()
        let lock = NSLock()
        nonisolated(unsafe) var all: [CLIResult] = []
        nonisolated(unsafe) let shared = fx
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            if let r = try? shared.fetch("v2") { lock.lock(); all.append(r); lock.unlock() }
        }
        #expect(all.count == 2 && all.allSatisfy { $0.status == 0 }, "\(all.map(\.stdout))")
        let upToDate = try all.map { try fx.json($0)["up_to_date"] as? Bool }
        #expect(upToDate.sorted { !($0 ?? false) && ($1 ?? false) } == [false, true], "one installs, the other then finds it current")
        #expect(fx.server.takeRequests().filter { $0.hasPrefix("v2/kazan.cid") }.count == 1)
        #expect(try fx.current() == (2, "2"))
    }

    @Test func anUnreachableServerIsExit69AndAStoreKeyMismatchIs65() throws {
        let fx = try FetchFixture()
        try fx.publish("v1", version: 1)
        #expect(try lookup(["install", "--store", fx.store, fx.dir.path("web/v1"), "--require-signature", fx.pub]).status == 0)
        // A port nothing listens on: the server's own port after it is gone is racy, so use 9.
        let down = try lookup(["fetch", "http://127.0.0.1:9/v1", "--store", fx.store, "--trust", fx.pub])
        #expect(down.status == 69, "\(down.stderr)")
        let otherKey = try SigningSecretKey.generate()
        try otherKey.write(to: fx.dir.path("o"))
        let mismatch = try lookup(["fetch", fx.server.url("v1"), "--store", fx.store, "--trust", fx.dir.path("o.pub")])
        #expect(mismatch.status == 65)
        #expect(mismatch.stderr.contains("requires key"))
        #expect(try fx.current() == (1, "1"))
        #expect(try lookup(["fetch", fx.server.url("missing"), "--store", fx.store, "--trust", fx.pub]).status == 69)
    }
}

/// The library type as an app calls it, with the URLSession client (CallerIDURLSession).
@Suite struct FetchLibraryTests {
    @Test func anAppFetchesThroughURLSessionAndResumesAfterTheServerDies() throws {
        let fx = try FetchFixture()
        try fx.publish("v1", version: 1)
        try fx.publish("v2", version: 2)
        let store = try InstalledStore(path: fx.store)
        func fetcher(_ folder: String, faults: String = "-") -> DirectoryFetcher {
            DirectoryFetcher(baseURL: fx.server.url(folder, faults: faults), store: store, trust: fx.key.publicKey,
                             client: URLSessionHTTPClient(timeout: 10))
        }
        let first = try fetcher("v1").fetch()
        #expect(first.fetchedFiles.sorted() == ["kazan.cid", "moscow.cid", "omsk.cid"])
        #expect(first.install?.generation.id == 1)
        #expect { try fetcher("v2", faults: "die=kazan.cid:200").fetch() } throws: { ($0 as? DirectoryError)?.code == .unreachable }
        #expect(try fx.current() == (1, "1"))
        _ = fx.server.takeRequests()
        let second = try fetcher("v2").fetch()
        #expect(second.fetchedFiles == ["kazan.cid"] && second.reusedFiles.sorted() == ["moscow.cid", "omsk.cid"])
        #expect(fx.server.takeRequests().contains("v2/kazan.cid bytes=200-"))
        #expect(try fx.current() == (2, "2"))
        #expect(try fetcher("v2").fetch().upToDate)
    }

    /// Before: the URLSession client read an error status's body to its end and kept no
    /// deadline (only URLSession's 30 s without a byte), so a server that dripped, or never
    /// ended its error page, held an app's fetch for ever.
    @Test func theURLSessionClientKeepsTheDeadlineAndStopsAtAnErrorStatus() throws {
        let fx = try FetchFixture()
        try fx.publish("v1", version: 1)
        let client = URLSessionHTTPClient(timeout: 10)
        let deadline = TransferDeadline(grace: 0.5, minimumRate: 1000)
        for (faults, file, says) in [("drip=manifest.json:2", "manifest.json", "slower than"), ("drip=kazan.cid:0", "kazan.cid", "0 bytes in")] {
            let started = Date()
            #expect {
                // The body always goes on: only the client's own deadline can end these.
                try client.get(HTTPRequest(url: fx.server.url("v1/" + file, faults: faults), maxBytes: 1 << 20, deadline: deadline)) { _, _ in true }
            } throws: { ($0 as? DirectoryError)?.code == .unreachable && ($0 as? DirectoryError)?.message.contains(says) == true }
            #expect(Date().timeIntervalSince(started) < 4.5, "\(faults): \(Date().timeIntervalSince(started)) s")
        }
        var pieces = 0
        let status = try client.get(HTTPRequest(url: fx.server.url("v1/manifest.json", faults: "status=manifest.json:500"), maxBytes: 1 << 20,
                                                deadline: deadline)) { _, _ in pieces += 1; return true }
        #expect(status == 500 && pieces == 0, "an error page is not read")
        let store = try InstalledStore(path: fx.store)
        var fetcher = DirectoryFetcher(baseURL: fx.server.url("v1", faults: "status=omsk.cid:503"), store: store, trust: fx.key.publicKey, client: client)
        fetcher.deadline = deadline
        #expect { try fetcher.fetch() } throws: { ($0 as? DirectoryError)?.message.contains("HTTP 503") == true }
        fetcher.baseURL = fx.server.url("v1")
        #expect(try fetcher.fetch().install?.generation.id == 1)
    }

    @Test func transferDeadlinesGrowWithTheSizeAndCountFromTheGrace() {
        let d = TransferDeadline(grace: 30, minimumRate: 8192)
        #expect(d.seconds(forBytes: 0) == 30 && d.seconds(forBytes: 81920) == 40)
        #expect(!d.isBehind(received: 0, elapsed: 30))
        #expect(d.isBehind(received: 8191, elapsed: 31) && !d.isBehind(received: 8192, elapsed: 31))
        #expect(HTTPRequest(url: "http://x/", maxBytes: 8192 * 100, deadline: d).seconds == 130)
    }

    @Test func versionOrderIsNumericWhenBothAreNumbersElseByBuildTime() {
        func m(_ v: String?, _ t: String?) -> DirectoryManifest {
            var x = DirectoryManifest(files: [], datasetVersion: v)
            x.buildTime = t
            return x
        }
        #expect(DirectoryFetcher.isOlder(m("9", "2026-02-01T00:00:00Z"), than: m("10", "2026-01-01T00:00:00Z")))
        #expect(!DirectoryFetcher.isOlder(m("2026.12.2", nil), than: m("2026.12.1", nil)))
        #expect(DirectoryFetcher.isOlder(m("2026-11-30", nil), than: m("2026-12-01", nil)))
        #expect(DirectoryFetcher.isOlder(m("xxh3-b", "2026-01-01T00:00:00Z"), than: m("xxh3-a", "2026-01-02T00:00:00Z")))
        #expect(!DirectoryFetcher.isOlder(m("xxh3-a", "2026-01-02T00:00:00Z"), than: m("xxh3-b", "2026-01-01T00:00:00Z")))
        #expect(!DirectoryFetcher.isOlder(m("5", nil), than: m("5", nil)))
    }
}

@Suite struct FetchLinkTests {
    /// `lookup fetch` reaches libcurl, signing reaches libsodium, `lookup build` reaches
    /// libphonenumber and `lookup serve` libmicrohttpd with dlopen: the tool's binary must not
    /// name any of them, an SSL library or FoundationNetworking among the libraries loaded at
    /// every start (start-up cost).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/ldd"), "ldd is not installed"))
    func lookupDoesNotLinkCurlSSLOrFoundationNetworking() throws {
        let binary = try #require(BuiltProducts.file("lookup"), "the lookup executable was not found")
        let run = try runTool("/usr/bin/ldd", [binary.path])
        #expect(run.status == 0)
        #expect(run.stdout.contains("libc.so"), "ldd printed no libraries: \(run.stdout)")
        for name in ["libcurl", "libssl", "libcrypto.so", "libgnutls", "FoundationNetworking", "libsodium",
                     "libphonenumber", "libicu", "libprotobuf", "libmicrohttpd"] {
            #expect(!run.stdout.contains(name), "lookup links \(name):\n\(run.stdout)")
        }
    }

    /// liblz4 is linked for one thing: writing the LZ4 groups of version 3.1 files (LZ4HC);
    /// every build reads them with the package's own decoder. The tool links it (it builds),
    /// and the C library too (one module); a build with the PortableCodecs trait links neither
    /// liblz4 nor libxxhash (tools/check-portable-links.sh).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/ldd") && Codec.compressesLZ4, "ldd is not installed, or the build has no LZ4 writer"))
    func theToolAndTheCLibraryLinkLiblz4ForTheWriterOnly() throws {
        for product in ["lookup", "libcallerid.so"] {
            let binary = try #require(BuiltProducts.file(product), "\(product) was not built")
            let run = try runTool("/usr/bin/ldd", [binary.path])
            #expect(run.status == 0 && run.stdout.contains("libc.so"), "ldd \(product): \(run.stdout)")
            #expect(run.stdout.contains("liblz4.so.1"), "\(product) does not link liblz4:\n\(run.stdout)")
        }
    }
}
