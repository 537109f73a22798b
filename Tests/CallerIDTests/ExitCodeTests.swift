import Testing
import CallerID
import CallerIDDirectory
import CallerIDPipeline
@testable import lookup

/// The tool's exit codes (sysexits) for the errors of every layer.
@Suite struct ExitCodeTests {
    @Test func everyErrorCodeOfEveryLayerHasAnExitCode() {
        let names = Set(CallerIDError.Code.all.map(\.rawValue) + DirectoryError.Code.all.map(\.rawValue)
                        + PipelineError.Code.all.map(\.rawValue))
        // The layers share the core's codes and add their own: none spells another's differently.
        #expect(names.count == DirectoryError.Code.all.count + PipelineError.Code.all.count - CallerIDError.Code.all.count)
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
    }
}
