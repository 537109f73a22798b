public import CallerID

/// The error type of the Call Directory layer (store, merge, budgets, loading): a stable
/// ``Code`` for programs and a message for people that names the file, rule or budget.
///
/// CallKit's own failures (what `completeRequest` would report) are ``CallDirectoryError``.
public struct DirectoryError: LayerFailure, Equatable {
    /// A stable error code: the core's (``FailureCode``) and the layer's own below. New codes
    /// may be added; switch with a `default`.
    public struct Code: FailureCode {
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }
        public init(_ code: CallerIDError.Code) { self.init(code.rawValue) }

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

        /// Every code of the layer: the core's (under the same names) and its own.
        package static let all: [Code] = CallerIDError.Code.all.map(Code.init) + [.badManifest, .budgetExceeded, .invalidRule, .invalidArgument, .badSignature, .downgrade, .unreachable]
    }

    public let code: Code
    /// A human-readable message naming the file, rule or budget involved.
    public let message: String
    /// The core error this one passes on, nil for the layer's own.
    public let underlying: CallerIDError?

    public init(code: Code, message: String, underlying: CallerIDError?) {
        (self.code, self.message, self.underlying) = (code, message, underlying)
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
