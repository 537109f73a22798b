import Foundation
import CallerID
import CallerIDDirectory
package import CallerIDPipeline
package import CallerIDQuery

// `POST /v1/reports`: people's reports ("this number is a debt collector") taken into the
// report log (``ReportLog``) that `lookup reports` turns into the block pack.

/// How a report's number is read: as `lookup reports` reads it (libphonenumber, plausible
/// numbers; national forms in `country`).
package struct ReportNumbers: Sendable {
    package let reader: NumberNormalizer
    package let country: String?

    package init(reader: NumberNormalizer, country: String?) {
        self.reader = reader
        self.country = country
    }
}

/// A body of reports being received; answered once it is whole.
package final class ReportUpload: HTTPBodySink {
    /// The most bytes a body of reports may hold (413 beyond).
    package static let maxBytes = 1 << 20
    private let log: ReportLog
    private let numbers: ReportNumbers
    /// Who sends them: the API key's name ("-" on a server without keys).
    private let sender: String
    private var body: [UInt8] = []
    private var tooLarge = false

    package init(log: ReportLog, numbers: ReportNumbers, sender: String) {
        self.log = log
        self.numbers = numbers
        self.sender = sender
    }

    package func append(_ bytes: UnsafeRawBufferPointer) {
        guard !tooLarge else { return }
        if body.count + bytes.count > Self.maxBytes {
            tooLarge = true
            body = []
            return
        }
        body.append(contentsOf: bytes)
    }

    package func end(_ exchange: HTTPExchange) {
        func respond(_ status: Int, _ text: String, header: (name: String, value: String)? = nil) {
            exchange.respond(status, endpoint: Endpoint.reports.rawValue, contentType: ServeAPI.json, text: text, header: header)
        }
        guard !tooLarge else {
            return respond(413, "{\"error\":\"a body of reports holds at most \(Self.maxBytes) bytes: send them in several requests\"}\n")
        }
        let now = Date()
        let taken = Self.take(body, numbers: numbers, sender: sender, now: Int64(now.timeIntervalSince1970))
        let refusals = taken.refusals
        if let whole = taken.body {
            return respond(400, "{\"error\":\(jsonQuote(whole))}\n")
        }
        if taken.count > 0 {
            do {
                try log.append(taken.lines, count: taken.count, now: now)
            } catch {
                // Nothing of this body is in the log: the sender may send it again.
                return respond(503, "{\"error\":\(jsonQuote("the reports could not be written (\(error.message)); none was kept: send them again"))}\n",
                               header: ("Retry-After", "5"))
            }
        }
        let errors = refusals.prefix(100).map { "{\"index\":\($0.index ?? 0),\"error\":\(jsonQuote($0.message))}" }.joined(separator: ",")
        respond(taken.count == 0 && !refusals.isEmpty ? 400 : 200,
                "{\"accepted\":\(taken.count),\"refused\":\(refusals.count),\"errors\":[\(errors)]}\n")
    }

    /// What a body gives the log: its accepted reports as JSON lines (`count` of them), the
    /// reports refused and why, or why the whole body is (`body`).
    package struct Taken {
        package var lines: [UInt8] = []
        package var count = 0
        package var refusals: [ReportRefusal] = []
        package var body: String? = nil
    }

    /// Reads and checks the reports of `body` as `lookup reports` reads rows, and writes each
    /// accepted one as the line the log holds:
    /// `{"number":"+E164","reporter":"r…","time":SECONDS,"category":NAME,"received":SECONDS,"key":SENDER}`.
    /// The reporter is never the sender's word: it is the SHA-256 of the sender (the key's name)
    /// and the client id the app sent, so one key's clients cannot pass for another's.
    package static func take(_ body: [UInt8], numbers: ReportNumbers, sender: String, now: Int64) -> Taken {
        var taken = Taken()
        let reports: [Result<SentReport, ReportRefusal>]
        switch ReportIntake.reports(in: body) {
        case .failure(let refusal): taken.body = refusal.message; return taken
        case .success(let r): reports = r
        }
        for sent in reports {
            switch line(sent, numbers: numbers, sender: sender, now: now) {
            case .success(let line):
                taken.lines.append(contentsOf: line.utf8)
                taken.count += 1
            case .failure(let refusal):
                taken.refusals.append(refusal)
            }
        }
        return taken
    }

    private static func line(_ sent: Result<SentReport, ReportRefusal>, numbers: ReportNumbers, sender: String,
                             now: Int64) -> Result<String, ReportRefusal> {
        let report: SentReport
        switch sent {
        case .failure(let refusal): return .failure(refusal)
        case .success(let r): report = r
        }
        func refuse(_ message: String) -> Result<String, ReportRefusal> { .failure(ReportRefusal(index: report.index, message)) }
        guard let text = report.number, !text.isEmpty else { return refuse("no number") }
        let number: UInt64
        do throws(NumberProblem) {
            let read = try numbers.reader.normalize(text, country: numbers.country).numbers
            guard read.count == 1 else { return refuse("number \(quotedInput(Array(text.utf8))): one number, not \(read.count)") }
            number = read[0]
        } catch {
            return refuse("number \(quotedInput(Array(text.utf8))): \(error.message)")
        }
        guard let category = report.category, let verdict = ReportIntake.verdict(category) else {
            return refuse("category \(report.category.map { quotedInput(Array($0.utf8)) } ?? "missing"): give one of \(ReportIntake.verdictNames.joined(separator: ", "))")
        }
        guard let client = report.client, !client.isEmpty else {
            return refuse("no client: give the app's id of the person or device reporting (hashed by the app)")
        }
        var time = now
        if let given = report.time {
            switch ReportIntake.time(given) {
            case .success(let t): time = t
            case .failure(let refusal): return refuse(refusal.message)
            }
            guard time <= now + 300 else { return refuse("the time \(quotedInput(Array(given.utf8))) is in the future") }
        }
        guard let reporter = try? APIKeys.hash(sender + "\n" + client) else { return refuse("the reporter cannot be hashed here") }
        return .success("{\"number\":\"+\(number)\",\"reporter\":\"r\(reporter.prefix(32))\",\"time\":\(time),\"category\":\(jsonQuote(verdict)),\"received\":\(now),\"key\":\(jsonQuote(sender))}\n")
    }
}
