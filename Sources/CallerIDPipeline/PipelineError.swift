public import CallerID

/// The error a pipeline run ends with: a stable ``Code`` for programs and a message for
/// people naming the file, option or line at fault. Rejected rows are not errors of this
/// kind: they are collected as ``RejectedRow`` values and only end a run beyond
/// ``PipelineOptions/maxBadRows``.
public struct PipelineError: CallerIDFailure, Equatable {
    /// A stable error code. New codes may be added; switch with a `default`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }

        /// An input or configuration file is missing.
        public static let fileNotFound = Code(CallerIDError.Code.fileNotFound)
        /// Reading or writing failed.
        public static let io = Code(CallerIDError.Code.io)
        /// An option or a configuration file (numbering plan, category map, region map) is wrong.
        public static let invalidConfiguration = Code("invalid-configuration")
        /// An input file as a whole cannot be read as declared (not a JSON array, no such column…).
        public static let invalidInput = Code(CallerIDError.Code.invalidInput)
        /// More rows were rejected than ``PipelineOptions/maxBadRows`` allows.
        public static let tooManyBadRows = Code("too-many-bad-rows")
        /// The data breaks a limit of the database format or of the build.
        public static let limitExceeded = Code(CallerIDError.Code.limitExceeded)
        /// A database file is damaged (a core error passed on: reading an existing database).
        public static let corrupt = Code(CallerIDError.Code.corrupt)
        /// A database was written by an incompatible format version (a core error passed on).
        public static let unsupportedVersion = Code(CallerIDError.Code.unsupportedVersion)
        /// A number is not a valid E.164 number (a core error passed on).
        public static let invalidNumber = Code(CallerIDError.Code.invalidNumber)
        /// A file was modified in place while it was open (a core error passed on).
        public static let fileChanged = Code(CallerIDError.Code.fileChanged)

        /// The code of a core error, under the same name (the codes both layers have are the
        /// core's: one spelling of each).
        init(_ code: CallerIDError.Code) { self.init(code.rawValue) }

        public var description: String { rawValue }
    }

    public let code: Code
    public let message: String
    /// The core error this one passes on (``init(_:)-(CallerIDError)``), nil for the pipeline's own.
    public let underlying: CallerIDError?

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
        underlying = nil
    }

    /// Wraps an error of the core library, keeping its code (same name), its message and the
    /// error itself as ``underlying``.
    public init(_ error: CallerIDError) {
        code = Code(error.code)
        message = error.message
        underlying = error
    }

    public var codeName: String { code.rawValue }
}
