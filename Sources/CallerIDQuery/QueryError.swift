public import CallerID

/// The error of the query engine (``PackSet``, ``QueryAnswers``) and of the server built on
/// it: a stable ``Code`` for programs, a message for people naming the file, number or request
/// at fault, and the core error it passes on.
public struct QueryError: LayerFailure, Equatable {
    /// A stable error code: the core's (``FailureCode``) and the query layer's own below.
    public struct Code: FailureCode {
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }
        public init(_ code: CallerIDError.Code) { self.init(code.rawValue) }
        /// The code of a layer below (the store's `bad-manifest`, the pipeline's
        /// `invalid-configuration`), passed on under its own name.
        package init(passingOn name: String) { self.init(name) }

        /// A request the engine cannot take: an unknown country, a store that is not one, a
        /// setting out of range.
        public static let invalidRequest = Code("invalid-request")
        /// The server cannot listen on the address asked for, or cannot start (its library is
        /// missing, too old, or refuses the settings).
        public static let cannotServe = Code("cannot-serve")

        /// Every code of the layer: the core's (under the same names) and its own.
        package static let all: [Code] = CallerIDError.Code.all.map(Code.init) + [.invalidRequest, .cannotServe]
    }

    public let code: Code
    /// A human-readable message naming the file, number or request at fault.
    public let message: String
    /// The core error this one passes on, nil for the layer's own.
    public let underlying: CallerIDError?
    /// The database file whose change this error reports (modified in place, or cut short under
    /// its mapping: ``PackSet``), nil for any other error. Only the numbers that need that file
    /// fail: a batch answers the others, a server answers 503 for these.
    public let changedFile: String?

    public init(code: Code, message: String, underlying: CallerIDError?) {
        self.init(code: code, message: message, underlying: underlying, changedFile: nil)
    }

    package init(code: Code, message: String, underlying: CallerIDError? = nil, changedFile: String?) {
        (self.code, self.message, self.underlying, self.changedFile) = (code, message, underlying, changedFile)
    }

    /// An error of a layer below, passed on under its code's name, keeping its cause.
    package init(passingOn error: some CallerIDFailure) {
        if let own = error as? QueryError {
            self = own
            return
        }
        self.init(code: Code(passingOn: error.codeName), message: error.message,
                  underlying: error.underlying ?? (error as? CallerIDError), changedFile: nil)
    }
}
