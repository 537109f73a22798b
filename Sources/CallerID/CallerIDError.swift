/// The one error type of CallerID: a stable ``Code`` for programs and a message for people
/// that names the file and, where there is one, the byte offset, section or input line.
public struct CallerIDError: Error, Sendable, Equatable, CustomStringConvertible {
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

    public var description: String { message }

    static func corrupt(_ path: String, _ what: String) -> CallerIDError {
        CallerIDError(.corrupt, "\(path): damaged database: \(what)")
    }
}
