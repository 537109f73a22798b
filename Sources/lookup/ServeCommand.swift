import CallerID
import CallerIDQuery
import CallerIDServe

// MARK: serve

let serveHelp = """
usage: lookup serve --db FILE|DIR... | --store DIR  [--listen 127.0.0.1:8080] [--country XX]
                    [--access-log FILE|-] [--log-numbers] [options below]

Answers caller-ID lookups over HTTP/1.1 (libmicrohttpd, loaded when the server starts;
Debian: libmicrohttpd12), from the same files 'lookup NUMBER' reads:

  GET  /v1/lookup/NUMBER[?country=XX]  the object 'lookup NUMBER --json' prints: 200 found,
                                       404 not found ({"number":…,"found":false}), 400 a
                                       number that cannot be read ({"input":…,"found":false,"error":…})
  POST /v1/lookup[?country=XX]         numbers one per line, or a JSON array of strings and
                                       numbers: one JSON object per line, in order (the lines of
                                       'lookup - --json'), streamed
  GET  /v1/cnam/NUMBER[?country=XX]    the label as a caller name (text/plain, no line end) for PBX
                                       caller-name sources, safe between the quotes of a SIP display
                                       name (" \\ < > become ' / ( ), control characters a space,
                                       hidden characters dropped); a blocking category's label after
                                       the prefix 'SPAM? ' (--cnam-block-prefix); 404 unknown, 400 a
                                       number that cannot be read: every answer but a 200 has an
                                       empty body
  GET  /healthz                        {"status":"ok",…}: 200 ("degraded" with "missing" while a
                                       pack is missing); 503 while draining, and from the moment a
                                       file in use is seen modified in place or cut short until it
                                       is opened again (its numbers are answered 503 meanwhile;
                                       a read past the end of a cut file reads zeros, never SIGBUS)
  GET  /metrics                        Prometheus text: requests by endpoint and status, latency
                                       histogram, connections, generation, files, entries, reloads

NUMBER is written as for 'lookup NUMBER' (percent-encoded in the URL: %2B for +, %20 for a space).
Every pack of the data is opened before the server answers; a query asks only the packs whose
manifest bounds can hold its number. A pack missing on disk is left out and named (stderr,
/healthz "degraded"): a number in its bounds is a 500, every other is answered.

  --db FILE|DIR       a database file, build directory or store (its generation current at
                      start), repeatable as for 'lookup NUMBER'; SIGHUP opens them again
  --store DIR         an installed store, followed: when its current generation changes (an
                      install or a 'lookup fetch' by another process, seen within 250 ms) the
                      server answers from the new one; a request in flight finishes on the one
                      it started with, which is unmapped when the last such request ends
  --listen HOST:PORT  where to listen (default 127.0.0.1:8080; [::1]:8080 for IPv6; :PORT is
                      127.0.0.1 too: every interface only with 0.0.0.0:PORT or [::]:PORT; port 0:
                      any free port). The line 'listening on HOST:PORT' is printed on stdout
  --country XX        read national forms as in country XX (as 'lookup NUMBER --country XX');
                      ?country=XX overrides it for one request
  --access-log FILE   one line per request (FILE, or - for stdout): TIME CLIENT METHOD TARGET
                      STATUS BYTES SECONDS; the number of an API path is written '*', and the
                      digits of any other run of 4 digits or more (a number written out, in a
                      query string or another path) '#', unless --log-numbers: numbers are
                      personal data
  --log-numbers       write the targets of the access log as sent
  --cnam-block-prefix TEXT  what /v1/cnam/ puts before the label of a blocking category
                      (spam, collector, … : default 'SPAM? '; '' for the label alone). Only a
                      blocking category's answer begins with it (without its trailing spaces),
                      never twice: a blocking label that begins with it is sent as it is, and
                      another category's label loses it
  --cnam-max-chars N  the most characters a /v1/cnam/ answer holds, the prefix included
                      (default 15, the classic caller-name limit; 1 … 1024): counted as Unicode
                      scalars, cut between whole characters (a letter with its accents, an emoji
                      sequence), trailing spaces dropped
  --threads N         event loops (default: 2, or the processors available up to 8)
  --max-connections N connections open at most (default 16384, within the limit of open files)
  --request-timeout S a request must arrive whole within S seconds of its connection's opening
                      or of the answer before it, or the connection is closed (slow clients,
                      idle keep-alive connections); default 10
  --max-header-bytes N  request line and headers at most, in at most 256 header lines (default
                      8192: 431 or 414 beyond)
  --max-body-bytes N  a POST body at most (default 67108864: 413 when declared larger, or once a
                      chunked body that passes it has arrived, its connection then closed)
  --drain-timeout S   on SIGTERM or SIGINT: stop accepting, answer the requests in flight for up
                      to S seconds (default 10), then exit 0
  --json              the start line and the events as JSON objects, one per line:
                      {"listening":"127.0.0.1:8080","port":8080,…} on stdout, {"event":…} on stderr

Signals: SIGHUP opens the data again (a failure keeps the data in use and is logged); SIGTERM
and SIGINT drain and exit 0. Events go to stderr.
Exit: 0 after a drain, 64 usage, 65 damaged data, 66 missing data, 69 libmicrohttpd missing or
the address in use, 74 I/O error.

"""

/// The server's options, read from the command line.
private struct ServeOptions {
    var source: ServedData.Source
    var host = "127.0.0.1"
    var port = 8080
    var settings = ServeSettings()
    var server = HTTPServer.Settings()
    var accessLog: String? = nil
    var logNumbers = false
    var drainTimeout = 10.0
    var json = false

    init(_ args: Arguments) throws(ToolError) {
        func usage(_ message: String) -> ToolError { .usage(message, command: "serve") }
        guard args.positionals.isEmpty else { throw usage("unexpected argument '\(args.positionals[0])'") }
        let dbs = args.values("--db")
        switch (dbs.isEmpty, args.value("--store")) {
        case (false, nil): source = .paths(dbs)
        case (true, let store?): source = .store(store)
        case (false, _?): throw usage("give --db or --store, not both")
        case (true, nil):
            if let p = environmentValue("LOOKUP_DB"), !p.isEmpty { source = .paths([p]) } else { throw usage("no data: pass --db FILE|DIR or --store DIR") }
        }
        if let listen = args.value("--listen") { (host, port) = try Self.address(listen) }
        settings.country = args.value("--country")
        if let prefix = args.value("--cnam-block-prefix") {
            if let problem = CallerNameRule.prefixProblem(prefix) { throw usage("--cnam-block-prefix holds \(problem)") }
            settings.callerName.blockedPrefix = prefix
        }
        settings.callerName.maxCharacters = try Self.count(args, "--cnam-max-chars", default: CallerNameRule.defaultMaxCharacters,
                                                           range: 1...CallerNameRule.maxMaxCharacters)
        let mark = settings.callerName.blockedMark.unicodeScalars.count
        if settings.callerName.maxCharacters < mark {
            throw usage("--cnam-max-chars \(settings.callerName.maxCharacters) leaves no room for the block prefix '\(settings.callerName.blockedMark)' (\(mark) characters)")
        }
        accessLog = args.value("--access-log")
        logNumbers = args.flag("--log-numbers")
        json = args.flag("--json")
        server.threads = try Self.count(args, "--threads", default: min(8, max(2, processorCount())), range: 1...64)
        server.maxConnections = try Self.count(args, "--max-connections", default: 16_384, range: 1...1_000_000)
        server.maxHeaderBytes = try Self.count(args, "--max-header-bytes", default: 8192, range: 1024...1 << 20)
        server.maxBodyBytes = try Self.count(args, "--max-body-bytes", default: 64 << 20, range: 1...1 << 40)
        settings.maxBodyBytes = server.maxBodyBytes
        server.requestTimeout = try Self.seconds(args, "--request-timeout", default: 10)
        drainTimeout = try Self.seconds(args, "--drain-timeout", default: 10)
        server.keepURIs = accessLog != nil
        server.latencyBuckets = settings.latencyBuckets
    }

    /// `HOST:PORT`, `[IPv6]:PORT`, or `:PORT` (127.0.0.1: every interface is only ever asked for
    /// by name, `0.0.0.0:PORT` or `[::]:PORT`).
    static func address(_ text: String) throws(ToolError) -> (String, Int) {
        let bad = ToolError.usage("--listen takes HOST:PORT (127.0.0.1:8080, [::1]:8080, 0.0.0.0:8080, :8080), not '\(text)'", command: "serve")
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else { throw bad }
        var host = String(text[..<colon])
        if host.hasPrefix("[") {
            guard host.hasSuffix("]"), host.count > 2 else { throw bad }
            host = String(host.dropFirst().dropLast())
        } else if host.contains(":") {
            throw bad   // an IPv6 address needs its brackets
        }
        return (host.isEmpty ? "127.0.0.1" : host, port)
    }

    static func count(_ args: Arguments, _ name: String, default value: Int, range: ClosedRange<Int>) throws(ToolError) -> Int {
        guard let text = args.value(name) else { return value }
        guard let n = Int(text), range.contains(n) else { throw .usage("\(name) takes a whole number in \(range.lowerBound)...\(range.upperBound), not '\(text)'", command: "serve") }
        return n
    }

    static func seconds(_ args: Arguments, _ name: String, default value: Double) throws(ToolError) -> Double {
        guard let text = args.value(name) else { return value }
        guard let s = Double(text), s > 0, s <= 86_400 else { throw .usage("\(name) takes seconds (0 < S <= 86400), not '\(text)'", command: "serve") }
        return s
    }
}

func serveCommand(_ raw: [String]) throws(ToolError) -> Int32 {
    if raw.contains("--help") || raw.contains("-h") {
        print(serveHelp, terminator: "")
        return Exit.ok
    }
    let args = try Arguments(raw, command: "serve",
                             valued: ["--db", "--store", "--listen", "--country", "--access-log", "--cnam-block-prefix", "--cnam-max-chars",
                                      "--threads",
                                      "--max-connections", "--request-timeout", "--max-header-bytes", "--max-body-bytes", "--drain-timeout"],
                             flags: ["--log-numbers", "--json"])
    var options = try ServeOptions(args)
    let events = ServeEvents(json: options.json)
    // What the server needs, each refused with its own exit code before anything is opened.
    guard let version = HTTPServer.libraryVersion else {
        throw ToolError(code: Exit.unavailable, message: "lookup serve needs libmicrohttpd: \(HTTPServer.libraryError)")
    }
    let log = try options.accessLog.map { (path) throws(ToolError) in
        AccessLog(try query { () throws(QueryError) in try openAppending(path) }, name: path, showNumbers: options.logNumbers) { events.note($0) }
    }
    // The data is held by the API alone: a set is unmapped when the last request on it ends,
    // the one loaded at start included.
    // A file cut short under its mapping is a withdrawn pack (503 for its numbers), never a
    // SIGBUS that ends the server.
    do throws(CallerIDError) { try MappingGuard.install() } catch { throw ToolError(code: Exit.software, message: error.message) }
    let api = try query { () throws(QueryError) in try ServeAPI(data: try ServedData(options.source), settings: options.settings, accessLog: log) }
    // The server's threads start with these signals blocked: only the loop below receives them.
    ServerSignals.block()
    let files = raiseOpenFileLimit(to: options.server.maxConnections + 256)
    if files < options.server.maxConnections + 256 {
        let fitting = max(16, files - 256)
        events.note("the limit of open files (\(files)) allows \(fitting) connections, not \(options.server.maxConnections)")
        options.server.maxConnections = fitting
    }
    let (socket, port) = try query { () throws(QueryError) in try HTTPServer.listen(host: options.host, port: options.port) }
    let server = try query { () throws(QueryError) in try HTTPServer(socket: socket, settings: options.server, handler: api) }
    let shownHost = options.host.contains(":") ? "[\(options.host)]" : options.host.isEmpty ? "*" : options.host
    events.listening("\(shownHost):\(port)", port: port, data: api.data, library: version, settings: options.server)
    events.missing(api.data)
    serveUntilStopped(api, options.source, events)
    // Drain: no new connections, answers close theirs, /healthz says 503; then wait for the
    // requests in flight, at most the drain timeout.
    api.status.withLock { $0.draining = true }
    server.drain()
    var waited = 0.0
    while server.inFlight > 0 && waited < options.drainTimeout {
        _ = ServerSignals.wait(seconds: 0.05)
        waited += 0.05
        log?.flush()
    }
    let left = server.inFlight
    server.stop()
    log?.flush()
    events.stopped(cut: left, after: options.drainTimeout)
    return Exit.ok
}

/// Runs until SIGTERM or SIGINT: opens the data again on SIGHUP, when a followed store changes
/// generation (checked 4 times a second), and when a file in use was modified in place or cut
/// short (checked every second; the file is withdrawn first: its numbers are answered 503, its
/// mapping not read); flushes the access log. A generation that fails to load is not tried
/// again until the store moves on or SIGHUP comes; data whose changed file could not be opened
/// again is tried again when its files change once more (checked every second).
private func serveUntilStopped(_ api: ServeAPI, _ source: ServedData.Source, _ events: ServeEvents) {
    var ticks = 0
    var failedGeneration: UInt64? = nil
    /// The data's files when opening them again after a change failed.
    var failedFiles: [FileIdentity?]? = nil
    while true {
        let signal = ServerSignals.wait(seconds: 0.25)
        api.accessLog?.flush()
        ticks += 1
        switch signal {
        case .stop:
            return
        case .reload:
            failedGeneration = nil
            reload(api, source, why: "SIGHUP", events)
        case nil:
            let data = api.data
            if let now = data.storeGeneration(), now != data.generation, now != failedGeneration {
                if !reload(api, source, why: "the store's current generation is now \(now)", events) { failedGeneration = now }
            } else if ticks % 4 == 0 {
                let failing = api.status.withLock { $0.problem != nil }
                if !failing, let path = data.fileModifiedInPlace() {
                    // Not read again, whether or not the data can be opened again.
                    data.packs.withdraw(path, because: "\(path) was modified in place while the server answered from it; the numbers it holds are answered 503 until it is opened again (replace database files with rename, never by writing over them)")
                    failedFiles = reload(api, source, why: "\(path) was modified in place", events) ? nil : data.fileIdentities()
                } else if failing, let seen = failedFiles, data.fileIdentities() != seen {
                    failedFiles = reload(api, source, why: "the files changed again", events) ? nil : data.fileIdentities()
                }
            }
        }
    }
}

/// Opens `source` again and answers from it; on failure keeps the data in use (and says so).
@discardableResult
private func reload(_ api: ServeAPI, _ source: ServedData.Source, why: String, _ events: ServeEvents) -> Bool {
    do throws(ToolError) {
        let fresh = try query { () throws(QueryError) in try ServedData(source) }
        // Whole data in use is not given up for data with packs missing.
        if !fresh.missing.isEmpty && api.data.missing.isEmpty {
            throw ToolError(code: Exit.noInput, message: "missing: \(fresh.missing.joined(separator: ", "))")
        }
        api.status.withLock { s in
            s.data = fresh
            s.reloads += 1
            s.problem = nil
        }
        events.reloaded(why: why, data: fresh)
        events.missing(fresh)
        return true
    } catch {
        let old = api.data
        let modified = old.fileModifiedInPlace()
        api.status.withLock { s in
            s.failedReloads += 1
            if let modified { s.problem = "\(modified) was modified in place and cannot be opened again: \(error.message)" }
        }
        events.reloadFailed(why: why, error: error.message, keeping: old)
        return false
    }
}

/// What `lookup serve` tells: the start line on stdout (where it listens), events on stderr;
/// as text, or as one JSON object per line with `--json`.
private struct ServeEvents: Sendable {
    let json: Bool

    func listening(_ address: String, port: Int, data: ServedData, library: String, settings: HTTPServer.Settings) {
        if json {
            StandardStream.output.write("{\"listening\":\(jsonQuote(address)),\"port\":\(port),\(fields(data)),\"libmicrohttpd\":\(jsonQuote(library)),\"threads\":\(settings.threads),\"max_connections\":\(settings.maxConnections)}\n")
        } else {
            StandardStream.output.write("listening on \(address)\n")
            printError("lookup serve: \(data.summary); libmicrohttpd \(library), \(settings.threads) threads, at most \(settings.maxConnections) connections")
        }
    }

    func reloaded(why: String, data: ServedData) {
        emit("{\"event\":\"reload\",\"reason\":\(jsonQuote(why)),\(fields(data))}", "\(why): now answering from \(data.summary)")
    }

    func reloadFailed(why: String, error: String, keeping data: ServedData) {
        emit("{\"event\":\"reload-failed\",\"reason\":\(jsonQuote(why)),\"error\":\(jsonQuote(error)),\(fields(data))}",
             "\(why): cannot open the data (\(escapedForDisplay(error))); still answering from \(data.summary)")
    }

    func stopped(cut: UInt64, after seconds: Double) {
        emit("{\"event\":\"stopped\",\"requests_cut\":\(cut)}",
             "stopped" + (cut > 0 ? " (\(cut) requests still in flight after \(seconds) s were cut)" : ""))
    }

    /// The packs the data lacks, one event each: their numbers fail, the others are answered.
    func missing(_ data: ServedData) {
        for file in data.missing {
            emit("{\"event\":\"missing\",\"file\":\(jsonQuote(file))}",
                 "\(escapedForDisplay(file)) is missing: a number in its bounds is answered 500, every other number as usual")
        }
    }

    func note(_ message: String) {
        emit("{\"event\":\"note\",\"message\":\(jsonQuote(message))}", message)
    }

    private func emit(_ object: String, _ text: String) {
        printError(json ? object : "lookup serve: \(text)")
    }

    /// The data's fields of an event: generation (when a store's), files, entries, ranges.
    private func fields(_ data: ServedData) -> String {
        (data.generation.map { "\"generation\":\($0)," } ?? "") + "\"files\":\(data.files.count),\"entries\":\(data.entries),\"ranges\":\(data.ranges)"
    }
}
