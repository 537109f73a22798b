import Testing
import Foundation
import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import CallerID
import CallerIDPipeline

// MARK: - Running the `lookup` binary

/// What a run of `lookup` produced.
struct CLIResult {
    var status: Int32
    var stdoutData: Data
    var stderrData: Data
    /// From the start of the child to its end, in seconds.
    var seconds: Double = 0
    var stdout: String { String(decoding: stdoutData, as: UTF8.self) }
    var stderr: String { String(decoding: stderrData, as: UTF8.self) }
    /// Output lines without their "\n" (a final "\n" does not start another line).
    var lines: [String] { splitLines(stdout) }
    var errorLines: [String] { splitLines(stderr) }
}

func splitLines(_ s: String) -> [String] {
    var parts = s.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    if parts.last == "" { parts.removeLast() }
    return parts
}

/// Runs blocking work on a thread of its own and awaits it. A test that waits on a slow child (a
/// deadline, a stalled server, a slow client) this way leaves its Swift Testing thread — the
/// runner has one per core — to other tests while it waits. Not a dispatch queue: its threads
/// are as many as the cores, and when all are blocked, new work waits about a second for
/// dispatch to add one.
func offThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// Runs `body` on a thread of its own, entered in `group` until it returns (why not a dispatch
/// queue: ``offThread(_:)``).
func onThread(in group: DispatchGroup, _ body: @escaping @Sendable () -> Void) {
    group.enter()
    Thread { body(); group.leave() }.start()
}

/// Runs `lookup args` with `stdin` on a pipe, capturing stdout and stderr (read concurrently,
/// so large outputs cannot deadlock). LOOKUP_DB is removed from the environment unless given;
/// `executable` runs another copy of the tool (one moved away from its companion libraries).
func lookup(_ args: [String], stdin: Data? = nil, environment extra: [String: String] = [:], timeout: Double = 60,
            executable: URL? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws -> CLIResult {
    let binary = try #require(executable ?? BuiltProducts.lookup, "\(BuiltProducts.missing("lookup"))", sourceLocation: sourceLocation)
    let run = try runChild(binary, args, stdin: stdin, environment: extra, timeout: timeout)
    if run.timedOut {
        Issue.record("lookup \(args.joined(separator: " ")) did not finish within \(Int(timeout)) s", sourceLocation: sourceLocation)
    }
    return run.result
}

/// ``lookup(_:stdin:environment:timeout:executable:sourceLocation:)`` for a child that spends
/// its time waiting (a deadline, a dripping server): the test's thread is free meanwhile.
func lookupAwaiting(_ args: [String], environment extra: [String: String] = [:], timeout: Double = 60,
                    sourceLocation: SourceLocation = #_sourceLocation) async throws -> CLIResult {
    let binary = try #require(BuiltProducts.lookup, "\(BuiltProducts.missing("lookup"))", sourceLocation: sourceLocation)
    let run = try await offThread { try runChild(binary, args, stdin: nil, environment: extra, timeout: timeout) }
    if run.timedOut {
        Issue.record("lookup \(args.joined(separator: " ")) did not finish within \(Int(timeout)) s", sourceLocation: sourceLocation)
    }
    return run.result
}

/// Runs `binary args`; killed (SIGKILL: the test runner may start children with SIGTERM
/// blocked) when its output has not ended within `timeout` seconds.
func runChild(_ binary: URL, _ args: [String], stdin: Data?, environment extra: [String: String],
              timeout: Double) throws -> (result: CLIResult, timedOut: Bool) {
    let process = Process()
    process.executableURL = binary
    process.arguments = args
    var environment = ProcessInfo.processInfo.environment
    environment.removeValue(forKey: "LOOKUP_DB")
    for (k, v) in extra { environment[k] = v }
    process.environment = environment
    let inPipe = Pipe(), outPipe = Pipe(), errPipe = Pipe()
    process.standardInput = inPipe
    process.standardOutput = outPipe
    process.standardError = errPipe
    let started = Date()
    try process.run()

    let io = exchange(stdin ?? Data(), with: inPipe.fileHandleForWriting, outPipe.fileHandleForReading,
                      errPipe.fileHandleForReading, until: Date(timeIntervalSinceNow: timeout)) { !hasEnded(process) }
    if !io.finished { kill(process.processIdentifier, SIGKILL) }
    let status = waitForEnd(process)
    let result = CLIResult(status: status, stdoutData: io.stdout, stderrData: io.stderr, seconds: Date().timeIntervalSince(started))
    return (result, !io.finished)
}

/// Waits for `process` to end and returns its status as `terminationStatus` gives it, without
/// the delay `waitUntilExit()` can have (``childEnd(_:wait:)``).
func waitForEnd(_ process: Process) -> Int32 {
    childEnd(process.processIdentifier, wait: true).status ?? { process.waitUntilExit(); return process.terminationStatus }()
}

/// Whether `process` (started) has ended, asked of the kernel (``childEnd(_:wait:)``).
func hasEnded(_ process: Process) -> Bool {
    childEnd(process.processIdentifier, wait: false).ended
}

/// Whether child `pid` has ended (`wait`: once it has) and how — its exit status, or the signal
/// that killed it, as `Process` reports them; nil when `Process` has reaped it already. The
/// child is left for `Process` to reap (`WNOWAIT`). Not `waitUntilExit()` or `isRunning`:
/// `Process` learns of the end through a socket the child holds, and a server another test
/// starts at that moment may inherit a copy of it and keep it open for seconds.
private func childEnd(_ pid: pid_t, wait: Bool) -> (ended: Bool, status: Int32?) {
    var info = siginfo_t()
    var result: Int32
    repeat {
        result = waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT | (wait ? 0 : WNOHANG))
    } while result < 0 && errno == EINTR
    if result < 0 { return (true, nil) }  // ECHILD: reaped by Process
    #if canImport(Glibc)
    let (child, status) = (info._sifields._sigchld.si_pid, info._sifields._sigchld.si_status)
    #else
    let (child, status) = (info.si_pid, info.si_status)
    #endif
    return child == pid ? (true, status) : (false, nil)  // WNOHANG: si_pid 0 while it runs
}

/// Writes `input` to a child's stdin and reads its stdout and stderr until both end or the
/// deadline passes, all on the calling thread with poll(2). Not on dispatch's global queue:
/// when its threads are blocked in other tests' reads, a child's stdin waits about a second
/// for dispatch to add a thread while the cores sit idle. The streams can stay open after the
/// child has ended (a child another test starts meanwhile may inherit a copy of a pipe, and a
/// server lives for seconds), so once `running()` says the child has ended, what is in the
/// pipes is read and the exchange is over.
private func exchange(_ input: Data, with stdin: FileHandle, _ stdout: FileHandle, _ stderr: FileHandle,
                      until deadline: Date, running: () -> Bool) -> (stdout: Data, stderr: Data, finished: Bool) {
    for fd in [stdin.fileDescriptor, stdout.fileDescriptor, stderr.fileDescriptor] {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }
    let inFD = stdin.fileDescriptor
    var written = 0, inputOpen = true
    func closeInput() { try? stdin.close(); inputOpen = false }
    if input.isEmpty { closeInput() }
    var outputs: [(handle: FileHandle, data: Data, open: Bool)] = [(stdout, Data(), true), (stderr, Data(), true)]
    var buffer = [UInt8](repeating: 0, count: 65_536)
    /// Reads what stream `k` holds; its end (or, when draining, nothing more) closes it.
    func take(_ k: Int, draining: Bool) {
        let n = buffer.withUnsafeMutableBytes { read(outputs[k].handle.fileDescriptor, $0.baseAddress!, $0.count) }
        if n > 0 {
            outputs[k].data.append(contentsOf: buffer[0..<n])
        } else if n == 0 || (errno != EINTR && (draining || errno != EAGAIN)) {
            outputs[k].open = false
        }
    }
    while outputs.contains(where: \.open) {
        let left = deadline.timeIntervalSinceNow
        if left <= 0 { break }
        var fds: [pollfd] = outputs.filter(\.open).map { pollfd(fd: $0.handle.fileDescriptor, events: Int16(POLLIN), revents: 0) }
        if inputOpen { fds.append(pollfd(fd: inFD, events: Int16(POLLOUT), revents: 0)) }
        let ready = poll(&fds, nfds_t(fds.count), Int32(min(left, 0.05) * 1000) + 1)
        if ready < 0 && errno != EINTR { break }
        if ready == 0 && !running() {
            for k in outputs.indices { while outputs[k].open { take(k, draining: true) } }
            break
        }
        for p in fds where p.revents != 0 {
            if inputOpen && p.fd == inFD {
                let n = input.withUnsafeBytes { write(inFD, $0.baseAddress! + written, $0.count - written) }
                if n > 0 { written += n }
                // Done, or the child closed its stdin (EPIPE: SIGPIPE is ignored).
                if written == input.count || (n < 0 && errno != EAGAIN && errno != EINTR) { closeInput() }
            } else if let k = outputs.firstIndex(where: { $0.open && $0.handle.fileDescriptor == p.fd }) {
                take(k, draining: false)
            }
        }
    }
    if inputOpen { closeInput() }
    return (outputs[0].data, outputs[1].data, !outputs.contains(where: \.open))
}

// MARK: - Expected output from the library

func tsvLine(_ e: Entry) -> String { "\(e.number)\t\(e.label)\t\(e.category.name)" }

/// `number` written in one of the accepted forms: 79131234567, +79131234567,
/// +791 312-345 67 style groups, or with parentheses and dots.
func written(_ number: UInt64, style: Int) -> String {
    let d = Array(String(number))
    switch style % 4 {
    case 0: return String(d)
    case 1: return "+" + String(d)
    case 2:
        var s = "+"
        for (i, c) in d.enumerated() {
            if i > 0 && i % 3 == 0 { s += i % 2 == 0 ? " " : "-" }
            s.append(c)
        }
        return s
    default:
        let head = d.prefix(3), tail = d.dropFirst(3)
        return "(" + String(head) + ") " + tail.enumerated().map { $0.offset > 0 && $0.offset % 2 == 0 ? ".\($0.element)" : "\($0.element)" }.joined()
    }
}

/// Compares two line lists and reports the first difference (not thousands of them).
func expectSameLines(_ actual: [String], _ expected: [String], _ what: String,
                     sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(actual.count == expected.count, "\(what): \(actual.count) lines, expected \(expected.count)", sourceLocation: sourceLocation)
    if let i = (0..<min(actual.count, expected.count)).first(where: { actual[$0] != expected[$0] }) {
        Issue.record("\(what): line \(i + 1) is \(actual[i].debugDescription), expected \(expected[i].debugDescription)",
                     sourceLocation: sourceLocation)
    }
}

/// Parses JSON-lines output into one dictionary per line.
func jsonObjects(_ output: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [[String: Any]] {
    try splitLines(output).map { line in
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
        return try #require(object as? [String: Any], "not a JSON object: \(line)", sourceLocation: sourceLocation)
    }
}

func uint64(_ any: Any?) -> UInt64? {
    if let n = any as? NSNumber { return n.uint64Value }
    if let n = any as? Int { return UInt64(n) }
    return nil
}

/// Values of the text build summary: "  duplicates merged  12" → "12".
func summaryValue(_ output: String, _ key: String) -> String? {
    for line in splitLines(output) {
        let t = line.trimmingCharacters(in: .whitespaces)
        if t.hasPrefix(key + " ") {
            return t.dropFirst(key.count).trimmingCharacters(in: .whitespaces)
        }
    }
    return nil
}

func writeTSV(_ records: [Entry], to path: String) throws {
    var text = ""
    for r in records { text += tsvLine(r) + "\n" }
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
}

func fileData(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }

/// A library-built database of `count` random records (fixed seed) and its sorted entries.
func randomDatabase(in dir: TempDir, count: Int = 5000, seed: UInt64 = 20_240_501, name: String = "db.cid",
                    options: BuildOptions = BuildOptions()) throws -> (path: String, sorted: [Entry], db: Database) {
    let (records, expected) = randomRecords(count: count, seed: seed)
    let path = dir.path(name)
    _ = try buildDatabase(records, at: path, options: options)
    let db = try Database(path: path, verify: true)
    let sorted = expected.values.sorted { $0.number < $1.number }
    #expect(Array(db.entries()) == sorted)
    return (path, sorted, db)
}

/// Paths that never exist, for usage and missing-file tests.
let missingDB = "/nonexistent-callerid-dir/missing.cid"
let missingTSV = "/nonexistent-callerid-dir/missing.tsv"

// MARK: - Tests

@Suite struct CLITests {
    // MARK: help, version, usage errors, missing files

    @Test(arguments: [
        (["--help"], "usage: lookup NUMBER"),
        (["-h"], "usage: lookup NUMBER"),
        (["help"], "usage: lookup NUMBER"),
        (["79131234567", "--help"], "usage: lookup NUMBER"),
        (["-", "--help"], "usage: lookup NUMBER"),
        (["build", "--help"], "usage: lookup build"),
        (["build", "-h"], "usage: lookup build"),
        (["dump", "--help"], "usage: lookup dump"),
        (["verify", "--help"], "usage: lookup verify"),
        (["info", "--help"], "usage: lookup info"),
    ])
    func help(args: [String], prefix: String) throws {
        let r = try lookup(args)
        #expect(r.status == 0)
        #expect(r.stdout.hasPrefix(prefix), "\(args): \(r.stdout.prefix(80))")
        #expect(r.stdout.hasSuffix("\n"))
        #expect(r.stderr.isEmpty)
    }

    @Test func version() throws {
        let r = try lookup(["--version"])
        #expect(r.status == 0)
        #expect(r.lines.first == "lookup (CallerID) \(CallerIDVersion.library), database format \(CallerIDVersion.format)")
        // What reads numbers: the test binaries sit beside their libcallerid-phonenumber.so.
        #expect(r.lines.count == 2 && r.lines[1].hasPrefix("number rules: libphonenumber (") && r.lines[1].hasSuffix("libcallerid-phonenumber.so)"))
    }

    /// Usage errors exit 64 before any file is opened (the paths used here do not exist,
    /// so opening one first would show up as 66).
    @Test(arguments: [
        [],
        ["--db", missingDB],
        ["--json"],
        ["79131234567"],
        ["79131234567", "--db"],
        ["79131234567", "--db", missingDB, "--bogus"],
        ["79131234567", "--db=\(missingDB)", "--json=yes"],
        ["79131234567", "79131234568", "--db", missingDB],
        ["-", "-", "--db", missingDB],
        ["build", missingTSV],
        ["build", "-o", "/nonexistent-callerid-dir/out.cid"],
        ["build", "-o", "/nonexistent-callerid-dir/out.cid", missingTSV, "--frobnicate"],
        ["build", "-o", "/nonexistent-callerid-dir/out.cid", missingTSV, "--block-size", "0"],
        ["build", "-o", "/nonexistent-callerid-dir/out.cid", missingTSV, "--block-size", "1025"],  // format 2.0: 1…1024
        ["build", "--block-size=many", "-o", "/nonexistent-callerid-dir/out.cid", missingTSV],
        ["build", "-o"],
        ["dump"],
        ["dump", "--db", missingDB, "extra"],
        ["dump", "--db", missingDB, "--action", "maybe"],
        ["dump", "--db", missingDB, "--category", "spam", "--action", "block"],
        ["dump", "--db", missingDB, "--from", "abc"],
        ["dump", "--db", missingDB, "--bogus"],
        ["verify"],
        ["verify", "--bogus", missingDB],
        ["info"],
        ["info", missingDB, missingDB],
        ["info", missingDB, "--bogus"],
    ])
    func usageErrorsExit64(args: [String]) throws {
        let r = try lookup(args)
        #expect(r.status == 64, "lookup \(args): exit \(r.status), stderr \(r.stderr)")
        #expect(r.stdout.isEmpty)
        #expect(r.stderr.hasPrefix("error: "), "\(args): \(r.stderr)")
        if !args.isEmpty {
            #expect(r.stderr.contains("--help"), "\(args): the message should point at --help: \(r.stderr)")
        }
    }

    @Test(arguments: [
        ["79131234567", "--db", missingDB],
        ["79131234567", "--db=\(missingDB)", "--json"],
        ["-", "--db", missingDB],
        ["dump", "--db", missingDB],
        ["info", missingDB],
        ["info", "--db", missingDB],
        ["verify", missingDB],
        ["verify", "--json", missingDB],
        ["build", "-o", "/nonexistent-callerid-dir/out.cid", missingTSV],
    ])
    func missingFileExits66(args: [String]) throws {
        let r = try lookup(args, stdin: Data("79131234567\n".utf8))
        #expect(r.status == 66, "lookup \(args): exit \(r.status), stderr \(r.stderr)")
        if args.contains("--json") && args.first == "verify" {
            let objects = try jsonObjects(r.stdout)
            #expect(objects.count == 1)
            #expect(objects.first?["ok"] as? Bool == false)
            #expect(objects.first?["code"] as? String == "file-not-found")
        } else {
            #expect(r.stdout.isEmpty)
            #expect(r.stderr.contains("/nonexistent-callerid-dir/missing"), "the message names the file: \(r.stderr)")
        }
    }

    // MARK: point lookup

    @Test func pointLookupForms() throws {
        let dir = TempDir()
        let tsv = dir.path("in.tsv")
        try Data("79131234567\tPizza Hut\n12025550100\tDebt Co\tcollector\n".utf8).write(to: URL(fileURLWithPath: tsv))
        let db = dir.path("x.cid")
        #expect(try lookup(["build", "-o", db, tsv]).status == 0)

        for form in ["+7 913 123-45-67", "79131234567", "+79131234567", "+7 (913) 123.45.67", "-7 913 123 45 67"] {
            let r = try lookup([form, "--db", db])
            #expect(r.status == 0, "\(form): \(r.stderr)")
            #expect(r.stdout == "79131234567\tPizza Hut\tidentify\n", "\(form)")
            #expect(r.stderr.isEmpty)
        }
        // Options before the number, and the --opt=value form.
        let before = try lookup(["--db=\(db)", "+1 202 555 0100"])
        #expect(before.status == 0)
        #expect(before.stdout == "12025550100\tDebt Co\tcollector\n")

        let absent = try lookup(["+7 913 123-45-68", "--db", db])
        #expect(absent.status == 1)
        #expect(absent.stdout == "79131234568\t-\n")
        #expect(absent.stderr.isEmpty)

        for bad in ["7913abc", "0791312345", "+", "", "1234567890123456", "++79131234567", "7913_123"] {
            let r = try lookup([bad, "--db", db])
            #expect(r.status == 65, "\(bad.debugDescription): exit \(r.status)")
            #expect(r.stdout.isEmpty, "\(bad.debugDescription): \(r.stdout)")
            #expect(r.stderr.hasPrefix("error: "), "\(bad.debugDescription)")
        }

        let found = try lookup(["79131234567", "--db", db, "--json"])
        #expect(found.status == 0)
        let f = try #require(try jsonObjects(found.stdout).first)
        #expect(uint64(f["number"]) == 79131234567)
        #expect(f["found"] as? Bool == true)
        #expect(f["label"] as? String == "Pizza Hut")
        #expect(f["category"] as? String == "identify")
        #expect(f["action"] as? String == "identify")
        let blocked = try jsonObjects(try lookup(["--json", "12025550100", "--db", db]).stdout)
        #expect(blocked.first?["action"] as? String == "block")
        #expect(blocked.first?["category"] as? String == "collector")

        let missing = try lookup(["79131234568", "--db", db, "--json"])
        #expect(missing.status == 1)
        let m = try #require(try jsonObjects(missing.stdout).first)
        #expect(uint64(m["number"]) == 79131234568)
        #expect(m["found"] as? Bool == false)
        for key in ["label", "category", "action"] {
            #expect(m[key] == nil || m[key] is NSNull, "not-found answer has \(key): \(String(describing: m[key]))")
        }
    }

    /// Point lookups agree with the library for present numbers, their absent neighbours,
    /// the first and last entries and numbers outside the stored range.
    @Test func pointLookupMatchesLibrary() throws {
        let dir = TempDir()
        let (path, sorted, db) = try randomDatabase(in: dir)
        var rng = SeededGenerator(seed: 7)
        var numbers: [UInt64] = [sorted.first!.number, sorted.last!.number, sorted.first!.number - 1, PhoneNumber.maximum]
        for _ in 0..<12 {
            let e = sorted.randomElement(using: &rng)!
            numbers.append(e.number)
            numbers.append(e.number + 1)
        }
        for (i, n) in numbers.enumerated() where n >= 1 {
            let r = try lookup([written(n, style: i), "--db", path])
            if let e = try db.lookup(n) {
                #expect(r.status == 0)
                #expect(r.stdout == tsvLine(e) + "\n")
            } else {
                #expect(r.status == 1)
                #expect(r.stdout == "\(n)\t-\n")
            }
        }
    }

    // MARK: batch

    /// A seeded mix of present numbers (in every accepted form, some with CRLF), absent
    /// numbers and invalid lines, with the expected answer line and stderr line of each.
    func batchInput(_ sorted: [Entry], db: Database, lines count: Int, seed: UInt64) throws
        -> (input: String, expected: [String], errors: [String], texts: [String])
    {
        var rng = SeededGenerator(seed: seed)
        let invalid = ["abc", "", "   ", "0123456", "+", "12345678901234567", "79a13", "++79131234567", "7913+1",
                       "00 7 913 123", "#79131234567", "7913_1234", "ноль", "1 2 3 x", "0"]
        let present = Set(sorted.map(\.number))
        var input = "", expected: [String] = [], errors: [String] = [], texts: [String] = []
        for lineNumber in 1...count {
            let text: String
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<5:
                text = written(sorted.randomElement(using: &rng)!.number, style: Int.random(in: 0..<4, using: &rng))
            case 5..<8:
                var n = UInt64.random(in: 1...PhoneNumber.maximum, using: &rng)
                if Bool.random(using: &rng) { n = sorted.randomElement(using: &rng)!.number + 1 }
                if present.contains(n) { n = min(n + 1, PhoneNumber.maximum) }
                text = written(n, style: Int.random(in: 0..<4, using: &rng))
            default:
                text = invalid.randomElement(using: &rng)!
            }
            texts.append(text)
            input += text + (Int.random(in: 0..<8, using: &rng) == 0 ? "\r\n" : "\n")
            do {
                let n = try PhoneNumber.parse(text)
                expected.append(try db.lookup(n).map(tsvLine) ?? "\(n)\t-")
            } catch {
                expected.append("\(text)\t-")
                errors.append("stdin:\(lineNumber): \(error.message)")
            }
        }
        return (input, expected, errors, texts)
    }

    @Test func batchMatchesLibraryLineByLine() throws {
        let dir = TempDir()
        let (path, sorted, db) = try randomDatabase(in: dir)
        let (input, expected, errors, _) = try batchInput(sorted, db: db, lines: 3000, seed: 11)
        #expect(!errors.isEmpty && expected.contains { $0.hasSuffix("\t-") } && expected.contains { !$0.hasSuffix("\t-") })
        let r = try lookup(["-", "--db", path], stdin: Data(input.utf8))
        #expect(r.status == 0)
        expectSameLines(r.lines, expected, "batch stdout")
        expectSameLines(r.errorLines, errors, "batch stderr")

        // The last line needs no newline; an empty stdin gives no output.
        let last = sorted[sorted.count / 2]
        let noNewline = try lookup(["-", "--db", path], stdin: Data("\(last.number)".utf8))
        #expect(noNewline.status == 0)
        #expect(noNewline.stdout == tsvLine(last) + "\n")
        let empty = try lookup(["-", "--db", path], stdin: Data())
        #expect(empty.status == 0)
        #expect(empty.stdout.isEmpty && empty.stderr.isEmpty)
    }

    @Test func batchJSON() throws {
        let dir = TempDir()
        let (path, sorted, db) = try randomDatabase(in: dir)
        let (input, expected, _, texts) = try batchInput(sorted, db: db, lines: 600, seed: 12)
        let r = try lookup(["-", "--json", "--db", path], stdin: Data(input.utf8))
        #expect(r.status == 0)
        let objects = try jsonObjects(r.stdout)
        #expect(objects.count == expected.count)
        for i in 0..<min(objects.count, texts.count) {
            let object = objects[i], text = texts[i]
            if let n = try? PhoneNumber.parse(text) {
                #expect(uint64(object["number"]) == n, "line \(i + 1)")
                if let e = try db.lookup(n) {
                    #expect(object["found"] as? Bool == true, "line \(i + 1)")
                    #expect(object["label"] as? String == e.label, "line \(i + 1)")
                    #expect(object["category"] as? String == e.category.name, "line \(i + 1)")
                    #expect(object["action"] as? String == e.category.action.description, "line \(i + 1)")
                } else {
                    #expect(object["found"] as? Bool == false, "line \(i + 1)")
                }
            } else {
                #expect(object["found"] as? Bool == false, "line \(i + 1)")
                #expect(object["number"] == nil || object["number"] is NSNull, "line \(i + 1): invalid input has no number")
                #expect(object["input"] as? String == text, "line \(i + 1): \(object)")
            }
        }
    }

    /// Batch answers must line up with the input even for bytes that are not UTF-8.
    @Test func batchEchoesRawBytesOfInvalidLines() throws {
        let dir = TempDir()
        let db = dir.path("x.cid")
        _ = try buildDatabase([Entry(number: 79131234567, label: "Pizza Hut")], at: db)
        let input = Data([0xFF, 0xFE, 0x31, 0x32, 0x0A] + Array("79131234567\n".utf8))
        let r = try lookup(["-", "--db", db], stdin: input)
        #expect(r.status == 0)
        #expect(r.lines.count == 2)
        #expect(r.lines.last == "79131234567\tPizza Hut\tidentify")
        #expect(r.errorLines.count == 1)
        #expect(r.stderr.hasPrefix("stdin:1: "))
        #expect(r.stdoutData.prefix(7) == Data([0xFF, 0xFE, 0x31, 0x32, 0x09, 0x2D, 0x0A]))
        #expect(r.stderr.contains("0xff"), "stderr: \(r.stderr)")
    }

    // MARK: dump

    @Test func dumpEqualsLibraryEnumeration() throws {
        let dir = TempDir()
        let (path, sorted, db) = try randomDatabase(in: dir)
        #expect(sorted.count > 4000)
        let r = try lookup(["dump", "--db", path])
        #expect(r.status == 0)
        #expect(r.stderr.isEmpty)
        expectSameLines(r.lines, Array(db.entries()).map(tsvLine), "dump")
        expectSameLines(r.lines, sorted.map(tsvLine), "dump vs input")

        let json = try lookup(["dump", "--json", "--db", path])
        #expect(json.status == 0)
        let objects = try jsonObjects(json.stdout)
        #expect(objects.count == sorted.count)
        for (o, e) in zip(objects, sorted) where
            uint64(o["number"]) != e.number || o["label"] as? String != e.label || o["category"] as? String != e.category.name
            || o["action"] as? String != e.category.action.description || o["found"] != nil
        {
            Issue.record("dump --json: \(o) differs from \(e)")
            break
        }
    }

    @Test func dumpFromBlockBoundaries() throws {
        let dir = TempDir()
        for blockSize in [128, 7] {
            var options = BuildOptions()
            options.blockSize = blockSize
            let (path, sorted, db) = try randomDatabase(in: dir, count: 1200, seed: UInt64(blockSize), name: "b\(blockSize).cid", options: options)
            var froms: [UInt64] = [0, 1]
            for b in stride(from: blockSize, to: sorted.count, by: blockSize).prefix(4) {
                froms += [sorted[b].number, sorted[b].number - 1, sorted[b - 1].number, sorted[b - 1].number + 1]
            }
            froms += [sorted.last!.number, sorted.last!.number + 1, PhoneNumber.maximum]
            for (i, from) in froms.enumerated() {
                let expected = Array(db.entries(from: from)).map(tsvLine)
                let args = from == 0 ? ["dump", "--db", path]
                    : i % 2 == 0 ? ["dump", "--db", path, "--from", written(from, style: i)]
                    : ["dump", "--from=\(written(from, style: i))", "--db=\(path)"]
                let r = try lookup(args)
                #expect(r.status == 0, "\(args): \(r.stderr)")
                expectSameLines(r.lines, expected, "dump --from \(from) (block size \(blockSize))")
                if from >= 1 {
                    #expect(r.lines.first == sorted.first(where: { $0.number >= from }).map(tsvLine))
                }
            }
        }
    }

    @Test func dumpFilters() throws {
        let dir = TempDir()
        let (path, sorted, _) = try randomDatabase(in: dir)
        let cases: [([String], (Entry) -> Bool)] = [
            (["--category", "spam"], { $0.category.name == "spam" }),
            (["--category", "spam,taxi"], { ["spam", "taxi"].contains($0.category.name) }),
            (["--category=SPAM, Collector"], { ["spam", "collector"].contains($0.category.name) }),
            (["--category", "identify"], { $0.category.name == "identify" }),
            (["--action", "block"], { $0.category.action == .block }),
            (["--action=identify"], { $0.category.action == .identify }),
        ]
        for (options, keep) in cases {
            let expected = sorted.filter(keep).map(tsvLine)
            let r = try lookup(["dump", "--db", path] + options)
            #expect(r.status == 0, "\(options): \(r.stderr)")
            expectSameLines(r.lines, expected, "dump \(options)")
        }
        // A category the database does not have is a usage error.
        #expect(try lookup(["dump", "--db", path, "--category", "no-such-category"]).status == 64)
        // Filters combine with --from and --json.
        let from = sorted[sorted.count / 3].number
        let r = try lookup(["dump", "--db", path, "--action", "block", "--from", String(from), "--json"])
        #expect(r.status == 0)
        let objects = try jsonObjects(r.stdout)
        let expected = sorted.filter { $0.category.action == .block && $0.number >= from }
        #expect(objects.map { uint64($0["number"]) } == expected.map(\.number))
        #expect(objects.allSatisfy { $0["action"] as? String == "block" })
    }

    /// Labels that need JSON escaping survive `--json` exactly (point lookup and dump).
    @Test func jsonEscaping() throws {
        let dir = TempDir()
        let labels = ["quote \" backslash \\ slash /", "emoji 😀 ✓",
                      "line sep \u{2028} para \u{2029}", "ООО «Ромашка»", "", String(repeating: "x", count: 3000)]
        let entries = labels.enumerated().map { Entry(number: 74950000000 + UInt64($0.offset), label: $0.element, category: .block) }
        let path = dir.path("j.cid")
        _ = try buildDatabase(entries, at: path)
        let objects = try jsonObjects(try lookup(["dump", "--db", path, "--json"]).stdout)
        #expect(objects.map { $0["label"] as? String } == labels)
        for e in entries {
            let r = try lookup([String(e.number), "--db", path, "--json"])
            #expect(r.status == 0)
            #expect(try jsonObjects(r.stdout).first?["label"] as? String == e.label)
        }
    }

    // MARK: build

    /// The CLI builds from TSV exactly what the library builds from the same records, their
    /// labels cleaned as the pipeline cleans them (trimmed, whitespace collapsed: the CLI reads
    /// every row with the pipeline's rules).
    @Test func buildMatchesLibrary() throws {
        let dir = TempDir()
        let (records, raw) = randomRecords(count: 5000, seed: 4242, minNumber: plausibleNumbers.lowerBound,
                                           maxNumber: plausibleNumbers.upperBound)
        let tsv = dir.path("in.tsv"), out = dir.path("cli.cid"), lib = dir.path("lib.cid")
        try writeTSV(records, to: tsv)
        func cleaned(_ e: Entry) throws -> Entry {
            Entry(number: e.number, label: try LabelCleaner().clean(e.label).label, category: e.category)
        }
        #expect(try records.contains { try cleaned($0).label != $0.label }, "some labels need cleaning")
        let expected = try raw.mapValues(cleaned)
        let librarySummary = try buildDatabase(try records.map(cleaned), at: lib)

        let r = try lookup(["build", "-o", out, tsv])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.isEmpty)
        #expect(r.lines.first == "wrote \(out)")
        #expect(summaryValue(r.stdout, "entries") == String(expected.count))
        #expect(summaryValue(r.stdout, "duplicates merged") == String(records.count - expected.count))
        #expect(records.count - expected.count > 0)
        #expect(summaryValue(r.stdout, "bad rows skipped") == "0")
        #expect(summaryValue(r.stdout, "distinct labels") == String(librarySummary.distinctLabels))
        let bytes = try fileData(out).count
        #expect(summaryValue(r.stdout, "bytes") == String(bytes))
        #expect(summaryValue(r.stdout, "bytes/entry") == String(format: "%.2f", Double(bytes) / Double(expected.count)))

        let db = try Database(path: out, verify: true)
        #expect(Array(db.entries()) == expected.values.sorted { $0.number < $1.number })
        #expect(try fileData(out) == fileData(lib), "CLI and library builds of the same records differ")

        // --json summary, --opt=value forms, --block-size and --raw-labels.
        let out2 = dir.path("raw.cid")
        let j = try lookup(["build", "--output=\(out2)", "--block-size=16", "--raw-labels", "--json", tsv])
        #expect(j.status == 0, "\(j.stderr)")
        let s = try #require(try jsonObjects(j.stdout).first)
        #expect(s["output"] as? String == out2)
        #expect(s["entries"] as? Int == expected.count)
        #expect(s["duplicates_merged"] as? Int == records.count - expected.count)
        #expect(s["bad_rows"] as? Int == 0)
        #expect(s["bytes"] as? Int == (try fileData(out2).count))
        #expect(s["bytes_per_entry"] is NSNumber)
        let info = try #require(try jsonObjects(try lookup(["info", out2, "--json"]).stdout).first)
        #expect(info["block_size"] as? Int == 16)
        // --raw-labels: every label is hot (stored raw), none coded.
        #expect(info["hot_labels"] as? Int == info["distinct_labels"] as? Int)
        #expect((info["distinct_labels"] as? Int ?? 0) > 0)
        #expect(Array(try Database(path: out2, verify: true).entries()) == Array(db.entries()))
    }

    @Test func buildReportsDuplicateMerges() throws {
        let dir = TempDir()
        let tsv = dir.path("dups.tsv"), out = dir.path("d.cid")
        try Data("""
            # number label category
            79130000100\tA
            79130000200\tB\tspam

            79130000100\tA2\ttaxi
            79130000300\tC\r
            79130000200\tB2
            79130000100\tA3

            """.utf8).write(to: URL(fileURLWithPath: tsv))
        let r = try lookup(["build", "-o", out, tsv])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(summaryValue(r.stdout, "entries") == "3")
        #expect(summaryValue(r.stdout, "duplicates merged") == "3")
        let dump = try lookup(["dump", "--db", out])
        #expect(dump.lines == ["79130000100\tA3\tidentify", "79130000200\tB2\tidentify", "79130000300\tC\tidentify"])

        let j = try lookup(["build", "-o", out, tsv, "--json"])
        #expect(try jsonObjects(j.stdout).first?["duplicates_merged"] as? Int == 3)

        // Several inputs and stdin ('-'): later rows win across files too.
        let other = dir.path("other.tsv")
        try Data("79130000300\tfrom file\tsurvey\n".utf8).write(to: URL(fileURLWithPath: other))
        let multi = try lookup(["build", "-o", out, tsv, other, "-"], stdin: Data("79130000100\tfrom stdin\tscam\n79130000400\tD\n".utf8))
        #expect(multi.status == 0, "\(multi.stderr)")
        #expect(summaryValue(multi.stdout, "entries") == "4")
        #expect(summaryValue(multi.stdout, "duplicates merged") == "5")
        let db = try Database(path: out)
        #expect(try db.lookup(79130000100) == Entry(number: 79130000100, label: "from stdin", category: try Category("scam", action: .block)))
        #expect(try db.lookup(79130000300) == Entry(number: 79130000300, label: "from file", category: try Category("survey", action: .block)))
        #expect(try db.lookup(79130000400)?.label == "D")
    }

    /// Inputs with no rows (only comments and blank lines, or an empty stdin) give a valid,
    /// empty database.
    @Test func buildEmptyDatabase() throws {
        let dir = TempDir()
        let tsv = dir.path("empty.tsv"), out = dir.path("e.cid"), out2 = dir.path("e2.cid")
        try Data("# only a comment\n\n".utf8).write(to: URL(fileURLWithPath: tsv))
        let r = try lookup(["build", "-o", out, tsv])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(summaryValue(r.stdout, "entries") == "0")
        #expect(summaryValue(r.stdout, "bytes/entry") == "0.00")
        let j = try lookup(["build", "-o", out2, "-", "--json"], stdin: Data())
        #expect(j.status == 0)
        #expect(try jsonObjects(j.stdout).first?["entries"] as? Int == 0)
        #expect(try lookup(["verify", out, out2]).status == 0)
        let dump = try lookup(["dump", "--db", out])
        #expect(dump.status == 0 && dump.stdout.isEmpty)
        #expect(try lookup(["79131234567", "--db", out]).stdout == "79131234567\t-\n")
        #expect(try lookup(["-", "--db", out], stdin: Data("1\n".utf8)).stdout == "1\t-\n")
        #expect(try jsonObjects(try lookup(["info", "--json", out]).stdout).first?["entries"] as? Int == 0)
    }

    static let badTSV: [UInt8] = Array("""
        79131234567\tGood one
        no tab here
        79131234568\tToo\tmany\tcolumns
        7913123456x\tBad number
        79131234569\tBad category\tNot A Name!
        79131234570\tcontrol\u{01}byte

        """.utf8) + [0x37, 0x39, 0x09, 0xFF, 0x62, 0x61, 0x64, 0x0A] + Array("""
        # a comment

        79131234572\tGood two\tspam
        0791\tLeading zero

        """.utf8)
    static let badLines = [2, 3, 4, 5, 6, 7, 11]

    @Test func buildWithBadRowsFailsAndWritesNothing() throws {
        let dir = TempDir()
        let bad = dir.path("bad.tsv"), good = dir.path("good.tsv"), out = dir.path("out.cid")
        try Data(Self.badTSV).write(to: URL(fileURLWithPath: bad))
        try Data("79130000001\tOld\n79130000002\tOlder\tspam\n".utf8).write(to: URL(fileURLWithPath: good))
        #expect(try lookup(["build", "-o", out, good]).status == 0)
        let before = try fileData(out)
        let listing = try FileManager.default.contentsOfDirectory(atPath: dir.url.path).sorted()

        let r = try lookup(["build", "-o", out, good, bad])
        #expect(r.status == 65)
        #expect(r.stdout.isEmpty, "no summary on failure: \(r.stdout)")
        let reported = r.errorLines.filter { $0.hasPrefix(bad + ":") }
        #expect(reported.compactMap { Int($0.dropFirst(bad.count + 1).prefix { $0 != ":" }) } == Self.badLines, "\(r.stderr)")
        #expect(reported.allSatisfy { $0.dropFirst(bad.count + 1).contains(": ") })
        #expect(r.stderr.contains("7 bad rows"))
        #expect(try fileData(out) == before, "a failed build changed the existing output")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).sorted() == listing, "a failed build left files behind")

        // A missing input after good ones: 66, output untouched too.
        let missing = try lookup(["build", "-o", out, good, dir.path("nope.tsv")])
        #expect(missing.status == 66)
        #expect(try fileData(out) == before)

        // No output file at all when it did not exist.
        let fresh = dir.path("fresh.cid")
        #expect(try lookup(["build", "-o", fresh, bad]).status == 65)
        #expect(!FileManager.default.fileExists(atPath: fresh))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).sorted() == listing)
    }

    @Test func buildSkipBadRows() throws {
        let dir = TempDir()
        let bad = dir.path("bad.tsv"), out = dir.path("out.cid")
        try Data(Self.badTSV).write(to: URL(fileURLWithPath: bad))
        let r = try lookup(["build", "--skip-bad-rows", "-o", out, bad])
        #expect(r.status == 0, "\(r.stderr)")
        let reported = r.errorLines.filter { $0.hasPrefix(bad + ":") }
        #expect(reported.count == Self.badLines.count, "bad rows are still reported: \(r.stderr)")
        #expect(summaryValue(r.stdout, "entries") == "2")
        #expect(summaryValue(r.stdout, "bad rows skipped") == String(Self.badLines.count))
        let dump = try lookup(["dump", "--db", out])
        #expect(dump.lines == ["79131234567\tGood one\tidentify", "79131234572\tGood two\tspam"])

        let j = try lookup(["build", "--skip-bad-rows", "-o", out, bad, "--json"])
        #expect(j.status == 0)
        let s = try #require(try jsonObjects(j.stdout).first)
        #expect(s["bad_rows"] as? Int == Self.badLines.count)
        #expect(s["entries"] as? Int == 2)
    }

    // MARK: verify

    @Test func verifyIntactDamagedAndMissing() throws {
        let dir = TempDir()
        let (path, sorted, _) = try randomDatabase(in: dir)
        let original = try fileData(path)

        let ok = try lookup(["verify", path])
        #expect(ok.status == 0)
        #expect(ok.stdout == "\(path): OK (\(sorted.count) entries)\n")
        #expect(ok.stderr.isEmpty)

        // Truncated: to half, and by one byte.
        for length in [original.count / 2, original.count - 1] {
            let t = dir.path("trunc-\(length).cid")
            try original.prefix(length).write(to: URL(fileURLWithPath: t))
            let r = try lookup(["verify", t])
            #expect(r.status == 65, "truncated to \(length): exit \(r.status)")
            #expect(r.stderr.contains(t) && r.stderr.contains("truncated"), "\(r.stderr)")
            #expect(try lookup([String(sorted[0].number), "--db", t]).status == 65)
            #expect(try lookup(["dump", "--db", t]).status == 65)
            #expect(try lookup(["info", t]).status == 65)
        }

        // One flipped byte in the middle of the file, then in the middle of every section:
        // the message names the section whose checksum fails.
        let info = try #require(try jsonObjects(try lookup(["info", path, "--json"]).stdout).first)
        let sections = try #require(info["sections"] as? [[String: Any]])
        // Every required section: kinds 1–11, or with LZ4 labels (3.1) 1–8, 13 and 14.
        let lz4 = (info["format_version"] as? String) == "3.1"
        #expect(sections.count == Format.Section.allCases.count - (lz4 ? 3 : 2))
        var offsets = [original.count / 2]
        for s in sections {
            let offset = try #require(s["offset"] as? Int), bytes = try #require(s["bytes"] as? Int)
            if bytes > 0 { offsets.append(offset + bytes / 2) }  // an empty section has no byte to damage
        }
        for offset in offsets {
            var damaged = original
            damaged[offset] ^= 0x5A
            let p = dir.path("flip-\(offset).cid")
            try damaged.write(to: URL(fileURLWithPath: p))
            let r = try lookup(["verify", p])
            #expect(r.status == 65, "byte \(offset) flipped: exit \(r.status)")
            #expect(r.stdout.isEmpty)
            let section = sections.first { s in
                let o = s["offset"] as! Int, n = s["bytes"] as! Int
                return (o..<(o + n)).contains(offset)
            }
            if let name = section?["name"] as? String {
                #expect(r.stderr.contains(p) && r.stderr.contains("section '\(name)'"), "byte \(offset) in \(name): \(r.stderr)")
            } else {
                #expect(r.stderr.contains(p) && r.stderr.contains("padding"), "byte \(offset) in padding: \(r.stderr)")
            }
        }

        // Several files: 66 when one is missing, 65 as soon as one is damaged.
        let damaged = dir.path("flip-\(original.count / 2).cid"), missing = dir.path("missing.cid")
        let m = try lookup(["verify", path, missing])
        #expect(m.status == 66)
        #expect(m.stdout == "\(path): OK (\(sorted.count) entries)\n2 files verified: 1 intact, 1 not read\n")
        #expect(m.stderr.contains(missing))
        #expect(try lookup(["verify", missing, damaged, path]).status == 65)
        #expect(try lookup(["verify", damaged, missing]).status == 65)

        let j = try lookup(["verify", "--json", path, damaged, missing])
        #expect(j.status == 65)
        let objects = try jsonObjects(j.stdout)
        #expect(objects.map { $0["file"] as? String } == [path, damaged, missing])
        #expect(objects.map { $0["ok"] as? Bool } == [true, false, false])
        #expect(objects[0]["entries"] as? Int == sorted.count)
        #expect(objects[1]["code"] as? String == "corrupt")
        #expect(objects[2]["code"] as? String == "file-not-found")
    }

    // MARK: info

    @Test func infoMatchesLibrary() throws {
        let dir = TempDir()
        let (path, sorted, db) = try randomDatabase(in: dir)
        let size = try fileData(path).count
        let text = try lookup(["info", path])
        #expect(text.status == 0)
        #expect(text.stderr.isEmpty)
        #expect(summaryValue(text.stdout, "entries") == String(sorted.count))
        #expect(summaryValue(text.stdout, "bytes") == String(size))
        // The file's own version (2.0, or 3.0 when a block uses key codec 2), from its header bytes.
        let header = [UInt8](try fileData(path).prefix(12))
        #expect(summaryValue(text.stdout, "format version") == "\(UInt16(header[8]) | UInt16(header[9]) << 8).\(UInt16(header[10]) | UInt16(header[11]) << 8)")
        #expect(["2.0", "3.0"].contains(summaryValue(text.stdout, "format version") ?? ""))
        for c in db.categories { #expect(text.stdout.contains("\(c.name) (\(c.action))")) }

        let json = try lookup(["info", "--json", path])
        #expect(json.status == 0)
        let o = try #require(try jsonObjects(json.stdout).first)
        let info = db.info
        #expect(o["file"] as? String == path)
        #expect(o["format_version"] as? String == info.formatVersion)
        #expect(o["entries"] as? Int == sorted.count)
        #expect(o["distinct_labels"] as? Int == info.distinctLabels)
        #expect(o["block_size"] as? Int == BuildOptions().blockSize)
        #expect(o["blocks"] as? Int == (sorted.count + BuildOptions().blockSize - 1) / BuildOptions().blockSize)
        #expect(o["hot_labels"] as? Int == info.hotLabels)
        #expect(o["label_symbols"] as? Int == info.labelSymbols)
        #expect(info.hotLabels > 0 && info.hotLabels <= info.distinctLabels)
        #expect(o["bytes"] as? Int == size)
        let categories = try #require(o["categories"] as? [[String: Any]])
        #expect(categories.map { $0["name"] as? String } == db.categories.map(\.name))
        #expect(categories.map { $0["action"] as? String } == db.categories.map(\.action.description))
        let sections = try #require(o["sections"] as? [[String: Any]])
        #expect(sections.map { $0["name"] as? String } == info.sections.map(\.name))
        #expect(sections.map { $0["offset"] as? Int } == info.sections.map(\.offset))
        #expect(sections.map { $0["bytes"] as? Int } == info.sections.map(\.bytes))
        #expect(sections.map { $0["xxh3"] as? String } == info.sections.map { String(format: "%016llx", $0.checksum) })

        // info --db FILE and LOOKUP_DB are accepted too.
        #expect(try lookup(["info", "--db", path]).stdout == text.stdout)
        #expect(try lookup(["info"], environment: ["LOOKUP_DB": path]).stdout == text.stdout)
    }

    // MARK: LOOKUP_DB

    @Test func lookupDBEnvironmentVariable() throws {
        let dir = TempDir()
        let a = dir.path("a.cid"), b = dir.path("b.cid")
        _ = try buildDatabase([Entry(number: 79131234567, label: "from A")], at: a)
        _ = try buildDatabase([Entry(number: 79131234567, label: "from B", category: .block)], at: b)
        let env = ["LOOKUP_DB": a]

        let point = try lookup(["+7 913 123-45-67"], environment: env)
        #expect(point.status == 0)
        #expect(point.stdout == "79131234567\tfrom A\tidentify\n")
        #expect(try lookup(["79131234568"], environment: env).status == 1)
        let batch = try lookup(["-"], stdin: Data("79131234567\n1\n".utf8), environment: env)
        #expect(batch.lines == ["79131234567\tfrom A\tidentify", "1\t-"])
        #expect(try lookup(["dump"], environment: env).lines == ["79131234567\tfrom A\tidentify"])

        // --db wins over the variable.
        #expect(try lookup(["79131234567", "--db", b], environment: env).stdout == "79131234567\tfrom B\tblock\n")
        #expect(try lookup(["dump", "--db=\(b)"], environment: env).lines == ["79131234567\tfrom B\tblock"])

        // Empty means unset (usage error); a missing file is 66.
        #expect(try lookup(["79131234567"], environment: ["LOOKUP_DB": ""]).status == 64)
        #expect(try lookup(["79131234567"], environment: ["LOOKUP_DB": dir.path("none.cid")]).status == 66)
        #expect(try lookup(["dump"], environment: ["LOOKUP_DB": dir.path("none.cid")]).status == 66)
    }

    /// `--from 0` means from the start; a malformed number is refused before the file is opened.
    @Test func fromZeroAndNumberCheckedBeforeOpening() throws {
        let dir = TempDir()
        let (path, sorted, _) = try randomDatabase(in: dir)
        let all = try lookup(["dump", "--db", path, "--from", "0"])
        #expect(all.status == 0)
        #expect(all.lines.count == sorted.count)
        #expect(try lookup(["12ab", "--db", dir.path("missing.cid")]).status == 65)
        #expect(try lookup(["abc", "--db", dir.path("missing.cid")]).status == 64)  // not a command
    }
}
