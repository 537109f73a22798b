import Testing
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import CallerID

// The mapping guard (MappingGuard, Sources/CPortable/signals.c): a database file cut short in
// place under a mapped reader used to kill the process with SIGBUS at the first read of a page
// past the new end. Each test runs in a child process of its own (an exit test): a guard that
// failed would end that child, not the test run, and the SIGBUS handler it installs stays in it.

@Suite struct MappingGuardTests {
    /// Reads past the end of a truncated mapped file read zeros, the database says it faulted,
    /// and `checkFile()` refuses it from then on; the process lives.
    @Test func readsPastTheEndOfATruncatedFileMarkTheDatabaseInsteadOfKillingTheProcess() async {
        await #expect(processExitsWith: .success) {
            try MappingGuard.install()
            let dir = TempDir()
            let path = dir.path("live.cid")
            let entries = (0..<60_000).map { i in Entry(number: 79_130_000_000 + UInt64(i) * 7, label: "Entry \(i)") }
            _ = try buildDatabase(entries, at: path)
            let db = try Database(path: path)
            guard !db.mappingFaulted, MappingGuard.faults == 0, (try? db.checkFile()) != nil else { exit(2) }
            guard try db.lookup(entries[59_999].number) == entries[59_999] else { exit(3) }
            guard truncate(path, 4096) == 0 else { exit(4) }
            // Every number, most of them in blocks that were cut off: none may kill the process.
            for e in entries { _ = try? db.lookup(e.number) }
            guard db.mappingFaulted, MappingGuard.faults > 0 else { exit(5) }
            do throws(CallerIDError) {
                try db.checkFile()
                exit(6)
            } catch {
                guard error.code == .fileChanged, error.message.contains("cut short") else { exit(7) }
            }
            // Another database, mapped after the fault, is not marked by it.
            let other = dir.path("other.cid")
            _ = try buildDatabase(Array(entries.prefix(100)), at: other)
            guard try !Database(path: other).mappingFaulted else { exit(8) }
            exit(0)
        }
    }

    /// A SIGBUS outside every database mapping (here a mapping the guard does not know) ends
    /// the process as it would have without the guard: the handler passes it on.
    @Test func aFaultOutsideTheDatabaseMappingsStillEndsTheProcess() async {
        await #expect(processExitsWith: .signal(SIGBUS)) {
            try MappingGuard.install()
            let dir = TempDir()
            let path = dir.path("plain.bin")
            FileManager.default.createFile(atPath: path, contents: Data(repeating: 1, count: 1 << 16))
            let fd = open(path, O_RDWR)
            guard fd >= 0, let p = mmap(nil, 1 << 16, PROT_READ, MAP_SHARED, fd, 0), p != MAP_FAILED else { exit(2) }
            guard ftruncate(fd, 0) == 0 else { exit(3) }
            let byte = p.load(fromByteOffset: 1 << 15, as: UInt8.self)  // SIGBUS: not a registered mapping
            exit(byte == 0 ? 4 : 5)
        }
    }
}
