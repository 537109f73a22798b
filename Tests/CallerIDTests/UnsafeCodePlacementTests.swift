import Foundation
import Testing

/// Where raw-pointer code may live (docs/ARCHITECTURE.md, "Unsafe code"): only in a module's
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
    ]

    @Test func rawPointerCodeLivesInSystemLayers() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Sources")
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
}
