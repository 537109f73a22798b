/// Versions of the library and of the file format it writes.
public enum CallerIDVersion {
    /// The library's semantic version.
    public static let library = "0.1.0"
    /// The newest database file format version read and written. The writer writes 2.0 for a
    /// file none of whose blocks needs 3.0's key codec (docs/FORMAT.md §9); readers accept 2.x and 3.x.
    public static let format = "\(Format.major).\(Format.minor)"
}
