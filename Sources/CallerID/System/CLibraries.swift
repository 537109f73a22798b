// The one place CallerID calls its C codecs and C shims. The hashes come from the system
// (libxxhash through CLZ4Shim) on Linux with the default `SystemCodecs` trait, and from the
// package's own portable C (CPortable) everywhere else and with `PortableCodecs`. Both agree
// bit for bit (Tests/CallerIDTests/PortableCodecTests.swift, Fuzz/codec_xxh3.c).
#if SystemCodecs && os(Linux)
internal import CLZ4Shim
#endif
internal import CPortable

/// XXH3-64 (seed 0), as used by the file format, and XXH64.
enum Codec {
    /// Which codecs this build uses: "system" (libxxhash) or "portable".
    static var implementation: String {
        #if SystemCodecs && os(Linux)
        "system"
        #else
        "portable"
        #endif
    }

    /// XXH3-64 of the bytes, seed 0.
    static func xxh3(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        #if SystemCodecs && os(Linux)
        guard let base = bytes.baseAddress, bytes.count > 0 else {
            return withUnsafeBytes(of: 0 as UInt8) { clz4_xxh3_64($0.baseAddress!, 0) }
        }
        return clz4_xxh3_64(base, bytes.count)
        #else
        return cport_xxh3_64(bytes.baseAddress, bytes.baseAddress == nil ? 0 : bytes.count)
        #endif
    }

    static func xxh3(_ bytes: [UInt8]) -> UInt64 {
        bytes.withUnsafeBytes { xxh3($0) }
    }

    /// XXH64 with a seed (pinned by tests against the reference values).
    static func xxh64(_ bytes: [UInt8], seed: UInt64 = 0) -> UInt64 {
        bytes.withUnsafeBytes { raw in
            #if SystemCodecs && os(Linux)
            withUnsafeBytes(of: 0 as UInt8) { dummy in
                clz4_xxh64(raw.baseAddress ?? dummy.baseAddress!, raw.count, seed)
            }
            #else
            cport_xxh64(raw.baseAddress, raw.baseAddress == nil ? 0 : raw.count, seed)
            #endif
        }
    }
}

/// XXH3-64 (seed 0) of bytes given in pieces: the value ``Codec/xxh3(_:)-(UnsafeRawBufferPointer)``
/// gives for all of them joined, without holding them (the package's portable C, whatever the
/// trait; PortableCodecTests checks it against the one-shot hash). A file streamed to disk
/// (the bounded-memory build) is hashed this way.
package struct StreamingXXH3 {
    private var state = cport_xxh3_state()

    package init() { cport_xxh3_reset(&state) }

    package mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        cport_xxh3_update(&state, base, bytes.count)
    }

    package mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The hash of everything given so far.
    package var digest: UInt64 {
        var copy = state
        return cport_xxh3_digest(&copy)
    }
}

/// Bytes the process currently has allocated with malloc (glibc: `mallinfo2().uordblks +
/// hblkhd`; Darwin: the default zone's `size_in_use`; 0 where the C library cannot say).
/// Used by tests and benchmarks to prove that enumeration does not grow the heap.
public func currentHeapBytes() -> Int {
    Int(max(cport_heap_in_use(), 0))
}

extension ByteView {
    /// Hints that the bytes `[offset, offset + length)` (at most 1 KiB) will be read soon:
    /// one prefetch per 64-byte line. Touches nothing (any range is harmless).
    @inline(__always)
    func prefetch(_ offset: Int, _ length: Int) {
        var line = (Int(bitPattern: base) &+ offset) & ~63
        let end = Int(bitPattern: base) &+ offset &+ min(length, 1024)
        while line < end {
            cport_prefetch(UnsafeRawPointer(bitPattern: line))
            line &+= 64
        }
    }
}
