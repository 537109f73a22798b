import Foundation
import Testing
@testable import CallerID
@testable import CallerIDDirectory
@testable import CallerIDPipeline

/// Errors passed up from the core keep their code, message and cause (`DirectoryError`
/// used to turn limit, number and input errors into "corrupt", `PipelineError` corrupt files into
/// "invalid-input").
@Suite struct ErrorWrappingTests {
    static let coreCodes: [CallerIDError.Code] = [.fileNotFound, .io, .corrupt, .unsupportedVersion, .invalidNumber,
                                                  .invalidInput, .fileChanged, .limitExceeded]

    @Test(arguments: coreCodes)
    func wrappingKeepsCodeMessageAndCause(code: CallerIDError.Code) {
        let core = CallerIDError(code, "x.cid: something about \(code)")
        let directory = DirectoryError(core)
        let pipeline = PipelineError(core)
        for wrapped in [directory as any CallerIDFailure, pipeline as any CallerIDFailure] {
            #expect(wrapped.codeName == code.rawValue)
            #expect(wrapped.message == core.message)
            #expect(wrapped.underlying == core)
        }
    }

    @Test func eachLayerNamesTheCoreCodesItPassesOn() {
        #expect(DirectoryError(CallerIDError(.limitExceeded, "m")).code == .limitExceeded)
        #expect(DirectoryError(CallerIDError(.fileChanged, "m")).code == .fileChanged)
        #expect(DirectoryError(CallerIDError(.invalidNumber, "m")).code == .invalidNumber)
        #expect(DirectoryError(CallerIDError(.corrupt, "m")).code == .corrupt)
        #expect(PipelineError(CallerIDError(.corrupt, "m")).code == .corrupt)
        #expect(PipelineError(CallerIDError(.unsupportedVersion, "m")).code == .unsupportedVersion)
        #expect(PipelineError(CallerIDError(.invalidInput, "m")).code == .invalidInput)
    }

    @Test func aLayersOwnErrorWrapsNothing() {
        #expect(DirectoryError(.budgetExceeded, "too many").underlying == nil)
        #expect(PipelineError(.tooManyBadRows, "too many").underlying == nil)
        #expect(CallerIDError(.io, "x").underlying == nil)
        #expect(DirectoryError(.budgetExceeded, "m").codeName == "budget-exceeded")
    }

    /// Every layer's error prints as its message (the protocol's one `description`).
    @Test func anErrorPrintsAsItsMessage() {
        let errors: [any CallerIDFailure] = [CallerIDError(.corrupt, "a.cid: damaged database: x"),
                                             DirectoryError(.budgetExceeded, "12 entries over the budget"),
                                             PipelineError(.tooManyBadRows, "3 bad rows")]
        for e in errors {
            #expect(e.description == e.message)
            #expect("\(e)" == e.message)
            #expect(String(describing: e) == e.message)
        }
    }

    /// The stable code names, as programs see them: the same text in every layer.
    @Test func codeNamesAreStable() {
        #expect([CallerIDError.Code.fileNotFound, .io, .corrupt, .unsupportedVersion, .invalidNumber, .invalidInput,
                  .fileChanged, .limitExceeded].map(\.rawValue)
                == ["file-not-found", "io", "corrupt", "unsupported-version", "invalid-number", "invalid-input",
                    "file-changed", "limit-exceeded"])
        #expect([DirectoryError.Code.fileNotFound, .io, .corrupt, .badManifest, .budgetExceeded, .invalidRule,
                  .invalidArgument, .badSignature, .downgrade, .unreachable, .unsupportedVersion, .fileChanged,
                  .limitExceeded, .invalidNumber, .invalidInput].map(\.rawValue)
                == ["file-not-found", "io", "corrupt", "bad-manifest", "budget-exceeded", "invalid-rule",
                    "invalid-argument", "bad-signature", "downgrade", "unreachable", "unsupported-version",
                    "file-changed", "limit-exceeded", "invalid-number", "invalid-input"])
        #expect([PipelineError.Code.fileNotFound, .io, .invalidConfiguration, .invalidInput, .tooManyBadRows,
                  .limitExceeded, .corrupt, .unsupportedVersion, .invalidNumber, .fileChanged].map(\.rawValue)
                == ["file-not-found", "io", "invalid-configuration", "invalid-input", "too-many-bad-rows",
                    "limit-exceeded", "corrupt", "unsupported-version", "invalid-number", "file-changed"])
    }

    /// A damaged file met through the Directory layer: the core's verdict arrives intact.
    @Test func aDamagedDatabaseSeenThroughASnapshot() throws {
        let dir = TempDir()
        let path = dir.path("a.cid")
        _ = try buildDatabase([Entry(number: 79131234567, label: "A")], at: path)
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[8] = 9   // the major version field: a format from the future
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        #expect {
            _ = try DirectorySnapshot(databaseFile: path)
        } throws: { error in
            guard let e = error as? DirectoryError else { return false }
            return e.code == .unsupportedVersion && e.underlying?.code == .unsupportedVersion && e.message.contains("a.cid")
        }
    }
}
