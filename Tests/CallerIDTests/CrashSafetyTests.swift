import Dispatch
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import CallerID

/// The `lookup` executable next to the test bundle (as CLITests finds it), or nil.
private let lookupExecutable: String? = BuiltProducts.lookup?.path

/// Temporary files the writer leaves next to `name` in `dir` when it is killed.
private func leftovers(_ dir: TempDir, _ name: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: dir.url.path)) ?? []).filter { $0.hasPrefix(".\(name).tmp-") }
}

/// Records for a TSV input: `count` rows, deterministic, many distinct labels.
private func tsv(count: Int, seed: UInt64) -> (text: String, expected: [UInt64: Entry]) {
    let (records, expected) = randomRecords(count: count, seed: seed, duplicateRate: 0.01, minNumber: plausibleNumbers.lowerBound,
                                            maxNumber: plausibleNumbers.upperBound)
    var text = ""
    text.reserveCapacity(count * 40)
    for r in records { text += "\(r.number)\t\(r.label)\t\(r.category.name)\n" }
    return (text, expected)
}

struct CrashSafetyTests {
    /// `lookup build` killed with SIGKILL at 20 points (fixed seed), while an older valid database
    /// sits at the target: the target is always exactly the old file or the complete new one,
    /// never partial. Half the kills are at a random time of the run; the other half wait for the
    /// temporary file to appear and kill soon after: during the write, the fsync or the rename.
    ///
    /// What this proves: the rename is the only step that changes the target, and a leftover
    /// temporary file is harmless. What it cannot prove: that the file is synced before the
    /// rename — a SIGKILL loses nothing of the page cache, so a writer without `fsync` passes
    /// too. AtomicFileFaultTests checks the order and the failures through the writer's seam.
    @Test func killedBuildNeverLeavesAPartialTarget() throws {
        let binary = try #require(lookupExecutable, "build the lookup executable first (swift build --build-tests)")
        let dir = TempDir()
        let target = dir.path("city.cid")
        let input = dir.path("big.tsv")
        // 20,000 rows: the build still lasts long enough (tenths of a second in a debug build)
        // for the timed kills below, which scale with its measured length and its writing time.
        let (text, expected) = tsv(count: 20_000, seed: 99)
        try text.write(toFile: input, atomically: false, encoding: .utf8)

        // The older valid database.
        var old = DatabaseBuilder()
        try old.add(79131234567, label: "The old file")
        _ = try old.write(to: target)
        let oldBytes = try Data(contentsOf: URL(fileURLWithPath: target))

        func start() throws -> Process {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: binary)
            p.arguments = ["build", "-o", target, input]
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            return p
        }

        // How long an undisturbed build takes here (debug, sanitizers, a busy machine...), and
        // how long its temporary file exists before the rename.
        func elapsed(since t: UInt64) -> Double { Double(DispatchTime.now().uptimeNanoseconds - t) / 1e9 }
        let began = DispatchTime.now().uptimeNanoseconds
        let full = try start()
        var tempSeen: Double? = nil
        while full.isRunning {
            if tempSeen == nil, !leftovers(dir, "city.cid").isEmpty { tempSeen = elapsed(since: began) }
            usleep(200)
        }
        full.waitUntilExit()
        #expect(full.terminationStatus == 0)
        let seconds = elapsed(since: began)
        let writing = seconds - (tempSeen ?? seconds * 0.9)
        #expect(try Database(path: target, verify: true).count == expected.count)

        var rng = SeededGenerator(seed: 20_251_129)
        var sawOld = 0, sawNew = 0, killedDuringWrite = 0
        for round in 0..<20 {
            try oldBytes.write(to: URL(fileURLWithPath: target))
            let before = Set(leftovers(dir, "city.cid"))
            let p = try start()
            if round % 2 == 0 {
                usleep(UInt32(Double.random(in: 0..<(seconds * 1.1), using: &rng) * 1e6))
            } else {
                // Wait (at most the build's length) for a new temporary file, then kill soon after.
                let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 2e9)
                while p.isRunning, DispatchTime.now().uptimeNanoseconds < deadline,
                      Set(leftovers(dir, "city.cid")).subtracting(before).isEmpty {
                    usleep(200)
                }
                usleep(UInt32(Double.random(in: 0..<(writing * 1.5), using: &rng) * 1e6))
            }
            if p.isRunning { kill(p.processIdentifier, SIGKILL) }
            p.waitUntilExit()
            if !Set(leftovers(dir, "city.cid")).subtracting(before).isEmpty { killedDuringWrite += 1 }

            let now = try Data(contentsOf: URL(fileURLWithPath: target))
            if now == oldBytes {
                sawOld += 1
                #expect(try Database(path: target, verify: true).lookup(79131234567)?.label == "The old file")
            } else {
                sawNew += 1
                let db = try Database(path: target, verify: true)   // complete, or this throws
                #expect(db.count == expected.count, "kill \(round): a different file at the target")
            }
        }
        print("crash safety: build \(String(format: "%.2f", seconds)) s, writing \(String(format: "%.3f", writing)) s; 20 kills: old file \(sawOld), new file \(sawNew), killed while writing \(killedDuringWrite)")
        #expect(sawOld > 0)

        // The leftovers are never at the target path, and the next build removes them once stale.
        let left = leftovers(dir, "city.cid")
        #expect(!left.contains("city.cid"))
        let old2h = Date(timeIntervalSinceNow: -2 * 3600)
        for name in left { try FileManager.default.setAttributes([.modificationDate: old2h], ofItemAtPath: dir.path(name)) }
        let last = try start()
        last.waitUntilExit()
        #expect(last.terminationStatus == 0)
        #expect(leftovers(dir, "city.cid").isEmpty)
        #expect(try Database(path: target, verify: true).count == expected.count)
    }

    /// Only abandoned temporaries of the same target, older than the limit, are removed.
    @Test func staleTemporariesOfTheSameTargetAreRemoved() throws {
        let dir = TempDir()
        let stale = Date(timeIntervalSinceNow: -Double(AtomicFileWriter.staleTemporaryAge) - 60)
        let files: [(String, Date?)] = [
            (".db.cid.tmp-AbC123", stale),        // removed
            (".db.cid.tmp-fresh1", nil),          // recent: maybe a build still writing it
            (".other.cid.tmp-AbC123", stale),     // another target
            (".db.cid.tmp-12345678", stale),      // not a name mkstemp makes
            ("db.cid.tmp-AbC123", stale),         // not hidden: not ours
        ]
        for (name, date) in files {
            _ = FileManager.default.createFile(atPath: dir.path(name), contents: Data("x".utf8))
            if let date { try FileManager.default.setAttributes([.modificationDate: date], ofItemAtPath: dir.path(name)) }
        }
        try FileManager.default.createDirectory(atPath: dir.path(".db.cid.tmp-dirXYZ"), withIntermediateDirectories: false)
        try FileManager.default.setAttributes([.modificationDate: stale], ofItemAtPath: dir.path(".db.cid.tmp-dirXYZ"))

        var b = DatabaseBuilder()
        try b.add(1, label: "x")
        _ = try b.write(to: dir.path("db.cid"))
        let names = Set(try FileManager.default.contentsOfDirectory(atPath: dir.url.path))
        #expect(names == [".db.cid.tmp-fresh1", ".other.cid.tmp-AbC123", ".db.cid.tmp-12345678", "db.cid.tmp-AbC123",
                          ".db.cid.tmp-dirXYZ", "db.cid"])
    }

    /// The stale-temporary scan reads each directory entry's name in place: with thousands of
    /// short names, some entries end right at the end of readdir's buffer, where copying the
    /// whole 256-byte `d_name` read past it (found by tools/sanitize.sh address).
    @Test func staleTemporaryScanOfABigDirectory() throws {
        let dir = TempDir()
        for i in 0..<3000 { _ = FileManager.default.createFile(atPath: dir.path(String(i, radix: 36)), contents: nil) }
        let stale = dir.path(".db.cid.tmp-AbC123")
        _ = FileManager.default.createFile(atPath: stale, contents: Data("x".utf8))
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -7200)], ofItemAtPath: stale)
        #expect(AtomicFileWriter.removeStaleTemporaries(directory: dir.url.path, name: "db.cid", olderThan: 3600) == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).count == 3000)
    }

    /// A reader that mapped the old file keeps answering from it, unchanged, while builds replace
    /// the file under it; a database opened afterwards sees the new file.
    @Test func readerOfTheOldFileIsUndisturbedByReplacement() throws {
        let dir = TempDir()
        let path = dir.path("live.cid")
        let (oldRecords, oldExpected) = randomRecords(count: 20_000, seed: 1)
        _ = try buildDatabase(oldRecords, at: path)
        let reader = try Database(path: path)
        let numbers = Array(oldExpected.keys.sorted().prefix(5000))

        final class Tally: @unchecked Sendable {
            let lock = NSLock()
            var rounds = 0, wrong = 0, errors = 0
            var stop = false
        }
        let tally = Tally()
        let group = DispatchGroup()
        for _ in 0..<2 {
            onThread(in: group) {
                while true {
                    var wrong = 0, errors = 0
                    for n in numbers {
                        do {
                            if try reader.lookup(n) != oldExpected[n] { wrong += 1 }
                        } catch {
                            errors += 1
                        }
                    }
                    tally.lock.lock()
                    tally.rounds += 1
                    tally.wrong += wrong
                    tally.errors += errors
                    let stop = tally.stop
                    tally.lock.unlock()
                    if stop { break }
                }
            }
        }
        var last: [UInt64: Entry] = [:]
        for round in 0..<4 {
            let (records, expected) = randomRecords(count: 20_000, seed: 100 + UInt64(round))
            _ = try buildDatabase(records, at: path)
            last = expected
            let fresh = try Database(path: path, verify: true)
            #expect(fresh.count == expected.count)
        }
        tally.lock.lock()
        tally.stop = true
        tally.lock.unlock()
        group.wait()

        #expect(tally.rounds >= 2)
        #expect(tally.wrong == 0 && tally.errors == 0)
        // The old mapping still verifies and enumerates the old entries.
        try reader.verify()
        #expect(Array(reader.entries()).count == oldExpected.count)
        let now = try Database(path: path)
        #expect(now.count == last.count)
    }
}
