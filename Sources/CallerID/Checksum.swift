/// XXH3-64 (seed 0), the checksum of the file format, for callers that hash whole files
/// (a build manifest, an app checking a downloaded database before installing it).
public enum Checksum {
    /// XXH3-64 of `bytes`, seed 0.
    public static func xxh3(_ bytes: [UInt8]) -> UInt64 { Codec.xxh3(bytes) }

    /// XXH3-64 of bytes in hand, without a copy (the pipeline hashes a field per row).
    package static func xxh3(bytes: UnsafeRawBufferPointer) -> UInt64 { Codec.xxh3(bytes) }

    /// XXH3-64 of the whole file at `path` (memory-mapped, read once).
    /// - Throws: ``CallerIDError`` when the file cannot be opened or mapped.
    public static func xxh3(fileAt path: String) throws(CallerIDError) -> UInt64 {
        let file = try MappedFile(path: path)
        return Codec.xxh3(file.bytes.buffer)
    }
}
