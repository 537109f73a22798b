import Foundation
import CallerIDDirectory
import CallerID
import CallerIDQuery

// `lookup keygen`, `lookup sign`, `lookup fetch`: signed build directories and updates over
// HTTP (docs/CALL-DIRECTORY.md "Updates over the network").

// MARK: keygen

let keygenHelp = """
usage: lookup keygen -o NAME

Writes a new Ed25519 key pair: the secret key NAME (mode 0600; keep it off the web server
and out of the app) and the public key NAME.pub (ship it with the app; 'lookup install'
and 'lookup fetch' take it to check signatures). Refuses to overwrite either file.

Exit: 0 written, 64 usage or a file exists, 74 I/O error.

"""

func keygenCommand(_ raw: [String]) throws(ToolError) -> Int32 {
    if raw.contains("--help") || raw.contains("-h") {
        print(keygenHelp, terminator: "")
        return Exit.ok
    }
    let args = try Arguments(raw, command: "keygen", valued: ["-o"], flags: [])
    guard let name = args.value("-o") else { throw .usage("no key file: pass -o NAME", command: "keygen") }
    guard args.positionals.isEmpty else { throw .usage("unexpected argument '\(args.positionals[0])'", command: "keygen") }
    do {
        let key = try SigningSecretKey.generate()
        try key.write(to: name)
        var out = Output()
        out.write("wrote secret key \(name) (mode 0600) and public key \(name).pub, key id \(key.publicKey.keyID)\n")
        out.flush()
        return Exit.ok
    } catch {
        throw toolError(error)
    }
}

// MARK: sign

let signHelp = """
usage: lookup sign --key NAME BUILD_DIR

Signs BUILD_DIR/manifest.json (written by 'lookup build -o DIR'): writes
BUILD_DIR/manifest.json.sig, a detached Ed25519 signature by the secret key NAME over the
exact bytes of the manifest, which lists every file's size and SHA-256, the dataset version
and the build time. Every file is checked against the manifest first: a damaged set is
never signed. Upload the whole folder, signature included, to any web server.

Exit: 0 signed, 64 usage, 65 bad manifest, damaged file or bad key, 66 missing, 74 I/O error.

"""

func signCommand(_ raw: [String]) throws(ToolError) -> Int32 {
    if raw.contains("--help") || raw.contains("-h") {
        print(signHelp, terminator: "")
        return Exit.ok
    }
    let args = try Arguments(raw, command: "sign", valued: ["--key"], flags: [])
    guard let keyPath = args.value("--key") else { throw .usage("no secret key: pass --key NAME", command: "sign") }
    guard args.positionals.count == 1 else { throw .usage("give one build directory", command: "sign") }
    let directory = args.positionals[0]
    do {
        let key = try SigningSecretKey(contentsOf: keyPath)
        guard FileManager.default.fileExists(atPath: directory) else {
            throw DirectoryError(.fileNotFound, "\(directory): no such build directory")
        }
        let signature = try ManifestSignature.sign(directory: directory, with: key)
        var out = Output()
        let folder = OutputPath.withoutTrailingSlashes(directory)
        out.write("signed \(folder)/manifest.json with key \(signature.keyID): \(folder)/\(ManifestSignature.fileName)\n")
        out.flush()
        return Exit.ok
    } catch {
        throw toolError(error)
    }
}

/// A public key file given on the command line.
func readTrustedKey(_ path: String) throws(ToolError) -> SigningPublicKey {
    do { return try SigningPublicKey(contentsOf: path) } catch { throw toolError(error) }
}

// MARK: fetch

let fetchHelp = """
usage: lookup fetch URL --store DIR --trust NAME.pub [--allow-downgrade] [--slots M]
                    [--max-entries N] [--min-rate BYTES] [--grace SECONDS] [--json]
       lookup fetch URL --store DIR --trust NAME.pub --source NAME [--regions A,B]
                    [--priority N] [options above]
       lookup fetch URL --trust NAME.pub --list [--json]

Brings the store DIR up to date from URL, a web folder holding a signed build directory
(manifest.json, manifest.json.sig and the databases as static files):
downloads the manifest and its signature and verifies them with the public key NAME.pub
(and with the key the store requires, if an install recorded one);
checks that the files to download fit in the free space of DIR's disk; downloads only the
files whose SHA-256 is not in the store's current generation, resuming an interrupted file
with an HTTP Range request; checks each file's size and SHA-256; and installs the new
generation through the install path (every file verified, one atomic switch; settings,
slots and rules kept unless given). A file missing from the store's current generation,
or damaged in it, is downloaded again, even when the set is the installed one.

Every transfer must average --min-rate bytes/s once --grace seconds have passed (a file of
N bytes ends within grace + N / rate seconds), and an HTTP error status ends it at the
status line, so a fetch ends by itself whatever the server does. The store's install lock
is held for the install step only: a local 'lookup install' never waits for a download.
Downloads live in DIR/.fetch/, one fetch at a time (a second fetch waits, then finds the
store up to date); after a failure it keeps only what the next fetch can resume. Any
failure leaves the current generation in place and in use. Ctrl-C or SIGTERM says on stderr
what it leaves (before the install: the store untouched, and the next fetch keeps the files
downloaded whole and resumes the one cut short) and ends by the signal (130 for Ctrl-C).
Uses libcurl (Debian: libcurl4), loaded only when a fetch runs.

  --trust NAME.pub   the publisher's public key (required)
  --source NAME      the store is composed of sources (docs/CALL-DIRECTORY.md, "Sources and
                     packs"): bring source NAME (1 to 48 of a-z 0-9 - _) up to date from URL,
                     downloading only the files of its subscribed regions, beside the other
                     sources' packs. A new source is subscribed and its key pinned: its later
                     sets must be signed by that key, whatever --trust says. Without --source,
                     a store installed without sources gets URL's whole set as before; a store
                     of sources updates the source fetched from URL, or one named after it
                     (host and path: https://example.org/cid -> example-org-cid); a source
                     already pinned to the --trust key at another address is refused (give
                     its --source); --source NAME with another URL moves NAME to it (said)
  --regions A,B      add regions A and B of URL's set to the source's subscription (only
                     their files are downloaded); default: keep it (a new source: every
                     region). 'lookup store remove' drops regions and sources
  --priority N       the source's precedence: higher wins, then the source subscribed
                     first (default: keep; 0 for a new source)
  --list             print the regions URL's signed manifest offers (name, entries, bytes,
                     kinds, number bounds of each file) and its dataset version; no --store
  --allow-downgrade  install a set older than the installed one (by dataset version when
                     both are numbers such as 42 or 2026.12.01, else by build time);
                     without it an older set, such as a replayed manifest, is refused
  --slots M          extensions the entries are split across (1-64; default: the store's,
                     1 for a new store): a set larger than one extension needs more
  --max-entries N    entries per extension (default: the store's, at most 1,999,999);
                     both are applied even when the store is up to date (its data are
                     installed again with them)
  --min-rate BYTES   the slowest average transfer accepted, bytes/s (default 8192)
  --grace SECONDS    seconds before --min-rate applies (default 30)
  --json             one JSON object: {"store":…,"url":…,"up_to_date":…,"generation":…,
                     "dataset_version":…,"files_fetched":N,"files_reused":N,
                     "files_cached":N,"fetched":[…],"cached":[…],"bytes_downloaded":N,
                     "bytes_resumed":N,"seconds":S,"source":…,"regions":[…],
                     "unavailable_regions":[…],"missing_packs":[…],"max_entries":N,
                     "split":…,"slots":[…]} (source and regions null for a set without
                     sources; max_entries, split and slots null when nothing was installed;
                     per slot as 'lookup install --json': content_changed says whether its
                     extension needs a reload); with --list {"url":…,
                     "dataset_version":…,"build_time":…,"regions":[{"region":…,"files":[…],
                     "entries":N,"bytes":N,"numbers":[[FIRST,LAST],…],"kinds":[…]}]};
                     a failure is one JSON object too:
                     {"store":…,"error":{"code":…,"message":…},"exit_code":N}
                     ("cached": files an earlier, failed fetch of the set downloaded whole)

Exit: 0 installed or up to date, 64 usage, 65 bad signature, bad manifest (or one over
8 MiB, a signature over 4,096 bytes), a file that differs from the signed manifest, an
older set, or a set over the budget of the slots; 69 server unreachable, an HTTP error
status, or a transfer slower than --min-rate; 74 I/O error (a full disk, or files that
need more than the free space).

"""

func fetchCommand(_ raw: [String]) throws(ToolError) -> Int32 {
    if raw.contains("--help") || raw.contains("-h") {
        print(fetchHelp, terminator: "")
        return Exit.ok
    }
    return try reportingJSON(raw) { try fetchBody(raw) }
}

private func fetchBody(_ raw: [String]) throws -> Int32 {
    let command = "fetch"
    let args = try Arguments(raw, command: command, valued: ["--store", "--trust", "--slots", "--max-entries", "--min-rate", "--grace",
                                                             "--source", "--regions", "--priority"],
                             flags: ["--allow-downgrade", "--json", "--list"])
    guard let trustPath = args.value("--trust") else { throw ToolError.usage("no public key: pass --trust NAME.pub", command: command) }
    guard args.positionals.count == 1 else { throw ToolError.usage("give one URL", command: command) }
    var url = args.positionals[0]
    // The manifest's own URL names the set beside it.
    if let slash = url.lastIndex(of: "/"), url[url.index(after: slash)...] == "manifest.json", url[..<slash].contains("://") {
        let base = String(url[..<slash])
        printError("note: \(url) names the set's manifest; fetching the set at \(base)")
        url = base
    }
    guard url.hasPrefix("http://") || url.hasPrefix("https://") else {
        throw ToolError.usage("URL must start with http:// or https://, not '\(url)'", command: command)
    }
    let source = try args.value("--source").map { name throws(ToolError) in try checkedSourceName(name, command: command) }
    let regions = try parseRegions(args.value("--regions"), command: command)
    let priority = try parsePriority(args.value("--priority"), command: command)
    let slots = try parsePositive(args.value("--slots"), "--slots", command: command)
    let maxEntries = try parsePositive(args.value("--max-entries"), "--max-entries", command: command)
    var deadline = TransferDeadline()
    if let rate = try parsePositive(args.value("--min-rate"), "--min-rate", command: command) { deadline.minimumRate = rate }
    if let text = args.value("--grace") {
        guard let seconds = Double(text), seconds.isFinite, seconds >= 0, seconds <= 86_400 else {
            throw ToolError.usage("--grace takes seconds (0 to 86400), not '\(text)'", command: command)
        }
        deadline.grace = seconds
    }
    let key = try readTrustedKey(trustPath)
    if args.flag("--list") {
        let other = args.given.filter { !["--trust", "--list", "--json", "--min-rate", "--grace"].contains($0) }
        guard other.isEmpty else { throw ToolError.usage("--list only reads what URL offers: \(other.joined(separator: ", ")) does not apply", command: command) }
        writeOffer(try DirectoryFetcher.offer(baseURL: url, trust: key, client: CurlHTTPClient(), deadline: deadline), url: url, json: args.flag("--json"))
        return Exit.ok
    }
    guard let storePath = args.value("--store") else { throw ToolError.usage("no store: pass --store DIR", command: command) }
    let store = try InstalledStore(path: storePath)
    var fetcher = DirectoryFetcher(baseURL: url, store: store, trust: key, client: CurlHTTPClient(),
                                   allowDowngrade: args.flag("--allow-downgrade"))
    fetcher.deadline = deadline
    fetcher.source = source
    fetcher.regions = regions
    fetcher.priority = priority
    if slots != nil || maxEntries != nil {
        var settings = try store.settings()
        if let slots { settings.slots = slots }
        if let maxEntries { settings.maxEntries = maxEntries }
        fetcher.settings = settings
    }
    // Fault injection for the tests: a disk that fills after N bytes of downloads.
    if let limit = ProcessInfo.processInfo.environment["CALLERID_TEST_DISK_SPACE"].flatMap({ Int($0) }) {
        fetcher.simulatedDiskSpace = limit
    }
    sayWhatAnInterruptLeaves(storePath: storePath, &fetcher)
    let report = try fetcher.fetch()
    InterruptNote.enter(.third)
    writeFetchReport(report, store: store, storePath: storePath, url: url, json: args.flag("--json"))
    return Exit.ok
}

/// On SIGINT or SIGTERM, a line on stderr that says what the interrupted fetch leaves (the
/// process still ends by the signal: exit 130 for Ctrl-C in a shell). Until the fetch starts to
/// install (``DirectoryFetcher/willInstall``) it has written only `STORE/.fetch/` and its lock:
/// the installed store is untouched. A download is written to `.fetch/objects/SHA.part` and
/// renamed to `SHA` once its size and SHA-256 match the signed manifest; the next fetch takes a
/// complete one after checking its SHA-256 again, and continues a `.part` from its size with a
/// Range request (the whole file again when the server ignores ranges, or when the resumed
/// file's SHA-256 differs), for the files the server's manifest still lists with that SHA-256.
/// Once installing, the generation switch is one rename of `STORE/CURRENT`.
private func sayWhatAnInterruptLeaves(storePath: String, _ fetcher: inout DirectoryFetcher) {
    let store = escapedForDisplay(storePath)
    InterruptNote.set(.first, """
        lookup fetch: interrupted; the installed store \(store) is untouched (this fetch had not begun to install). \
        The next 'lookup fetch' resumes: files downloaded whole are kept in \(store)/.fetch/ and checked, not downloaded again, \
        and the file cut short is continued from where it stopped (HTTP Range), while the server offers the same files.
        """)
    InterruptNote.set(.second, """
        lookup fetch: interrupted while installing; the store's current generation is the one before this fetch or the new one, \
        whole (the switch is one rename of \(store)/CURRENT). The next 'lookup fetch' installs the files already downloaded \
        into \(store)/.fetch/ without downloading them again, or finds the store up to date.
        """)
    InterruptNote.set(.third, nil)
    InterruptNote.install()
    fetcher.willInstall = { InterruptNote.enter(.second) }
}

private func writeFetchReport(_ report: DirectoryFetcher.Report, store: InstalledStore, storePath: String, url: String, json: Bool) {
    if let old = report.movedFrom, let source = report.source {
        printError("note: source \(source) now follows \(url) (it was fetched from \(old))")
    }
    var out = Output()
    if json {
        let names = jsonStrings
        let generation = report.install?.generation.id ?? (try? store.current())??.id
        out.write("{\"store\":\(jsonQuote(storePath)),\"url\":\(jsonQuote(url)),\"up_to_date\":\(report.upToDate),\"generation\":\(generation.map(String.init) ?? "null"),\"previous\":\(report.install?.previous.map { String($0.id) } ?? "null"),\"dataset_version\":\(report.datasetVersion.map(jsonQuote) ?? "null"),\"files_fetched\":\(report.fetchedFiles.count),\"files_reused\":\(report.reusedFiles.count),\"files_cached\":\(report.cachedFiles.count),\"fetched\":\(names(report.fetchedFiles)),\"cached\":\(names(report.cachedFiles)),\"bytes_downloaded\":\(report.bytesDownloaded),\"bytes_resumed\":\(report.bytesResumed),\"seconds\":\(String(format: "%.3f", report.seconds)),\"source\":\(report.source.map(jsonQuote) ?? "null"),\"moved_from\":\(report.movedFrom.map(jsonQuote) ?? "null"),\"regions\":\(report.regions.map(names) ?? "null"),\"unavailable_regions\":\(names(report.unavailableRegions)),\"missing_packs\":\(names(report.install?.missingPacks ?? [])),\(report.install.map { slotsJSONFields($0.plan) } ?? "\"max_entries\":null,\"split\":null,\"slots\":null")}\n")
    } else if report.upToDate {
        // The dataset version comes from the fetched manifest: shown escaped.
        out.write("\(storePath) is up to date with \(url) (dataset \(escapedForDisplay(report.datasetVersion ?? "?")))\n")
        if let install = report.install {
            out.write("installed generation \(install.generation.id) with the new settings: \(install.plan.slots.count) slot\(install.plan.slots.count == 1 ? "" : "s") of at most \(install.plan.maxEntries)\n")
            writeSlotLines(install.plan, to: &out)
        }
    } else if let install = report.install {
        out.write("installed generation \(install.generation.id)\(install.previous.map { " (previous \($0.id) kept)" } ?? "") of dataset \(escapedForDisplay(report.datasetVersion ?? "?")) from \(url) in \(String(format: "%.2f", report.seconds)) s\n")
        let cached = report.cachedFiles.isEmpty ? "" : ", \(report.cachedFiles.count) downloaded by an earlier fetch"
        out.write("files: \(report.fetchedFiles.count) fetched\(cached), \(report.reusedFiles.count) reused from the previous generation; \(report.bytesDownloaded) bytes downloaded with the manifest and its signature\(report.bytesResumed > 0 ? ", \(report.bytesResumed) resumed" : "")\n")
        let c = install.changes
        out.write("regions: \(c.added.count) added, \(c.changed.count) changed, \(c.removed.count) removed, \(c.unchanged.count) unchanged\n")
        for pack in install.missingPacks {
            out.write("missing: \(pack): missing or damaged in the store and in the previous generation, left out; the next step of its source brings it back\n")
        }
        writeSlotLines(install.plan, to: &out)
    }
    if let source = report.source, let regions = report.regions, !json {
        out.write("source \(source): \(regions.count) region\(regions.count == 1 ? "" : "s") subscribed (\(regions.prefix(12).map { escapedForDisplay($0) }.joined(separator: ", "))\(regions.count > 12 ? ", …" : ""))\n")
        for name in report.unavailableRegions { out.write("region \(escapedForDisplay(name)): subscribed, not offered by the server's set\n") }
    }
    out.flush()
}
