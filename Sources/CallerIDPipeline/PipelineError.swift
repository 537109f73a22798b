public import CallerID

/// The error a pipeline run ends with: a stable ``Code`` for programs and a message for
/// people naming the file, option or line at fault. Rejected rows are not errors of this
/// kind: they are collected as ``RejectedRow`` values and only end a run beyond
/// ``PipelineOptions/maxBadRows``.
public struct PipelineError: LayerFailure, Equatable {
    /// A stable error code: the core's (``FailureCode``) and the pipeline's own below. New
    /// codes may be added; switch with a `default`.
    public struct Code: FailureCode {
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }
        public init(_ code: CallerIDError.Code) { self.init(code.rawValue) }

        /// An option or a configuration file (numbering plan, category map, region map) is wrong.
        public static let invalidConfiguration = Code("invalid-configuration")
        /// An input file exists but cannot be opened or read from its start (permissions, a
        /// file the system will not read: `/proc/self/mem`): sysexits' EX_NOINPUT, like a
        /// missing one. A read that fails after part of the file was read is `io`.
        public static let unreadableInput = Code("unreadable-input")
        /// More rows were rejected than ``PipelineOptions/maxBadRows`` allows.
        public static let tooManyBadRows = Code("too-many-bad-rows")

        /// Every code of the layer: the core's (under the same names) and its own.
        package static let all: [Code] = CallerIDError.Code.all.map(Code.init) + [.invalidConfiguration, .unreadableInput, .tooManyBadRows]
    }

    public let code: Code
    /// A human-readable message naming the file, option or line at fault.
    public let message: String
    /// The core error this one passes on, nil for the pipeline's own.
    public let underlying: CallerIDError?

    public init(code: Code, message: String, underlying: CallerIDError?) {
        (self.code, self.message, self.underlying) = (code, message, underlying)
    }
}
