public import CallerID

/// The error type of the Call Directory layer (store, merge, budgets, loading): a stable
/// ``Code`` for programs and a message for people that names the file, rule or budget.
///
/// CallKit's own failures (what `completeRequest` would report) are ``CallDirectoryError``.
public struct DirectoryError: CallerIDFailure, Equatable {
    /// A stable error code. New codes may be added; switch with a `default`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }

        /// A file or directory is missing.
        public static let fileNotFound = Code(CallerIDError.Code.fileNotFound)
        /// A system call failed (open, write, fsync, rename, link…).
        public static let io = Code(CallerIDError.Code.io)
        /// A database file fails verification: wrong size, wrong XXH3, damaged content.
        public static let corrupt = Code(CallerIDError.Code.corrupt)
        /// `manifest.json` (or `settings.json`, `plan.json`) is missing a field, malformed or inconsistent.
        public static let badManifest = Code("bad-manifest")
        /// The entries do not fit: more than slots × max entries, or a rule larger than the budget.
        public static let budgetExceeded = Code("budget-exceeded")
        /// A blocking rule (`+33 6 12 ## ## ##`, `START..END`) cannot be read.
        public static let invalidRule = Code("invalid-rule")
        /// An argument is out of range (a slot index, a chunk size, an unsorted allow list…).
        public static let invalidArgument = Code("invalid-argument")
        /// A signature is missing, unreadable, by another key than the trusted one, or does not
        /// match the manifest (``ManifestSignature``); or a key file is malformed.
        public static let badSignature = Code("bad-signature")
        /// A fetched set is older than the one installed (a replayed manifest).
        public static let downgrade = Code("downgrade")
        /// The server could not be reached, or answered with an error status.
        public static let unreachable = Code("unreachable")
        /// The database format is newer than this reader.
        public static let unsupportedVersion = Code(CallerIDError.Code.unsupportedVersion)
        /// A database file was modified in place while it was open (a core error passed on).
        public static let fileChanged = Code(CallerIDError.Code.fileChanged)
        /// The data exceeds a format limit (a core error passed on).
        public static let limitExceeded = Code(CallerIDError.Code.limitExceeded)
        /// A number is not a valid E.164 number (a core error passed on).
        public static let invalidNumber = Code(CallerIDError.Code.invalidNumber)
        /// A record, label or category cannot be stored (a core error passed on).
        public static let invalidInput = Code(CallerIDError.Code.invalidInput)

        /// The code of a core error, under the same name (the codes both layers have are the
        /// core's: one spelling of each).
        init(_ code: CallerIDError.Code) { self.init(code.rawValue) }

        public var description: String { rawValue }
    }

    public let code: Code
    /// A human-readable message naming the file, rule or budget involved.
    public let message: String
    /// The core error this one passes on (``init(_:)-(CallerIDError)``), nil for the layer's own.
    public let underlying: CallerIDError?

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
        underlying = nil
    }

    public var codeName: String { code.rawValue }

    /// Wraps a core library error, keeping its code (same name), its message and the error
    /// itself as ``underlying``.
    public init(_ error: CallerIDError) {
        code = Code(error.code)
        message = error.message
        underlying = error
    }
}

/// Formats an integer with thousands separators for messages (`1,999,999`).
package func grouped(_ n: some BinaryInteger) -> String {
    let digits = String(n.magnitude)
    var out = ""
    for (i, c) in digits.enumerated() {
        if i > 0, (digits.count - i) % 3 == 0 { out.append(",") }
        out.append(c)
    }
    return (n < 0 ? "-" : "") + out
}
