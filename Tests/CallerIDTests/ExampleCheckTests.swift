import Foundation
import Testing

// The iOS example is type-checked on macOS by the CI workflow (job `ios`) and on Linux by
// examples/ios/typecheck-linux.sh: both must check every file of the example, for the
// oldest iOS the package supports.

private let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

private func text(_ path: String) throws -> String {
    try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
}

struct ExampleCheckTests {
    @Test func theWorkflowTypeChecksEveryExampleFileForThePackagesOldestIOS() throws {
        let package = try text("Package.swift")
        let workflow = try text(".github/workflows/ci.yml")
        let linux = try text("examples/ios/typecheck-linux.sh")
        // `.iOS(.v16)` → 16.0: the workflow's target must be the same.
        let version = try #require(package.firstMatch(of: /\.iOS\(\.v(\d+)\)/)?.1, "Package.swift names no iOS version")
        let targets = workflow.matches(of: /-target arm64-apple-ios(\d+)\.0/).map { String($0.1) }
        #expect(!targets.isEmpty && targets.allSatisfy { $0 == version }, "workflow targets iOS \(targets), Package.swift iOS \(version)")
        let files = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("examples/ios").path)
            .filter { $0.hasSuffix(".swift") }
        #expect(files.count >= 3)
        for f in files {
            #expect(workflow.contains("examples/ios/\(f)"), "the workflow does not type-check \(f)")
            #expect(linux.contains(String(f.dropLast(6))), "typecheck-linux.sh does not type-check \(f)")
        }
    }
}
