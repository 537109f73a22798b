import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import CallerID

// A database file cut short in place (`truncate -s 4096`, `cp` over it) under a long-lived
// reader. `lookup serve` died of SIGBUS at the first request that touched a page past the new
// end, even after /healthz had said the file was modified; `lookup -` died the same way when
// the file was cut between its check and its read. Now the file is withdrawn: its numbers are
// answered 503 (the server) or with an error (the batch), the process lives, and a valid file
// put back is answered from again.

/// Numbers spread over many blocks: a file of about 1 MB, so a cut at 4,096 bytes leaves
/// almost every block past the end.
private func manyEntries(first: UInt64, count: Int, label: String) -> [Entry] {
    (0..<count).map { i in Entry(number: first + UInt64(i) * 7, label: "\(label) \(i)") }
}

/// Truncates `path` in place (same inode) to `size` bytes.
private func cutShort(_ path: String, to size: Int) {
    #expect(truncate(path, off_t(size)) == 0, "truncate \(path): \(String(cString: strerror(errno)))")
}

/// Writes `bytes` over `path` in place (same inode: O_TRUNC and write, as `cp` does).
private func writeInPlace(_ path: String, _ bytes: Data) throws {
    let handle = try #require(FileHandle(forUpdatingAtPath: path))
    try handle.truncate(atOffset: 0)
    try handle.write(contentsOf: bytes)
    try handle.close()
}

/// Asks `path` until `done` holds for the answer (at most `seconds`); the last answer.
private func poll(_ server: ServeProcess, _ path: String, seconds: Double = 10, until done: (HTTPAnswer) -> Bool) throws -> HTTPAnswer {
    let deadline = Date().addingTimeInterval(seconds)
    var answer = try #require(try curl([server.url(path)]), "no answer to \(path): the server died? \(server.stderr)")
    while !done(answer) && Date() < deadline {
        usleep(100_000)
        answer = try #require(try curl([server.url(path)]), "no answer to \(path): the server died? \(server.stderr)")
    }
    return answer
}

/// A build directory of two packs made by `lookup build` (so its manifest holds each pack's
/// bounds): Moscow numbers in one, Novosibirsk numbers in the other. The two sets of entries
/// and the pack that holds the second.
private func twoPackBuild(_ dir: TempDir, count: Int) throws -> (moscow: [Entry], novosibirsk: [Entry], build: String, novosibirskPack: String) {
    let moscow = manyEntries(first: 74_950_000_000, count: count, label: "Moscow")
    let novosibirsk = manyEntries(first: 79_130_000_000, count: count, label: "Novosibirsk")
    let tsv = (moscow + novosibirsk).map { "\($0.number)\t\($0.label)\n" }.joined()
    try tsv.write(toFile: dir.path("in.tsv"), atomically: true, encoding: .utf8)
    let build = dir.path("set")
    let run = try lookup(["build", "-o", build + "/", dir.path("in.tsv"), "--max-entries", "\(count)"])
    try #require(run.status == 0, "\(run.stderr)")
    let packs = try FileManager.default.contentsOfDirectory(atPath: build).filter { $0.hasSuffix(".cid") }.sorted()
    try #require(packs.count == 2, "\(packs)")
    // The pack whose manifest bounds hold the Novosibirsk numbers.
    let manifest = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: build + "/manifest.json"))) as? [String: Any])
    let files = try #require(manifest["files"] as? [[String: Any]])
    let pack = try #require(files.first { ($0["first_number"] as? NSNumber)?.uint64Value == novosibirsk[0].number }?["file"] as? String, "\(files)")
    return (moscow, novosibirsk, build, pack)
}

@Suite struct TruncatedFileTests {
    @Test func aServedFileCutShortIsAnswered503WithoutKillingTheServerAndAnsweredAgainOnceValid() throws {
        let dir = TempDir()
        let db = dir.path("city.cid")
        let entries = manyEntries(first: 79_130_000_000, count: 120_000, label: "City")
        _ = try buildDatabase(entries, at: db)
        let original = try Data(contentsOf: URL(fileURLWithPath: db))
        #expect(original.count > 256 * 1024, "\(original.count) bytes: too small to cut most blocks off")
        let server = try ServeProcess(["--db", db])
        let last = entries[entries.count - 1], middle = entries[entries.count / 2]
        #expect(try #require(try curl([server.url("/v1/cnam/\(last.number)")])).body == last.label)

        cutShort(db, to: 4096)
        // At once (before the server's check each second can have seen the change) and after.
        for number in [last.number, middle.number, last.number] {
            let lookup = try #require(try curl([server.url("/v1/lookup/\(number)")]), "the server died: \(server.stderr)")
            #expect(lookup.status == 503 && lookup.body.contains(db), "\(lookup.status) \(lookup.body)")
            let name = try #require(try curl([server.url("/v1/cnam/\(number)")]), "the server died: \(server.stderr)")
            #expect(name.status == 503 && name.body.isEmpty, "\(name.status) \(name.body)")
        }
        let batch = try #require(try curl(["-X", "POST", "--data-binary", "\(last.number)\n\(middle.number)\n", server.url("/v1/lookup")]))
        #expect(batch.status == 200 && splitLines(batch.body).count == 2
                && splitLines(batch.body).allSatisfy { $0.contains("\"found\":false,\"error\":") }, "\(batch.body)")
        let health = try poll(server, "/healthz") { $0.body.contains("\"failed_reloads\":1") }
        #expect(health.status == 503 && health.body.contains("\"status\":\"failing\"") && health.body.contains(db), "\(health.body)")
        let metrics = try #require(try curl([server.url("/metrics")])).body
        #expect(metrics.contains("callerid_data_ok 0\n"), "\(metrics)")
        #expect(server.process.isRunning)

        // The file made whole again in place: opened again, answered again.
        try writeInPlace(db, original)
        let again = try poll(server, "/v1/cnam/\(last.number)") { $0.status == 200 }
        #expect(again.status == 200 && again.body == last.label, "\(again.status) \(again.body); \(server.stderr)")
        #expect(try #require(try curl([server.url("/healthz")])).body.contains("\"status\":\"ok\""))
        server.send(SIGTERM)
        #expect(server.exitStatus(within: 10) == 0)
    }

    @Test func aStorePackCutShortIs503ForItsNumbersAndTheOtherPacksStillAnswer() throws {
        let dir = TempDir()
        let (a, b, build, packName) = try twoPackBuild(dir, count: 60_000)
        let store = dir.path("store")
        let install = try lookup(["install", "--store", store, build])
        try #require(install.status == 0, "\(install.stderr)")
        let generation = try #require(try FileManager.default.contentsOfDirectory(atPath: store).first { $0.hasPrefix("gen-") })
        let pack = "\(store)/\(generation)/\(packName)"
        let server = try ServeProcess(["--store", store])
        #expect(try #require(try curl([server.url("/v1/lookup/\(b[59_999].number)")])).body.contains("\"label\":\"\(b[59_999].label)\""))

        cutShort(pack, to: 4096)
        for number in [b[59_999].number, b[30_000].number] {
            let answer = try #require(try curl([server.url("/v1/lookup/\(number)")]), "the server died: \(server.stderr)")
            #expect(answer.status == 503 && answer.body.contains(packName), "\(answer.status) \(answer.body)")
        }
        let other = try #require(try curl([server.url("/v1/cnam/\(a[59_999].number)")]), "the server died: \(server.stderr)")
        #expect(other.status == 200 && other.body == a[59_999].label, "\(other.status) \(other.body)")
        let health = try poll(server, "/healthz") { $0.body.contains("\"failed_reloads\":1") }
        #expect(health.status == 503 && health.body.contains(packName), "\(health.body)")
        #expect(try #require(try curl([server.url("/v1/cnam/\(a[0].number)")])).status == 200)
        #expect(server.process.isRunning)
    }

    @Test func aBatchGoesOnWhenAFileIsCutShortAndAnswersItsNumbersWithAnError() throws {
        let binary = try #require(BuiltProducts.lookup, "build the lookup executable first")
        let dir = TempDir()
        let (a, b, build, packName) = try twoPackBuild(dir, count: 60_000)
        let child = try CoProcess(binary, ["-", "--json", "--db", build])
        try child.send("\(b[59_999].number)")
        #expect(child.readLine(within: 20)?.contains("\"label\":\"Novosibirsk 59999\"") == true)

        cutShort(build + "/" + packName, to: 4096)
        try child.send("\(b[59_999].number)")
        let failed = try #require(child.readLine(within: 20), "no answer: the batch died")
        #expect(failed.hasPrefix("{\"number\":\(b[59_999].number),\"found\":false,\"error\":") && failed.contains(packName), "\(failed)")
        // The batch goes on: the other pack's numbers are answered, the cut one's fail again.
        try child.send("\(a[59_999].number)")
        #expect(child.readLine(within: 20)?.contains("\"label\":\"Moscow 59999\"") == true)
        try child.send("\(b[10].number)")
        #expect(child.readLine(within: 20)?.contains("\"error\":") == true)
        let end = child.finish(within: 20)
        #expect(end.reason == .exit && end.status == 74, "status \(end.status) (\(end.reason))")
        #expect(end.stderr.contains("stdin:2: not answered") && end.stderr.contains("2 numbers were not answered"), "\(end.stderr)")
    }
}
