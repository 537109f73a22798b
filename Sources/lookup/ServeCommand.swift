import Foundation
import CallerID
import CallerIDQuery
import CallerIDServe

// MARK: serve

let serveHelp = """
usage: lookup serve --db FILE|DIR... | --store DIR  [--listen 127.0.0.1:8080] [--country XX]
                    [--access-log FILE|-] [--log-numbers] [--keys FILE] [--rate R --burst N]
                    [options below]
       lookup serve --keys FILE --add-key NAME --may lookup[,report,metrics] [--rate R --burst N]

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
  GET  /v3/phone/NUMBER[?format=json|text|pbx]  the caller name in the shape of OpenCNAM's API:
                                       {"name":…,"number":"+E164","price":0,"uri":"/v3/phone/+E164"},
                                       or the name alone with format=text or pbx (a PBX module made
                                       for OpenCNAM works by changing its host and key)
                                       ?charset=ascii (here and on /v1/cnam/): names transliterated
                                       to Latin ASCII, for phones that cannot show Cyrillic
  POST /v1/reports                     people's reports, into the log of --reports-dir (below)
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
Open network (docs/SERVE.md): without --keys anyone who reaches the server may ask anything,
so it listens only on a loopback address unless --open says an open server is meant.
  --keys FILE         API keys: one a line, NAME sha256:HASH PERMISSIONS [rate=R] [burst=N]
                      (PERMISSIONS: lookup, report, metrics, joined by commas). The file holds
                      only hashes. A request sends its key as 'Authorization: Bearer KEY',
                      ?api_key=KEY or ?auth_token=KEY: 401 without a known key, 403 without the
                      permission; /healthz needs none. The access log names the key
  --add-key NAME --may PERMISSIONS  make a key: its line is appended to --keys FILE, the key
                      is printed once on stdout (and kept nowhere); the server does not start.
                      SIGHUP reads the keys file again: a key added or removed takes effect
  --rate R            requests per key (unless its line says otherwise), and per client address
                      for requests without a valid key: R as N/s, N/min or N/h; 429 with
                      Retry-After beyond it
  --burst N           requests at once above the rate (default: two seconds' worth)
  --trust-proxy       the client address is the last of X-Forwarded-For (set by the proxy in
                      front), not the connection's peer
  --open              listen on a non-loopback address without --keys
  --tls-cert FILE --tls-key FILE  HTTPS (TLS 1.2 and 1.3, libmicrohttpd with GnuTLS): the PEM
                      certificate chain and its private key; SIGHUP reads them again (a
                      renewal) for new connections, without refusing one
  --reports-dir DIR   take POST /v1/reports (a key with 'report'): a JSON array or JSON Lines
                      of {"number":…,"category":…,"client":…,"time":…} (client: the app's hashed
                      id of the person; time optional, RFC 3339 or Unix seconds). Each accepted
                      report is appended to DIR/reports-DAY-N.jsonl.open and fsync'd before the
                      answer ({"accepted":N,"refused":M,"errors":[…]}); a segment is closed
                      (renamed .jsonl) past --reports-segment-bytes (64 MiB), at midnight UTC,
                      on SIGHUP and at the stop: 'lookup reports -o PACK DIR/*.jsonl' reads them

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
struct ServeOptions {
    var source: ServedData.Source
    var host = "127.0.0.1"
    var port = 8080
    var settings = ServeSettings()
    var server = HTTPServer.Settings()
    var accessLog: String? = nil
    var logNumbers = false
    var drainTimeout = 10.0
    var json = false
    var keysPath: String? = nil
    /// `--tls-cert`, `--tls-key`: read at start and on SIGHUP.
    var tlsFiles: (certificate: String, key: String)? = nil

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
        try readAccess(args)
    }

    /// `--keys`, `--add-key`/`--may`, `--rate`/`--burst`, `--trust-proxy`, `--open`.
    private mutating func readAccess(_ args: Arguments) throws(ToolError) {
        func usage(_ message: String) -> ToolError { .usage(message, command: "serve") }
        keysPath = args.value("--keys")
        if let rate = args.value("--rate") {
            guard let perSecond = RateLimit.perSecond(rate) else { throw usage("--rate takes N/s, N/min or N/h (50/s), not '\(rate)'") }
            let burst = try Self.count(args, "--burst", default: max(1, Int((perSecond * 2).rounded(.up))), range: 1...1_000_000_000)
            settings.access.rate = RateLimit(perSecond: perSecond, burst: Double(burst))
        } else if args.value("--burst") != nil {
            throw usage("--burst needs --rate")
        }
        // The peer's address is read for each request only when a rate counts per client.
        server.clientAddresses = settings.access.rate != nil
        settings.access.trustProxy = args.flag("--trust-proxy")
        switch (args.value("--tls-cert"), args.value("--tls-key")) {
        case (let cert?, let key?):
            tlsFiles = (cert, key)
            server.tls = try query { () throws(QueryError) in try TLSFiles.read(certificate: cert, key: key) }
        case (nil, nil): break
        default: throw usage("give --tls-cert and --tls-key together")
        }
        settings.reportsDirectory = args.value("--reports-dir")
        settings.reportSegmentBytes = try Self.count(args, "--reports-segment-bytes", default: 64 << 20, range: 4096...1 << 40)
        if args.value("--may") != nil { throw usage("--may goes with --add-key") }
        if let keysPath { settings.access.keys = try query { () throws(QueryError) in try APIKeys.read(keysPath) } }
        if settings.access.keys == nil, !args.flag("--open"), !AccessControl.isLoopback(host) {
            throw usage("listening on \(host.isEmpty ? "every address" : host) without --keys lets anyone who reaches it ask anything: give --keys FILE, or --open if that is meant")
        }
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
                                      "--max-connections", "--request-timeout", "--max-header-bytes", "--max-body-bytes", "--drain-timeout",
                                      "--keys", "--add-key", "--may", "--rate", "--burst", "--reports-dir", "--reports-segment-bytes",
                                      "--tls-cert", "--tls-key"],
                             flags: ["--log-numbers", "--json", "--trust-proxy", "--open"])
    if let name = args.value("--add-key") { return try addKey(name: name, args) }
    var options = try ServeOptions(args)
    let events = ServeEvents(json: options.json)
    // What the server needs, each refused with its own exit code before anything is opened.
    guard let version = HTTPServer.libraryVersion else {
        throw ToolError(code: Exit.unavailable, message: "lookup serve needs libmicrohttpd: \(HTTPServer.libraryError)")
    }
    if options.server.tls != nil && !HTTPServer.supportsTLS {
        throw ToolError(code: Exit.unavailable, message: "libmicrohttpd \(version) was built without TLS: --tls-cert needs one built with GnuTLS (Debian's is)")
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
    api.serveUntilStopped(options.source, events) {
        // SIGHUP: the open report segment closed (everything taken so far readable by `lookup
        // reports`), the keys file read again (a key added or revoked), then the certificate
        // and key (a renewal), for new connections.
        api.reportLog?.close()
        if let path = options.keysPath {
            do {
                let keys = try query { () throws(QueryError) in try APIKeys.read(path) }
                try query { () throws(QueryError) in try api.access.replaceKeys(keys) }
                events.note("keys \(path) read again: \(keys.keys.count) key\(keys.keys.count == 1 ? "" : "s")")
            } catch {
                events.note("keys \(path) not read again, the keys in force are kept: \(toolError(error).message)")
            }
        }
        guard let files = options.tlsFiles else { return }
        do {
            try query { () throws(QueryError) in
                let pair = try TLSFiles.read(certificate: files.certificate, key: files.key)
                try server.reloadTLS(certificate: pair.certificate, key: pair.key)
            }
            events.note("TLS certificate \(files.certificate) loaded again; new connections use it")
        } catch {
            events.note("TLS certificate \(files.certificate) not loaded again, the one in use is kept: \(toolError(error).message)")
        }
    }
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
    api.reportLog?.close()
    log?.flush()
    events.stopped(cut: left, after: options.drainTimeout)
    return Exit.ok
}

/// `lookup serve --keys FILE --add-key NAME --may …`: the new key's line appended to FILE (made
/// if missing, its other lines checked first: a name is used once), the key on stdout once.
private func addKey(name: String, _ args: Arguments) throws(ToolError) -> Int32 {
    func usage(_ message: String) -> ToolError { .usage(message, command: "serve") }
    guard let path = args.value("--keys") else { throw usage("--add-key needs --keys FILE (the file the key's hash is added to)") }
    if let problem = APIKeys.nameProblem(name) { throw usage("--add-key: a key name is \(problem)") }
    guard let names = args.value("--may"), let may = Permissions(names: names) else {
        throw usage("--add-key needs --may with lookup, report or metrics, joined by commas")
    }
    var rate: RateLimit? = nil
    if let r = args.value("--rate") {
        guard let perSecond = RateLimit.perSecond(r) else { throw usage("--rate takes N/s, N/min or N/h (50/s), not '\(r)'") }
        rate = RateLimit(perSecond: perSecond, burst: Double(try ServeOptions.count(args, "--burst", default: max(1, Int((perSecond * 2).rounded(.up))),
                                                                                   range: 1...1_000_000_000)))
    }
    let secret = try query { () throws(QueryError) in try APIKeys.add(name: name, may: may, rate: rate, to: path) }
    var out = Output()
    out.write(secret + "\n")
    out.flush()
    printError("added key \(name) (\(may.names)) to \(path); the key above is shown once and kept nowhere")
    return Exit.ok
}
