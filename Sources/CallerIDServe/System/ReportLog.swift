package import Foundation
package import CallerIDQuery
import CallerID
import CallerIDDirectory

// Where `POST /v1/reports` puts what it takes (`--reports-dir DIR`): JSON Lines segments that
// `lookup reports` reads as they are.

/// The report log: the segment being written is `reports-YYYYMMDD-NNNNNN.jsonl.open`; it is
/// closed (renamed `….jsonl`) when it passes its size, when the UTC day changes, on SIGHUP,
/// and when the server stops. Every closed segment holds whole lines only, so `lookup reports DIR/*.jsonl`
/// reads every report answered 2xx up to the last close.
///
/// A request's reports are appended in one write and fsync'd before the request is answered:
/// a 2xx means on disk. A write that fails is cut off again (the segment ends at its last whole
/// line) and the request answered 503. A server killed mid-write leaves an `.open` segment
/// whose last line may be torn; the next start cuts it back to its last line end and closes it.
package final class ReportLog: Sendable {
    package let directory: String
    package let maxSegmentBytes: Int
    /// Only ever touched under `current`'s lock.
    private struct Segment: @unchecked Sendable {
        var file: FileSystem.Appender
        var day: String
        var size: Int
    }
    private let current = Locked<Segment?>(nil)
    /// Segments closed by this server, and reports written.
    private let counts = Locked<(segments: Int, reports: Int)>((0, 0))

    package init(directory: String, maxSegmentBytes: Int = 64 << 20) throws(QueryError) {
        self.directory = directory
        self.maxSegmentBytes = maxSegmentBytes
        do throws(DirectoryError) {
            if !FileManager.default.fileExists(atPath: directory) { try FileSystem.makeDirectory(directory) }
            // Segments a killed server left open: cut back to their last whole line, closed.
            for name in Self.names(in: directory) where name.hasSuffix(".jsonl.open") {
                let path = directory + "/" + name
                let file = try FileSystem.Appender(path, truncate: false)
                let whole = Self.wholeLinesLength(path)
                if whole != FileSystem.fileSize(path) { try file.truncate(to: whole) }
                try file.finish()
                try FileSystem.rename(path, String(path.dropLast(".open".count)))
            }
            try FileSystem.sync(directory, directory: true)
        } catch {
            throw QueryError(passingOn: error)
        }
    }

    /// Reports written since the server started.
    package var reportsWritten: Int { counts.current.reports }

    /// Appends `lines` (whole JSON lines, `count` reports) and fsyncs them; throws when they
    /// are not on disk (nothing of them is then left in the segment).
    package func append(_ lines: [UInt8], count: Int, now: Date = Date()) throws(QueryError) {
        let day = Self.day(now)
        do throws(DirectoryError) {
            try current.withLock { (segment: inout Segment?) throws(DirectoryError) in
                if let s = segment, s.day != day || (s.size > 0 && s.size + lines.count > maxSegmentBytes) {
                    try close(&segment)
                }
                if segment == nil { segment = try open(day: day) }
                let before = segment!.size
                do throws(DirectoryError) {
                    try segment!.file.write(lines)
                    try segment!.file.sync()
                    segment!.size += lines.count
                } catch {
                    try? segment!.file.truncate(to: before)
                    throw error
                }
            }
            counts.withLock { $0.reports += count }
        } catch {
            throw QueryError(passingOn: error)
        }
    }

    /// Closes the open segment (the server stops, or asks for it).
    package func close() {
        current.withLock { segment in try? close(&segment) }
    }

    private func close(_ segment: inout Segment?) throws(DirectoryError) {
        guard let s = segment else { return }
        segment = nil
        try s.file.finish()
        try FileSystem.rename(s.file.path, String(s.file.path.dropLast(".open".count)))
        try FileSystem.sync(directory, directory: true)
        counts.withLock { $0.segments += 1 }
    }

    private func open(day: String) throws(DirectoryError) -> Segment {
        let prefix = "reports-\(day)-"
        let taken = Self.names(in: directory).filter { $0.hasPrefix(prefix) }
            .compactMap { Int($0.dropFirst(prefix.count).prefix(6)) }.max() ?? 0
        let number = String(taken + 1)
        let path = directory + "/" + prefix + String(repeating: "0", count: max(0, 6 - number.count)) + number + ".jsonl.open"
        let file = try FileSystem.Appender(path, truncate: false)
        try FileSystem.sync(directory, directory: true)
        return Segment(file: file, day: day, size: FileSystem.fileSize(path) ?? 0)
    }

    private static func names(in directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasPrefix("reports-") }.sorted()
    }

    /// `YYYYMMDD` of `date` in UTC.
    private static func day(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d%02d%02d", c.year ?? 1970, c.month ?? 1, c.day ?? 1)
    }

    /// The length of `path` up to and including its last line end (0 when it has none).
    private static func wholeLinesLength(_ path: String) -> Int {
        guard let handle = FileHandle(forReadingAtPath: path) else { return 0 }
        defer { try? handle.close() }
        var end = Int((try? handle.seekToEnd()) ?? 0)
        while end > 0 {
            let start = max(0, end - 65_536)
            try? handle.seek(toOffset: UInt64(start))
            guard let chunk = try? handle.read(upToCount: end - start), !chunk.isEmpty else { return 0 }
            if let newline = chunk.lastIndex(of: 0x0A) { return start + (newline - chunk.startIndex) + 1 }
            end = start
        }
        return 0
    }
}
