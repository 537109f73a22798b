import Foundation
import Testing

/// Where raw-pointer code may live (docs/ARCHITECTURE.md, "Where unsafe code lives"): only in a module's
/// `System/` folder and in the C ABI module (`Sources/CallerIDC`, which is the pointer boundary
/// by definition). Elsewhere bytes are borrowed through closures (`withUnsafeBytes`,
/// `withLabelBytes`) as read-only `UnsafeRawBufferPointer` collections, indexed with bounds checks;
/// no allocation, pointer arithmetic, loads or stores at offsets, unretained references.
///
/// The test reads the package's own sources (found from this file's path) and names every line
/// that breaks the rule.
@Suite struct UnsafeCodePlacementTests {
    static let forbidden = [
        "UnsafePointer", "UnsafeMutablePointer", "UnsafeRawPointer", "UnsafeMutableRawPointer",
        "UnsafeMutableRawBufferPointer", "UnsafeMutableBufferPointer", "OpaquePointer",
        "unowned(unsafe)", "Unmanaged", ".allocate(", ".deallocate(", ".load(", ".loadUnaligned(", ".storeBytes(",
        "baseAddress", "withMemoryRebound", "assumingMemoryBound", "bindMemory", "unsafelyUnwrapped",
        "withUnsafeTemporaryAllocation", "withUnsafeMutableBytes", "withUnsafeMutableBufferPointer",
        "copyMemory", "nonisolated(unsafe)", "@unchecked Sendable",
        // A span made from a pointer, or a lifetime asserted rather than proven.
        "_unsafeElements", "_unsafeBytes", "_overrideLifetime", "unsafeBitCast",
    ]

    /// What a public declaration may not name: the public API lends memory only as spans and
    /// non-escapable views, whose lifetimes the compiler checks.
    static let unsafeInPublicAPI = ["Unsafe", "OpaquePointer", "Unmanaged", "unowned(unsafe)"]

    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Sources")

    @Test func rawPointerCodeLivesInSystemLayers() throws {
        let sources = Self.sources
        let files = try #require(FileManager.default.enumerator(atPath: sources.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") && !$0.contains("/System/") && !$0.hasPrefix("CallerIDC/") }
        #expect(files.count > 20, "the sources were not found at \(sources.path)")
        var offences: [String] = []
        for file in files.sorted() {
            let text = try String(contentsOfFile: sources.appendingPathComponent(file).path, encoding: .utf8)
            for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.trimmingCharacters(in: .whitespaces)
                if code.hasPrefix("//") { continue }
                for word in Self.forbidden where code.contains(word) {
                    offences.append("\(file):\(n + 1): \(word)")
                }
            }
        }
        #expect(offences.isEmpty, "raw-pointer code outside System/:\n\(offences.joined(separator: "\n"))")
    }

    /// Every `public` or `open` declaration of every module but the C ABI's (System/ folders
    /// included), with its parameter list when it spans lines, up to its body.
    /// Before: `EntryBatch.numbers` was a public `UnsafeBufferPointer`, and `EntryView`,
    /// `MergedStream` and `HTTPClient` lent bytes as `UnsafeRawBufferPointer`s that a caller
    /// could keep; the test above looked only for mutable-pointer words and passed.
    @Test func publicAPINamesNoUnsafeType() throws {
        let files = try #require(FileManager.default.enumerator(atPath: Self.sources.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") && !$0.hasPrefix("CallerIDC/") }
        #expect(files.count > 20, "the sources were not found at \(Self.sources.path)")
        var offences: [String] = []
        var publicDeclarations = 0
        for file in files.sorted() {
            let text = try String(contentsOfFile: Self.sources.appendingPathComponent(file).path, encoding: .utf8)
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            for (n, line) in lines.enumerated() where !line.hasPrefix("//") {
                let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
                guard words.contains("public") || words.contains("open") else { continue }
                publicDeclarations += 1
                var declaration = line
                var next = n + 1
                while declaration.filter({ $0 == "(" }).count > declaration.filter({ $0 == ")" }).count, next < lines.count {
                    declaration += " " + lines[next]
                    next += 1
                }
                let signature = declaration.split(separator: "{", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                for word in Self.unsafeInPublicAPI where signature.contains(word) {
                    offences.append("\(file):\(n + 1): \(word)")
                }
            }
        }
        #expect(publicDeclarations > 100, "too few public declarations found: \(publicDeclarations)")
        #expect(offences.isEmpty, "public API naming unsafe types:\n\(offences.joined(separator: "\n"))")
    }
}
