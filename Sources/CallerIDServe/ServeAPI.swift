import Foundation
package import CallerID
package import CallerIDQuery
package import CallerIDPipeline

// What `lookup serve` answers (docs/SERVE.md). Every answer comes from the code `lookup` itself
// answers with: numbers read by `QueryNumbers` (as `lookup NUMBER --country XX` reads them),
// looked up by `QueryAnswers` (only the packs whose bounds can hold the number), written by
// `writeAnswer` (the objects of `lookup NUMBER --json`), a batch by `BatchAnswers` (the lines
// of `lookup - --json`).

/// The endpoints, as the request counters and `/metrics` tell them apart.
package enum Endpoint: Int, CaseIterable, Sendable {
    /// Requests the HTTP layer answered itself (malformed, headers too large).
    case http = 0
    case lookup = 1
    case batch = 2
    case callerName = 3
    case health = 4
    case metrics = 5
    /// No such path, or a method the path does not take.
    case other = 6
    /// `GET /v3/phone/NUMBER`, OpenCNAM's shape.
    case openCNAM = 7
    /// `POST /v1/reports`.
    case reports = 8

    package var label: String {
        switch self {
        case .http: "http"
        case .lookup: "lookup"
        case .batch: "batch"
        case .callerName: "cnam"
        case .health: "healthz"
        case .metrics: "metrics"
        case .other: "other"
        case .openCNAM: "opencnam"
        case .reports: "reports"
        }
    }
}

/// The answers' settings, fixed for the server's life.
package struct ServeSettings: Sendable {
    package init() {}

    /// `--country`: how numbers without `?country=` are read (nil: international digits only).
    package var country: String? = nil
    /// How `/v1/cnam/` makes a caller name of a label.
    package var callerName = CallerNameRule()
    /// The request body limit (`--max-body-bytes`).
    package var maxBodyBytes = 64 << 20
    /// Numbers of a batch answered per piece of its streamed answer.
    package var batchPiece = 2048
    /// Who may ask what, how often (keys, rates, the proxy in front).
    package var access = AccessSettings()
    /// Where `POST /v1/reports` writes (`--reports-dir`); nil: report intake is off.
    package var reportsDirectory: String? = nil
    /// A report log segment is closed past this size.
    package var reportSegmentBytes = 64 << 20
    /// Latency histogram bounds, seconds.
    package var latencyBuckets: [Double] = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10]
}

/// What changes while the server runs, shared by its threads.
package struct ServeStatus: Sendable {
    /// The data answered from now.
    package var data: ServedData
    /// Loads of new data that took, and that failed (the data in use stayed).
    package var reloads = 0
    package var failedReloads = 0
    /// Shutting down: `/healthz` says so (503), so that load balancers stop sending.
    package var draining = false
    /// Why the data in use cannot be trusted (a file modified in place that could not be opened
    /// again), nil when it can.
    package var problem: String? = nil
    /// Not-found answers that said the number looks like a national one (`"hint"`).
    package var nationalNumberHints = 0
}

/// Answers the API's requests (docs/SERVE.md).
package final class ServeAPI: HTTPHandler {
    package let settings: ServeSettings
    package let status: Locked<ServeStatus>
    package let accessLog: AccessLog?
    private let defaultNumbers: QueryNumbers
    /// Readers for `?country=`, made on first use (only known countries are kept).
    private let countries = Locked<[String: QueryNumbers]>([:])
    /// Reads numbers as a build does, for the hint of a not-found number given without a country.
    private let hintReader: NumberNormalizer?
    package let access: AccessControl
    /// The report log (`--reports-dir`), nil when intake is off.
    package let reportLog: ReportLog?

    package init(data: ServedData, settings: ServeSettings, accessLog: AccessLog?) throws(QueryError) {
        self.settings = settings
        self.accessLog = accessLog
        defaultNumbers = try QueryNumbers(country: settings.country)
        // Loaded now, not by the first request that needs them (17–110 ms for the first
        // `?country=`): libphonenumber, its metadata and every calling code's pattern.
        hintReader = try? NumberNormalizer(rules: .automatic)
        hintReader?.prepareEveryCountry()
        status = Locked(ServeStatus(data: data))
        access = AccessControl(settings.access)
        reportLog = try settings.reportsDirectory.map { (d) throws(QueryError) in try ReportLog(directory: d, maxSegmentBytes: settings.reportSegmentBytes) }
    }

    /// The data a request starts with (and keeps to its end).
    package var data: ServedData { status.withLock { $0.data } }

    package static let json = "application/json"
    package static let jsonLines = "application/x-ndjson"
    package static let text = "text/plain; charset=utf-8"
    package static let prometheus = "text/plain; version=0.0.4; charset=utf-8"
    /// The caller-name endpoint's paths: every answer but a 200 has an empty body.
    package static let callerNamePrefix = "/v1/cnam/"

    /// The OpenCNAM-shaped caller-name paths (`GET /v3/phone/NUMBER?format=json|text|pbx`).
    package static let openCNAMPrefix = "/v3/phone/"

    /// The endpoint a path belongs to and the permission it needs (nil: open to all).
    private static func route(_ path: String) -> (Endpoint, Permissions?) {
        if path.hasPrefix("/v1/lookup/") || path == "/v1/lookup" { return (path == "/v1/lookup" ? .batch : .lookup, .lookup) }
        if path.hasPrefix(callerNamePrefix) { return (.callerName, .lookup) }
        if path.hasPrefix(openCNAMPrefix) { return (.openCNAM, .lookup) }
        if path == "/healthz" { return (.health, nil) }
        if path == "/metrics" { return (.metrics, .metrics) }
        if path == "/v1/reports" { return (.reports, .report) }
        return (.other, nil)
    }

    package func request(_ request: IncomingRequest, _ x: HTTPExchange) {
        let path = request.path
        let reading = request.method == .get || request.method == .head
        let (endpoint, needs) = Self.route(path)
        var key: APIKey? = nil
        switch access.admit(request, needs: needs) {
        case .failure(let refusal): return refuse(refusal, endpoint, request, x)
        case .success(let admitted?):
            x.setLabel(admitted.name)
            key = admitted
        case .success(nil): break
        }
        switch endpoint {
        case .lookup:
            guard reading else { return notAllowed(x, .lookup, allow: "GET, HEAD") }
            lookup(String(path.dropFirst("/v1/lookup/".count)), country: request.country, format: .json, endpoint: .lookup, x)
        case .batch:
            guard request.method == .post else { return notAllowed(x, .batch, allow: "POST") }
            batch(request, x)
        case .callerName:
            guard reading else { return notAllowed(x, .callerName, allow: "GET, HEAD") }
            lookup(String(path.dropFirst(Self.callerNamePrefix.count)), country: request.country,
                   format: .callerName(callerNameRule(request)), endpoint: .callerName, x)
        case .openCNAM:
            guard reading else { return notAllowed(x, .openCNAM, allow: "GET, HEAD") }
            openCNAM(String(path.dropFirst(Self.openCNAMPrefix.count)), request, x)
        case .health:
            guard reading else { return notAllowed(x, .health, allow: "GET, HEAD") }
            health(x)
        case .metrics:
            guard reading else { return notAllowed(x, .metrics, allow: "GET, HEAD") }
            x.respond(200, endpoint: Endpoint.metrics.rawValue, contentType: Self.prometheus,
                      text: metricsText(x.counters, status.current, buckets: settings.latencyBuckets, refusals: access.rateRefusals,
                                        reportsWritten: reportLog?.reportsWritten))
        case .reports:
            guard request.method == .post else { return notAllowed(x, .reports, allow: "POST") }
            reports(request, sender: key?.name ?? "-", x)
        case .http, .other:
            fail(x, .other, 404, "no such endpoint: the API is GET /v1/lookup/NUMBER, POST /v1/lookup, GET /v1/cnam/NUMBER, GET /v3/phone/NUMBER, POST /v1/reports, GET /healthz, GET /metrics")
        }
    }

    /// The server's caller-name rule, with `?charset=ascii` as the request asks.
    private func callerNameRule(_ request: IncomingRequest) -> CallerNameRule {
        var rule = settings.callerName
        rule.ascii = request.argument("charset")?.lowercased() == "ascii"
        return rule
    }

    /// 401 (with `WWW-Authenticate`), 403 or 429 (with `Retry-After`), worded as the endpoint
    /// words its errors.
    private func refuse(_ refusal: AccessRefusal, _ endpoint: Endpoint, _ request: IncomingRequest, _ x: HTTPExchange) {
        let quiet = endpoint == .openCNAM && Self.openCNAMFormat(request) != "json"
        switch refusal {
        case .unauthorized(let why):
            fail(x, endpoint, 401, why, header: ("WWW-Authenticate", "Bearer realm=\"callerid\""), quiet: quiet)
        case .forbidden(let why):
            fail(x, endpoint, 403, why, quiet: quiet)
        case .limited(let seconds, let byKey):
            fail(x, endpoint, 429, "too many requests \(byKey ? "with this key" : "from this address"); retry after \(seconds) s",
                 header: ("Retry-After", String(seconds)), quiet: quiet)
        }
    }

    /// A refusal of the HTTP layer (headers too large, a NUL in the target, a body whose
    /// length is ambiguous…): `{"error":…}`, or for a caller-name path an empty body.
    package func refuse(path: String, status: Int, reason: String, _ x: HTTPExchange) {
        fail(x, .http, status, reason, quiet: path.hasPrefix(Self.callerNamePrefix))
    }

    package func completed(_ completion: HTTPCompletion) {
        accessLog?.record(completion)
    }

    // MARK: answers

    /// `{"error":…}` with `status`; an empty `text/plain` body for the caller-name endpoint
    /// (or when `quiet`): a PBX shows whatever a caller-name body holds as the caller's name.
    private func fail(_ x: HTTPExchange, _ endpoint: Endpoint, _ status: Int, _ message: String,
                      header: (name: String, value: String)? = nil, quiet: Bool = false) {
        if quiet || endpoint == .callerName {
            x.respond(status, endpoint: endpoint.rawValue, contentType: Self.text, text: "", header: header)
        } else {
            x.respond(status, endpoint: endpoint.rawValue, contentType: Self.json, text: "{\"error\":\(jsonQuote(message))}\n", header: header)
        }
    }

    private func notAllowed(_ x: HTTPExchange, _ endpoint: Endpoint, allow: String) {
        fail(x, endpoint, 405, "method not allowed here; allowed: \(allow)", header: ("Allow", allow))
    }

    /// The reader of numbers for `?country=` (the server's `--country` without it).
    private func numbers(_ country: String?) -> Result<QueryNumbers, QueryError> {
        guard let country else { return .success(defaultNumbers) }
        let key = country.uppercased()
        if let known = countries.withLock({ $0[key] }) { return .success(known) }
        do {
            let made = try QueryNumbers(country: key)
            countries.withLock { $0[key] = made }
            return .success(made)
        } catch {
            return .failure(error)
        }
    }

    /// One number's answer, or why there is none to give.
    private enum Found {
        /// `?country=` names no country the server knows.
        case badCountry(QueryError)
        /// The text is not a phone number.
        case notANumber(QueryError)
        /// A file changed under the server (503), or another failure (500).
        case failed(status: Int, message: String)
        /// Looked up: `hit` false when no pack holds the number (the answer then says so).
        case answered(number: UInt64, hit: Bool, answer: Output, numbers: QueryNumbers)
    }

    private func find(_ text: String, country: String?, format: AnswerFormat) -> Found {
        let numbers: QueryNumbers
        switch self.numbers(country) {
        case .success(let reader): numbers = reader
        case .failure(let error): return .badCountry(error)
        }
        let number: UInt64
        switch numbers.read(text) {
        case .success(let n): number = n
        case .failure(let error): return .notANumber(error)
        }
        let query = QueryAnswers(packs: data.packs, format: format)
        var found = QueryAnswers.Answers(capacity: 512)
        do {
            try query.answer([number], into: &found)
        } catch {
            // A file changed under the server (modified in place, or cut short under its
            // mapping) is withdrawn until the data is opened again: 503, try later.
            return .failed(status: error.changedFile != nil ? 503 : 500, message: error.message)
        }
        var out = Output(capturing: true, capacity: 512)
        let hit = query.write(0, of: [number], from: found, to: &out)
        return .answered(number: number, hit: hit, answer: out, numbers: numbers)
    }

    /// `GET /v1/lookup/NUMBER` (`format` JSON) and `GET /v1/cnam/NUMBER` (the label).
    private func lookup(_ text: String, country: String?, format: AnswerFormat, endpoint: Endpoint, _ x: HTTPExchange) {
        let callerName = endpoint == .callerName
        switch find(text, country: country, format: format) {
        case .badCountry(let error):
            fail(x, endpoint, 400, error.message)
        case .notANumber(let error):
            if callerName {
                x.respond(400, endpoint: endpoint.rawValue, contentType: Self.text, text: "")
            } else {
                x.respond(400, endpoint: endpoint.rawValue, contentType: Self.json, text: notANumberJSON(text, error.message))
            }
        case .failed(let status, let message):
            fail(x, endpoint, status, message)
        case .answered(_, let hit, let out, let numbers):
            if !hit, let hint = numbers.nationalHint(text, reader: hintReader, advice: "give ?country=XX") {
                // A PBX trunk that sends 8XXXXXXXXXX without ?country= gets 404s: say why, and count it.
                status.withLock { $0.nationalNumberHints += 1 }
                if !callerName {
                    var body = out.withBytes { Array($0) }
                    if let close = body.lastIndex(of: UInt8(ascii: "}")) {
                        body.replaceSubrange(close..<close, with: Array(",\"hint\":\(jsonQuote(hint))".utf8))
                    }
                    _ = body.withUnsafeBytes { x.respond(404, endpoint: endpoint.rawValue, contentType: Self.json, body: $0) }
                    return
                }
            }
            _ = out.withBytes { x.respond(hit ? 200 : 404, endpoint: endpoint.rawValue, contentType: callerName ? Self.text : Self.json, body: $0) }
        }
    }

    /// `?format=` of an OpenCNAM-shaped request, lowercased (`json` when absent).
    private static func openCNAMFormat(_ request: IncomingRequest) -> String {
        request.argument("format")?.lowercased() ?? "json"
    }

    /// `GET /v3/phone/NUMBER`: the caller name (``CallerNameRule``, as `/v1/cnam/`) in the shape
    /// of OpenCNAM's API, so that a PBX module made for it works by changing its host and key:
    /// `?format=json` (the default) `{"name":…,"number":"+E164","price":0,"uri":"/v3/phone/+E164"}`,
    /// `?format=text` or `pbx` the name alone. Not found: 404, `{"error":…}` or an empty body.
    private func openCNAM(_ text: String, _ request: IncomingRequest, _ x: HTTPExchange) {
        let format = Self.openCNAMFormat(request)
        guard ["json", "text", "pbx"].contains(format) else {
            return fail(x, .openCNAM, 400, "format must be json, text or pbx, not '\(format)'")
        }
        let quiet = format != "json"
        switch find(text, country: request.country, format: .callerName(callerNameRule(request))) {
        case .badCountry(let error), .notANumber(let error):
            fail(x, .openCNAM, 400, error.message, quiet: quiet)
        case .failed(let status, let message):
            fail(x, .openCNAM, status, message, quiet: quiet)
        case .answered(let number, let hit, let out, _):
            guard hit else { return fail(x, .openCNAM, 404, "no caller name is known for +\(number)", quiet: quiet) }
            if quiet {
                _ = out.withBytes { x.respond(200, endpoint: Endpoint.openCNAM.rawValue, contentType: Self.text, body: $0) }
            } else {
                let name = out.withBytes { String(decoding: $0, as: UTF8.self) }
                x.respond(200, endpoint: Endpoint.openCNAM.rawValue, contentType: Self.json,
                          text: "{\"name\":\(jsonQuote(name)),\"number\":\"+\(number)\",\"price\":0,\"uri\":\"\(Self.openCNAMPrefix)+\(number)\"}\n")
            }
        }
    }

    /// `POST /v1/lookup`: the body is taken into a ``BatchUpload``, which answers once it is whole.
    private func batch(_ request: IncomingRequest, _ x: HTTPExchange) {
        if let length = request.contentLength, length > settings.maxBodyBytes {
            return fail(x, .batch, 413, "the body is \(length) bytes; at most \(settings.maxBodyBytes) (send the numbers in several requests)")
        }
        switch numbers(request.country) {
        case .success(let reader):
            x.acceptBody(endpoint: Endpoint.batch.rawValue, into: BatchUpload(api: self, numbers: reader))
        case .failure(let error):
            fail(x, .batch, 400, error.message)
        }
    }

    /// `POST /v1/reports`: the body is taken into a ``ReportUpload``, which answers once it is
    /// whole and its reports are on disk.
    private func reports(_ request: IncomingRequest, sender: String, _ x: HTTPExchange) {
        guard let reportLog else {
            return fail(x, .reports, 404, "report intake is off on this server (it was started without --reports-dir)")
        }
        if let length = request.contentLength, length > ReportUpload.maxBytes {
            return fail(x, .reports, 413, "the body is \(length) bytes; a body of reports holds at most \(ReportUpload.maxBytes)")
        }
        let country = request.country ?? settings.country
        if case .failure(let error) = numbers(country) { return fail(x, .reports, 400, error.message) }
        let reader = ReportNumbers(reader: hintReader ?? NumberNormalizer(), country: country?.uppercased())
        x.acceptBody(endpoint: Endpoint.reports.rawValue, into: ReportUpload(log: reportLog, numbers: reader, sender: sender))
    }

    /// `GET /healthz`: 200 while answering from good data; 503 while draining or when the data
    /// in use cannot be trusted (a file changed in place, a pack withdrawn).
    private func health(_ x: HTTPExchange) {
        let s = status.current
        // Packs missing from the data answered from: answering still (the others' numbers), but
        // not everything.
        // A pack withdrawn because its file changed, before the data is opened again (within a
        // second) or after that failed.
        let problem = s.problem ?? s.data.withdrawn
        let state = s.draining ? "draining" : problem != nil ? "failing" : s.data.missing.isEmpty ? "ok" : "degraded"
        var text = "{\"status\":\"\(state)\""
        if let g = s.data.generation { text += ",\"generation\":\(g)" }
        text += ",\"files\":\(s.data.files.count),\"entries\":\(s.data.entries),\"ranges\":\(s.data.ranges),\"reloads\":\(s.reloads),\"failed_reloads\":\(s.failedReloads)"
        if !s.data.missing.isEmpty { text += ",\"missing\":\(jsonStrings(s.data.missing))" }
        if let problem { text += ",\"error\":\(jsonQuote(problem))" }
        text += "}\n"
        x.respond(state == "ok" || state == "degraded" ? 200 : 503, endpoint: Endpoint.health.rawValue, contentType: Self.json, text: text)
    }
}

/// The access log (`--access-log`): one line per request,
/// `TIME CLIENT METHOD TARGET STATUS BYTES SECONDS [aborted] [key=NAME]` (the name of the API
/// key it was admitted with, never the key), the numbers in the target
/// hidden (`/v1/lookup/*`, a number elsewhere in it `#`: ``hidingNumbers(_:)``) unless
/// `--log-numbers`. Lines are buffered and written at least four times a second (``flush()``).
///
/// A log that cannot be written (a full disk) does not stop the answers: `report` is told once
/// when writing fails and once when it works again, with the number of lines lost between.
package final class AccessLog: Sendable {
    private let stream: StandardStream
    private let name: String
    private let pending = Locked<[UInt8]>([])
    /// Lines lost since writing last failed; nil while writes succeed.
    private let lost = Locked<Int?>(nil)
    private let report: @Sendable (String) -> Void
    package let showNumbers: Bool

    package init(_ stream: StandardStream, name: String, showNumbers: Bool, report: @escaping @Sendable (String) -> Void) {
        self.stream = stream
        self.name = name
        self.showNumbers = showNumbers
        self.report = report
    }

    private func write(_ lines: [UInt8]) {
        let failure = lines.withUnsafeBytes { stream.write($0) }
        let message: String? = lost.withLock { lost in
            if let failure {
                let count = lines.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
                defer { lost = (lost ?? 0) + count }
                return lost == nil ? "access log \(escapedForDisplay(name)): cannot write (\(Platform.errorText(failure))); "
                    + "answering on, its lines are lost until it can be written" : nil
            }
            guard let count = lost else { return nil }
            lost = nil
            return "access log \(escapedForDisplay(name)) written again; at most \(count) lines were lost"
        }
        if let message { report(message) }
    }

    package func record(_ c: HTTPCompletion) {
        let uri = Self.hidingKeys(c.uri ?? "-")
        let target = escapedForDisplay(showNumbers ? uri : Self.hidingNumbers(uri))
        let micros = c.nanoseconds / 1000
        let fraction = String(micros % 1_000_000)
        let seconds = "\(micros / 1_000_000).\(String(repeating: "0", count: 6 - fraction.count))\(fraction)"
        let line = "\(utcTimestamp()) \(c.client.isEmpty ? "-" : c.client) \(c.method.isEmpty ? "-" : escapedForDisplay(c.method)) \(target) \(c.status) \(c.responseBytes) \(seconds)\(c.completed ? "" : " aborted")\(c.label.map { " key=\($0)" } ?? "")\n"
        let full = pending.withLock { buffer -> [UInt8]? in
            buffer.append(contentsOf: line.utf8)
            guard buffer.count >= 1 << 15 else { return nil }
            defer { buffer.removeAll(keepingCapacity: true) }
            return buffer
        }
        if let full { write(full) }
    }

    package func flush() {
        let held = pending.withLock { buffer -> [UInt8] in
            defer { buffer.removeAll(keepingCapacity: true) }
            return buffer
        }
        if !held.isEmpty { write(held) }
    }

    /// `target` with the phone numbers in it hidden: the number of an API path (`/v1/lookup/N`,
    /// `/v1/cnam/N`) replaced by `*`, and elsewhere (other paths, the query string) the digits
    /// of every run that can be a phone number written out — at least ``numberDigits`` digits,
    /// alone or joined by the spaces, dashes, dots, parentheses and plus signs numbers are
    /// written with, percent-encoded or not — replaced by `#`. Shorter digit runs are kept:
    /// `/v1/lookup`, `?page=2`.
    package static func hidingNumbers(_ target: String) -> String {
        let bytes = Array(target.utf8)
        var path = bytes[...], query: ArraySlice<UInt8> = []
        if let q = bytes.firstIndex(of: UInt8(ascii: "?")) {
            path = bytes[..<q]
            query = bytes[q...]
        }
        for prefix in ["/v1/lookup/", "/v1/cnam/", "/v3/phone/"] where path.starts(with: prefix.utf8) && path.count > prefix.utf8.count {
            return prefix + "*" + String(decoding: hidingDigitRuns(query), as: UTF8.self)
        }
        return String(decoding: hidingDigitRuns(bytes[...]), as: UTF8.self)
    }

    /// `target` with the value of every `api_key` and `auth_token` query argument written `***`:
    /// a key sent in the URL never reaches the log, with or without `--log-numbers`.
    package static func hidingKeys(_ target: String) -> String {
        guard let q = target.firstIndex(of: "?") else { return target }
        let arguments = target[target.index(after: q)...].split(separator: "&", omittingEmptySubsequences: false).map { argument -> String in
            let name = argument.prefix { $0 != "=" }
            let plain = (name.removingPercentEncoding ?? String(name)).lowercased()
            return plain == "api_key" || plain == "auth_token" ? "\(name)=***" : String(argument)
        }
        return String(target[...q]) + arguments.joined(separator: "&")
    }

    /// Digits a run must hold to be taken for a phone number (the shortest numbers in use,
    /// national ones of small numbering plans, have four or five).
    package static let numberDigits = 4

    /// `text` with the digits of each run of at least ``numberDigits`` digits (joined by number
    /// punctuation) replaced by `#`; a percent-encoded digit (`%37`) becomes one `#`.
    private static func hidingDigitRuns(_ text: ArraySlice<UInt8>) -> [UInt8] {
        /// One piece of the text: its bytes, and what it is in a written number.
        enum Kind { case digit, joiner, other }
        func kind(of byte: UInt8) -> Kind {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): .digit
            case UInt8(ascii: " "), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "+"): .joiner
            default: .other
            }
        }
        var pieces: [(range: Range<Int>, kind: Kind)] = []
        var i = text.startIndex
        while i < text.endIndex {
            if text[i] == UInt8(ascii: "%"), i + 2 < text.endIndex, let hi = hexDigitValue(text[i + 1]), let lo = hexDigitValue(text[i + 2]) {
                pieces.append((i..<(i + 3), kind(of: hi << 4 | lo)))
                i += 3
            } else {
                pieces.append((i..<(i + 1), kind(of: text[i])))
                i += 1
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(text.count)
        var p = 0
        while p < pieces.count {
            guard pieces[p].kind != .other else {
                out.append(contentsOf: text[pieces[p].range])
                p += 1
                continue
            }
            var end = p, digits = 0
            while end < pieces.count && pieces[end].kind != .other {
                if pieces[end].kind == .digit { digits += 1 }
                end += 1
            }
            for piece in pieces[p..<end] {
                if digits >= numberDigits && piece.kind == .digit { out.append(UInt8(ascii: "#")) } else { out.append(contentsOf: text[piece.range]) }
            }
            p = end
        }
        return out
    }
}
