import Testing
import CallerID
import CallerIDDirectory
import CallerIDPipeline
import CallerIDQuery
@testable import lookup

/// The tool's exit codes (sysexits) for the errors of every layer.
@Suite struct ExitCodeTests {
    @Test func everyErrorCodeOfEveryLayerHasAnExitCode() {
        let names = Set(CallerIDError.Code.all.map(\.rawValue) + DirectoryError.Code.all.map(\.rawValue)
                        + PipelineError.Code.all.map(\.rawValue) + QueryError.Code.all.map(\.rawValue))
        // The layers share the core's codes and add their own: none spells another's differently.
        let core = CallerIDError.Code.all.count
        #expect(names.count == DirectoryError.Code.all.count + PipelineError.Code.all.count + QueryError.Code.all.count - 2 * core)
        #expect(Set(exitCodes.keys) == names)
        #expect(exitCodes.values.allSatisfy { [Exit.noInput, Exit.ioError, Exit.unavailable, Exit.usage, Exit.dataError].contains($0) })
    }

    @Test func errorsEndWithTheirSysexitsCode() {
        #expect(exitCode(for: CallerIDError(.io, "x")) == 74)
        #expect(exitCode(for: DirectoryError(CallerIDError(.fileNotFound, "x"))) == 66)
        #expect(exitCode(for: PipelineError(.unreadableInput, "x")) == 66)
        #expect(exitCode(for: DirectoryError(.unreachable, "x")) == 69)
        #expect(exitCode(for: DirectoryError(.invalidRule, "x")) == 64)
        #expect(exitCode(for: CallerIDError(.corrupt, "x")) == 65)
        #expect(exitCode(for: PipelineError(.tooManyBadRows, "x")) == 65)
        #expect(exitCode(for: QueryError(.cannotServe, "x")) == 69)
        #expect(exitCode(for: QueryError(.invalidRequest, "x")) == 64)
        // A lower layer's error passed on by the query engine keeps its code, so its exit code.
        #expect(exitCode(for: QueryError(passingOn: DirectoryError(.badManifest, "x"))) == 65)
        #expect(exitCode(for: QueryError(passingOn: CallerIDError(.fileChanged, "x"))) == 74)
    }
}
