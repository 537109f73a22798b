public import CallerID

/// The error a pipeline run ends with: a stable ``Code`` for programs and a message for
/// people naming the file, option or line at fault. Rejected rows are not errors of this
/// kind: they are collected as ``RejectedRow`` values and only end a run beyond
/// ``PipelineOptions/maxBadRows``.
public struct PipelineError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable error code. New codes may be added; switch with a `default`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }

        /// An input or configuration file is missing.
        public static let fileNotFound = Code("file-not-found")
        /// Reading or writing failed.
        public static let io = Code("io")
        /// An option or a configuration file (numbering plan, category map, region map) is wrong.
        public static let invalidConfiguration = Code("invalid-configuration")
        /// An input file as a whole cannot be read as declared (not a JSON array, no such column…).
        public static let invalidInput = Code("invalid-input")
        /// More rows were rejected than ``PipelineOptions/maxBadRows`` allows.
        public static let tooManyBadRows = Code("too-many-bad-rows")
        /// The data breaks a limit of the database format or of the build.
        public static let limitExceeded = Code("limit-exceeded")

        public var description: String { rawValue }
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// Wraps an error of the core library, keeping its meaning.
    public init(_ error: CallerIDError) {
        switch error.code {
        case .fileNotFound: self.init(.fileNotFound, error.message)
        case .io: self.init(.io, error.message)
        case .limitExceeded: self.init(.limitExceeded, error.message)
        default: self.init(.invalidInput, error.message)
        }
    }

    public var description: String { message }
}
