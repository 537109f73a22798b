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
