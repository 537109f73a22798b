/// What every error of the CallerID modules offers: a stable code (the same text in every
/// module: `corrupt`, `io`, `file-not-found`, …), a message for people, and the core error it
/// wraps when a higher layer passes one on (``CallerIDError`` itself wraps nothing).
///
/// `CallerIDError` (the core), `DirectoryError` (stores and Call Directory feeding) and
/// `PipelineError` (the build pipeline) conform; each layer adds the codes of its own failures,
/// and wrapping a core error keeps its code and message, so nothing is lost on the way up:
///
/// ```swift
/// catch let error as any CallerIDFailure {
///     log(error.codeName, error.message)           // "corrupt", "db.cid: damaged database: …"
///     if let cause = error.underlying { … }       // the core error, when one was wrapped
/// }
/// ```
public protocol CallerIDFailure: Error, Sendable, CustomStringConvertible {
    /// The stable code as text, shared by all layers (new codes may be added).
    var codeName: String { get }
    /// A human-readable message naming the file, offset, line, option or rule involved.
    var message: String { get }
    /// The core error this one wraps, if it wraps one.
    var underlying: CallerIDError? { get }
}

extension CallerIDFailure {
    /// The message (``message``): what `print(error)` and string interpolation show.
    public var description: String { message }
}

/// The one error type of CallerID: a stable ``Code`` for programs and a message for people
/// that names the file and, where there is one, the byte offset, section or input line.
public struct CallerIDError: CallerIDFailure, Equatable {
    /// A stable error code. New codes may be added; switch with a `default`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }

        /// A file or directory is missing.
        public static let fileNotFound = Code("file-not-found")
        /// A system call failed (open, read, write, mmap, fsync, rename…).
        public static let io = Code("io")
        /// The database file is damaged: bad magic, checksum, offset, length or content.
        public static let corrupt = Code("corrupt")
        /// The database was written by an incompatible format version.
        public static let unsupportedVersion = Code("unsupported-version")
        /// A number is not a valid E.164 number (1 … 999,999,999,999,999).
        public static let invalidNumber = Code("invalid-number")
        /// A record, label or category cannot be stored (bad UTF-8, too long, too many categories).
        public static let invalidInput = Code("invalid-input")
        /// The database file was modified in place (written, truncated) while it was open.
        /// Replace database files with `rename`, or open them with ``DatabaseMapping/copy``.
        public static let fileChanged = Code("file-changed")
        /// The data exceeds a format limit (for example 4 GiB in one section).
        public static let limitExceeded = Code("limit-exceeded")

        /// Every code the layer declares (the core's included, for a layer's type): what the
        /// tool's exit-code map must cover.
        package static let all: [Code] = [.fileNotFound, .io, .corrupt, .unsupportedVersion, .invalidNumber, .invalidInput, .fileChanged, .limitExceeded]

        public var description: String { rawValue }
    }

    public let code: Code
    /// A human-readable message naming the file and offset or line where relevant.
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var codeName: String { code.rawValue }
    /// Always nil: a core error is a cause, never a wrapper.
    public var underlying: CallerIDError? { nil }

    static func corrupt(_ path: String, _ what: String) -> CallerIDError {
        CallerIDError(.corrupt, "\(path): damaged database: \(what)")
    }
}

/// The code of a layer's errors (``LayerFailure``): a stable name, with the core's codes under
/// the same names (one spelling of each) and the layer's own beside them.
public protocol FailureCode: Hashable, Sendable, CustomStringConvertible {
    var rawValue: String { get }
    /// The code of a core error, under the same name.
    init(_ code: CallerIDError.Code)
}

extension FailureCode {
    public var description: String { rawValue }

    /// A file or directory is missing.
    public static var fileNotFound: Self { Self(.fileNotFound) }
    /// A system call failed (open, read, write, fsync, rename…).
    public static var io: Self { Self(.io) }
    /// A database file is damaged or fails verification.
    public static var corrupt: Self { Self(.corrupt) }
    /// A database was written by an incompatible (newer) format version.
    public static var unsupportedVersion: Self { Self(.unsupportedVersion) }
    /// A file was modified in place while it was open (a core error passed on).
    public static var fileChanged: Self { Self(.fileChanged) }
    /// The data exceeds a limit of the database format or of the layer.
    public static var limitExceeded: Self { Self(.limitExceeded) }
    /// A number is not a valid E.164 number (a core error passed on).
    public static var invalidNumber: Self { Self(.invalidNumber) }
    /// An input, record, label or category cannot be read or stored.
    public static var invalidInput: Self { Self(.invalidInput) }
}

/// The error of a layer built on the core (`DirectoryError`, `PipelineError`): its own
/// ``FailureCode`` type, a message, and the core error it passes on, if any. The layer declares
/// the stored properties; making one from a code or wrapping a core error is written here once.
public protocol LayerFailure: CallerIDFailure {
    associatedtype Code: FailureCode
    var code: Code { get }
    init(code: Code, message: String, underlying: CallerIDError?)
}

extension LayerFailure {
    /// The layer's own failure: `code` and a message naming what is at fault.
    public init(_ code: Code, _ message: String) {
        self.init(code: code, message: message, underlying: nil)
    }

    /// Wraps a core library error, keeping its code (same name), its message and the error
    /// itself as ``CallerIDFailure/underlying``.
    public init(_ error: CallerIDError) {
        self.init(code: Code(error.code), message: error.message, underlying: error)
    }

    public var codeName: String { code.rawValue }
}
