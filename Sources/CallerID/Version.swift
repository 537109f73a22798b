/// Versions of the library and of the file format it writes.
public enum CallerIDVersion {
    /// The library's semantic version.
    public static let library = "0.1.0"
    /// The database file format version written (readers accept any 1.x).
    public static let format = "\(Format.major).\(Format.minor)"
}
