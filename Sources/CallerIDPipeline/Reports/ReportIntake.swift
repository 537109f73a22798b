package import CallerID

// Reports sent to `lookup serve` (`POST /v1/reports`): a request body read with the package's
// JSON reader (the one every input row goes through), each report checked as `lookup reports`
// checks its rows, so that what the server takes `lookup reports` reads.

/// One report of a request body, as sent.
package struct SentReport: Equatable {
    /// 0-based position in the body (the array's element, or the JSON Lines object).
    package var index: Int
    package var number: String?
    package var category: String?
    package var time: String?
    /// The app's id of the person or device reporting (hashed by the app).
    package var client: String?
}

package enum ReportIntake {
    /// Reports one body may hold.
    package static let maxReports = 10_000
    /// Bytes a field may hold.
    package static let maxFieldBytes = 256

    /// The reports of `body`: one JSON array of objects, or JSON Lines (one object a line, blank
    /// lines skipped). Each is its fields or why it cannot be read (a JSON Lines object with bad
    /// syntax, a nested value, an overlong field); the whole body is refused (the error) when an
    /// array's syntax breaks, when it holds more than ``maxReports``, or when it is neither.
    package static func reports(in body: [UInt8]) -> Result<[Result<SentReport, ReportRefusal>], ReportRefusal> {
        guard let first = body.firstIndex(where: { !isSpace($0) }) else { return .failure(ReportRefusal(index: nil, "the body holds no report")) }
        var out: [Result<SentReport, ReportRefusal>] = []
        if body[first] == UInt8(ascii: "[") {
            var cursor = JSONCursor(buffer: body, source: nil)
            cursor.maxField = maxFieldBytes
            cursor.maxRecord = 16 * maxFieldBytes
            var record = Record()
            do throws(PipelineError) {
                _ = try cursor.expect(0x5B, "'['")
                try cursor.skipWhitespace()
                if try cursor.peek() == 0x5D { _ = try cursor.next() } else {
                    while true {
                        guard out.count < maxReports else { return .failure(ReportRefusal(index: nil, "more than \(maxReports) reports in one body")) }
                        try cursor.skipWhitespace()
                        record.reset(line: cursor.line)
                        if let e = try cursor.parseObject(into: &record) {
                            return .failure(ReportRefusal(index: out.count, "JSON syntax, line \(e.line): \(e.message)"))
                        }
                        out.append(report(record, index: out.count, overflow: cursor.overflow?.message))
                        try cursor.skipWhitespace()
                        guard let sep = try cursor.next(), sep == 0x2C || sep == 0x5D else {
                            return .failure(ReportRefusal(index: nil, "JSON syntax, line \(cursor.line): expected ',' or ']' after a report"))
                        }
                        if sep == 0x5D { break }
                    }
                }
                try cursor.skipWhitespace()
                if try cursor.peek() != nil { return .failure(ReportRefusal(index: nil, "text after the array")) }
            } catch {
                return .failure(ReportRefusal(index: nil, error.message))
            }
            return .success(out)
        }
        // JSON Lines: each line through the pipeline's own line parser, then its field limit.
        for line in body.split(separator: 0x0A, omittingEmptySubsequences: true) where line.contains(where: { !isSpace($0) }) {
            guard out.count < maxReports else { return .failure(ReportRefusal(index: nil, "more than \(maxReports) reports in one body")) }
            var record = Record()
            let problem: JSONSyntaxError? = line.withUnsafeBytes { bytes in
                do throws(JSONSyntaxError) { try JSONObjectParser.parseLine(bytes, into: &record) } catch { return error }
                return nil
            }
            if let problem {
                out.append(.failure(ReportRefusal(index: out.count, "JSON syntax: \(problem.message)")))
                continue
            }
            let overflow = record.oversizedField(limit: maxFieldBytes).map { "\(record.fieldName($0)) is longer than \(maxFieldBytes) bytes" }
            out.append(report(record, index: out.count, overflow: overflow))
        }
        guard !out.isEmpty else { return .failure(ReportRefusal(index: nil, "the body holds no report")) }
        return .success(out)
    }

    private static func report(_ record: Record, index: Int, overflow: String?) -> Result<SentReport, ReportRefusal> {
        if let overflow { return .failure(ReportRefusal(index: index, overflow)) }
        var report = SentReport(index: index)
        for i in record.names.indices {
            let name = String(decoding: record.name(i), as: UTF8.self)
            let keys: [String: WritableKeyPath<SentReport, String?>] = ["number": \.number, "category": \.category, "time": \.time, "client": \.client]
            guard let key = keys[name] else { continue }   // other fields (a comment) are not kept
            guard !record.nested.contains(i) else { return .failure(ReportRefusal(index: index, "\(name) is an object or array")) }
            guard let text = String(validating: record.value(i), as: UTF8.self) else {
                return .failure(ReportRefusal(index: index, "\(name) is not UTF-8"))
            }
            report[keyPath: key] = text
        }
        return .success(report)
    }

    /// The verdict `category` stands for as `lookup reports` reads it with its default map:
    /// `safe` or a blocking category's name; nil when it is neither.
    package static func verdict(_ category: String) -> String? {
        let value = String(decoding: Array(category.utf8).trimmingSpaces, as: UTF8.self)
        if value.lowercased() == "safe" { return "safe" }
        guard !value.isEmpty, let c = try? CategoryMap().category(for: value), c.action == .block else { return nil }
        return c.name
    }

    /// The blocking categories and `safe`: what a report's category may be.
    package static var verdictNames: [String] { Category.blockingNames.sorted() + ["safe"] }

    /// Seconds since 1970 of a report's time (RFC 3339 or Unix seconds), as `lookup reports`
    /// reads it; the reason when it is not one.
    package static func time(_ text: String) -> Result<Int64, ReportRefusal> {
        do throws(ReportTime.Problem) {
            let t = try ReportTime.parse(Array(text.utf8))
            guard t < ReportTime.limit else { return .failure(ReportRefusal(index: nil, "the time is after the year 36812")) }
            return .success(t)
        } catch {
            return .failure(ReportRefusal(index: nil, error.message))
        }
    }

    private static func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }
}

/// Why a report (`index`) or a whole body (`index` nil) was refused.
package struct ReportRefusal: Error, Equatable {
    package var index: Int?
    package var message: String

    package init(index: Int?, _ message: String) {
        self.index = index
        self.message = message
    }
}
