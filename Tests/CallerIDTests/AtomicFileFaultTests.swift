import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import CallerID

/// The atomic writer's durability order and failure handling, through its fault-injection seam
/// (`AtomicFileWriter.Steps`). CrashSafetyTests kills a build with SIGKILL and checks that the
/// target is always old or new, never partial — but a killed process loses nothing of the page
/// cache, so it cannot tell a writer that syncs before the rename from one that never syncs.
/// These tests can: they record the order of the steps, look at the files at each step, and
/// make each step fail.
@Suite struct AtomicFileFaultTests {
    let old: [UInt8] = Array("old contents\n".utf8)
    let new: [UInt8] = Array(repeating: UInt8(ascii: "n"), count: 70_000)

    func contents(_ path: String) -> [UInt8]? { FileManager.default.contents(atPath: path).map { [UInt8]($0) } }
    func temporaries(_ dir: TempDir) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir.url.path)) ?? []).filter { $0.contains(".tmp-") }
    }

    @Test func syncsTheFileBeforeTheRenameAndTheFolderAfter() throws {
        let dir = TempDir()
        let target = dir.path("db.cid")
        try AtomicFileWriter.write(old, to: target)
        var writer = try AtomicFileWriter(path: target)
        try writer.write(new)
        var log: [String] = []
        let defaults = AtomicFileWriter.Steps()
        let oldBytes = old, newCount = new.count
        writer.steps.syncFile = { fd in
            var st = stat()
            _ = fstat(fd, &st)
            // Everything is written to the temporary file; the target is still the old file.
            log.append("sync size=\(st.st_size) target-old=\(self.contents(target) == oldBytes)")
            return defaults.syncFile(fd)
        }
        writer.steps.moveIntoPlace = { from, to in
            log.append("rename \(from.hasPrefix(dir.path(".db.cid.tmp-"))) -> \(to == target)")
            return defaults.moveIntoPlace(from, to)
        }
        writer.steps.syncDirectory = { folder in
            log.append("sync-folder new=\(self.contents(target)?.count == newCount) \(folder == dir.url.path)")
            defaults.syncDirectory(folder)
        }
        try writer.commit()
        #expect(log == ["sync size=\(new.count) target-old=true", "rename true -> true", "sync-folder new=true true"])
        #expect(contents(target) == new)
        #expect(temporaries(dir).isEmpty)
    }

    @Test(arguments: [true, false])
    func aFailedSyncLeavesTheTargetAsItWas(targetExists: Bool) throws {
        let dir = TempDir()
        let target = dir.path("db.cid")
        if targetExists { try AtomicFileWriter.write(old, to: target) }
        var writer = try AtomicFileWriter(path: target)
        try writer.write(new)
        var renamed = false
        writer.steps.syncFile = { _ in errno = EIO; return -1 }
        writer.steps.moveIntoPlace = { _, _ in renamed = true; return 0 }
        #expect {
            try writer.commit()
        } throws: { error in
            let e = error as? CallerIDError
            return e?.code == .io && e?.message.contains("fsync failed") == true
                && e?.message.contains(String(cString: strerror(EIO))) == true
        }
        #expect(!renamed, "a file that was not synced must never be moved into place")
        #expect(contents(target) == (targetExists ? old : nil))
        #expect(temporaries(dir).isEmpty, "the temporary file is removed")
    }

    @Test func aFailedRenameLeavesTheTargetAsItWas() throws {
        let dir = TempDir()
        let target = dir.path("db.cid")
        try AtomicFileWriter.write(old, to: target)
        var writer = try AtomicFileWriter(path: target)
        try writer.write(new)
        var folderSynced = false
        writer.steps.moveIntoPlace = { _, _ in errno = EXDEV; return -1 }
        writer.steps.syncDirectory = { _ in folderSynced = true }
        #expect(throws: CallerIDError.self) { try writer.commit() }
        #expect(!folderSynced)
        #expect(contents(target) == old)
        #expect(temporaries(dir).isEmpty)
    }

    @Test func anAbandonedWriterLeavesNothing() throws {
        let dir = TempDir()
        let target = dir.path("db.cid")
        var writer = try AtomicFileWriter(path: target)
        try writer.write(new)
        #expect(temporaries(dir).count == 1)
        writer.abandon()
        #expect(temporaries(dir).isEmpty)
        #expect(contents(target) == nil)
    }
}
