// libFuzzer target: arbitrary bytes as input rows.
//
// Every input goes through `PhoneNumber.parse(utf8:)` (whole, and every line and every
// TAB-separated field), through `DatabaseBuilder.addTSV` as a file, and the rows accepted are
// written to a database that must pass `verify`. When the pipeline module is built alongside
// (tools/fuzz.sh does so when Sources/CallerIDPipeline compiles), its TSV, CSV, JSON and JSON
// Lines readers and the number normalizer see the same bytes. Nothing may crash, trap or hang.
@testable import CallerID
#if canImport(CallerIDPipeline)
@testable import CallerIDPipeline
#endif
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

    // TSV through the builder; whatever it accepts must make a valid database.
    writeFile(inputPath, data)
    defer { unlink(inputPath); unlink(outputPath) }
    var options = BuildOptions()
    options.blockSize = 4
    options.syncShift = 1
    options.hotLabelBytes = 64
    var builder = DatabaseBuilder(options: options)
    var rejected = 0
    let added: Int
    do {
        added = try builder.addTSV(path: inputPath) { error in
            if error.line < 1 || error.reason.isEmpty { fail("row error without line or reason: \(error)") }
            rejected += 1
        }
    } catch {
        // The one documented refusal of a whole readable file: its first 64 KiB say it is
        // UTF-16 or binary (issue 11); the other errors are per row.
        if NonTextInput.detect(UnsafeRawBufferPointer(rebasing: data.prefix(1 << 16))) != nil { return 0 }
        fail("addTSV threw for a readable text file: \(error)")
    }
    if added != builder.count { fail("addTSV added \(added) but the builder holds \(builder.count)") }
    // Writing costs an LZ4HC state: only when some row was accepted (the seeds cover empty).
    if added > 0 || size == 0 {
        do {
            let summary = try builder.write(to: outputPath)
            if summary.entries + summary.duplicatesMerged != added { fail("summary \(summary) for \(added) rows") }
            let db = try Database(path: outputPath, verify: true)
            if db.count != summary.entries { fail("database holds \(db.count), summary says \(summary.entries)") }
        } catch {
            fail("the rows the builder accepted do not make a valid database: \(error)")
        }
    }

    #if canImport(CallerIDPipeline)
    fuzzPipeline(inputPath, bytes)
    #endif
    return 0
}
