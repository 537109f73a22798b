// libFuzzer target: arbitrary bytes as input rows.
//
// Every input goes through `PhoneNumber.parse(utf8:)` (whole, and every line and every
// TAB-separated field), and through the build's one row loop as a TSV file (`Pipeline`, what
// `lookup build` runs: its fast route of plain rows, then again with every row taking the
// general reading): both must take the same rows, refuse the same ones with the same reasons
// and write the same database, which must pass `verify`. The pipeline's CSV, JSON and JSON
// Lines readers and the number normalizer see the same bytes (Fuzz/PipelineFuzz.swift).
// Nothing may crash, trap or hang.
@testable import CallerID
@testable import CallerIDPipeline
#if canImport(Glibc)
import Glibc
#endif

private let scratchDir: String = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp"
private let inputPath = "\(scratchDir)/callerid-fuzz-parser-\(getpid()).tsv"
private let outputPath = "\(scratchDir)/callerid-fuzz-parser-\(getpid()).cid"

private func fail(_ message: String) -> Never {
    let text = Array("callerid parser fuzz: invariant broken: \(message)\n".utf8)
    _ = text.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    abort()
}

private func writeFile(_ path: String, _ data: UnsafeRawBufferPointer) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    precondition(fd >= 0, "cannot create \(path)")
    var done = 0
    while done < data.count {
        let n = write(fd, data.baseAddress! + done, data.count - done)
        precondition(n > 0)
        done += n
    }
    close(fd)
}

/// Parses `bytes` as a number and checks what a success means.
private func checkNumber<C: Collection<UInt8>>(_ bytes: C) {
    guard let n = try? PhoneNumber.parse(utf8: bytes) else { return }
    guard PhoneNumber.isValid(n) else { fail("parse accepted out-of-range \(n)") }
    let digits = bytes.filter { $0 >= 0x30 && $0 <= 0x39 }
    guard String(decoding: digits, as: UTF8.self) == String(n) else { fail("parse gave \(n) for digits \(digits)") }
    guard (try? PhoneNumber.parse(String(n))) == n else { fail("\(n) does not parse back") }
}

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    if let dir = getenv("CALLERID_FUZZ_WRITE_SEEDS") {
        writeParserSeeds(to: String(cString: dir))
        exit(0)
    }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzParser(_ start: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let data = UnsafeRawBufferPointer(start: start, count: size)
    let bytes = Array(data)

    // Numbers: the whole input, each line, each TAB field.
    checkNumber(bytes)
    for line in bytes.split(separator: 0x0A, omittingEmptySubsequences: false).prefix(64) {
        checkNumber(line)
        for field in line.split(separator: 0x09, omittingEmptySubsequences: false).prefix(4) { checkNumber(field) }
    }
    _ = try? PhoneNumber.parse(String(decoding: bytes, as: UTF8.self))

    // TSV through the row loop, by both routes; whatever it accepts must make a valid database.
    writeFile(inputPath, data)
    defer { unlink(inputPath); unlink(outputPath) }
    let fast = buildTSV(data, fast: true)
    let general = buildTSV(data, fast: false)
    if fast.rejected != general.rejected { fail("the fast route refused \(fast.rejected), the general reading \(general.rejected)") }
    if fast.file != general.file { fail("the fast route wrote other bytes than the general reading") }

    fuzzPipeline(inputPath, bytes)
    return 0
}

/// The input file built as plain TSV, every line a row (small blocks and syncs, to reach more of the writer),
/// every row taken by the fast route where it can (`fast`) or by the general reading; the rows
/// refused (line, reason, message) and the file written (nil when no row was accepted).
private func buildTSV(_ data: UnsafeRawBufferPointer, fast: Bool) -> (rejected: [String], file: [UInt8]?) {
    var options = PipelineOptions()
    options.format = .tsv
    options.header = .absent   // as a plain `lookup build` reads it: every line is a row
    options.maxBadRows = .unlimited
    options.buildOptions.blockSize = 4
    options.buildOptions.syncShift = 1
    options.buildOptions.hotLabelBytes = 64
    guard let pipeline = try? Pipeline(options: options) else { fail("the default options are refused") }
    pipeline.takesPlainRowsFast = fast
    var rejected: [String] = []
    pipeline.onRejected = { row in
        if row.line < 1 || row.message.isEmpty { fail("rejected row without line or message: \(row)") }
        rejected.append("\(row.line) \(row.reason) \(row.message)")
    }
    pipeline.prepare(output: outputPath)
    do {
        try pipeline.add(file: inputPath)
    } catch {
        // The one documented refusal of a whole readable file: its first 64 KiB say it is
        // UTF-16 or binary; the other errors are per row.
        if NonTextInput.detect(UnsafeRawBufferPointer(rebasing: data.prefix(1 << 16))) != nil { return (["not text"], nil) }
        fail("reading threw for a readable text file: \(error)")
    }
    // Writing costs a symbol table's training: only when some row was accepted (the seeds cover empty).
    guard pipeline.numbersAccepted > 0 || data.count == 0 else { return (rejected, nil) }
    do {
        let summary = try pipeline.write(to: outputPath)
        if summary.entries + summary.duplicatesMerged != pipeline.numbersAccepted { fail("summary \(summary) for \(pipeline.numbersAccepted) numbers") }
        let db = try Database(path: outputPath, verify: true)
        if db.count != summary.entries { fail("database holds \(db.count), summary says \(summary.entries)") }
        guard let fd = Optional(open(outputPath, O_RDONLY)), fd >= 0 else { fail("cannot read \(outputPath) back") }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: summary.bytes)
        let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n != summary.bytes { fail("read \(n) of \(summary.bytes) bytes back") }
        return (rejected, bytes)
    } catch {
        fail("the rows the pipeline accepted do not make a valid database: \(error)")
    }
}
