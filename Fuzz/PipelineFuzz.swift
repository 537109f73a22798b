// The parser target's pipeline part: the same bytes read as CSV (two delimiters), JSON and
// JSON Lines through the public `Pipeline` API (TSV is Fuzz/ParserFuzz.swift's), every line
// through the number normalizer with and without a country, and the label cleaner. Rows the
// pipeline accepts from CSV must make a database that verifies.
import CallerID
import CallerIDPipeline
import Foundation   // the pipeline uses Foundation: importing it here links it into the fuzzer
#if canImport(Glibc)
import Glibc
#endif

private let pipelineOutput = (access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp") + "/callerid-fuzz-pipeline-\(getpid()).cid"

func fuzzPipeline(_ path: String, _ bytes: [UInt8]) {
    let formats: [InputFormat] = [.csv(delimiter: UInt8(ascii: ",")), .csv(delimiter: UInt8(ascii: ";")), .json, .jsonLines]
    for (i, format) in formats.enumerated() {
        var options = PipelineOptions()
        options.format = format
        options.maxBadRows = .unlimited
        if i % 2 == 1 { options.country = "RU" }
        guard let pipeline = try? Pipeline(options: options) else { continue }
        do {
            try pipeline.add(file: path)
        } catch {
            continue   // a file-level problem (a JSON syntax error, an encoding): reported, fine
        }
        if i == 0, pipeline.numbersAccepted > 0 {
            defer { unlink(pipelineOutput) }
            do {
                _ = try pipeline.write(to: pipelineOutput)
                _ = try Database(path: pipelineOutput, verify: true)
            } catch {
                let text = Array("callerid parser fuzz: the pipeline's accepted rows do not make a valid database: \(error)\n".utf8)
                _ = text.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
                abort()
            }
        }
    }
    let normalizer = NumberNormalizer()
    let cleaner = LabelCleaner()
    for line in bytes.split(separator: 0x0A).prefix(16) {
        let text = String(decoding: line, as: UTF8.self)
        _ = try? normalizer.normalize(text)
        _ = try? normalizer.normalize(text, country: "RU")
        _ = try? normalizer.normalize(text, country: "US")
        _ = try? cleaner.clean(text)
    }
}
