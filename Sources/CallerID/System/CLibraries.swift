// The one place CallerID calls its C codecs and C shims. The hashes come from the system
// (libxxhash through CLZ4Shim) on Linux with the default `SystemCodecs` trait, and from the
// package's own portable C (CPortable) everywhere else and with `PortableCodecs`. Both agree
// bit for bit (Tests/CallerIDTests/PortableCodecTests.swift, Fuzz/codec_xxh3.c). LZ4 blocks
// are written with liblz4's LZ4HC (SystemCodecs on Linux only) and read everywhere with the
// package's own decoder (held to liblz4's by LZ4CodecTests and Fuzz/codec_lz4.c).
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

// MARK: LZ4

extension Codec {
    /// True when this build can write LZ4 groups (liblz4's LZ4HC, the `SystemCodecs` trait on
    /// Linux). Every build reads them, with the package's own decoder.
    static var compressesLZ4: Bool {
        #if SystemCodecs && os(Linux)
        true
        #else
        false
        #endif
    }

    /// Decodes the LZ4 block `block` (docs/FORMAT.md 5.14), whose matches may reach back into
    /// `dictionary` (only its last 64 KiB), into `out`: the bytes decoded, at most `out.count`;
    /// nil when the block is malformed or does not fit. Reads and writes only inside the
    /// three buffers, whatever the bytes.
    ///
    /// Always the package's own decoder (Sources/CPortable/lz4_block.c), whatever the trait:
    /// a damaged block is then refused alike on every platform (liblz4 accepts some blocks the
    /// format calls malformed, such as a match offset of 0), so a file verified on a server
    /// answers the same on a phone. liblz4 writes the blocks (``LZ4BlockEncoder``).
    @inline(__always)
    static func lz4Decode(_ block: UnsafeRawBufferPointer, dictionary: UnsafeRawBufferPointer, into out: MutableByteView) -> Int? {
        guard let src = block.baseAddress, block.count > 0 else { return nil }
        let n = cport_lz4_decode_dict(src, block.count, out.start, out.count, dictionary.baseAddress, dictionary.count)
        return n >= 0 ? Int(n) : nil
    }

    #if SystemCodecs && os(Linux)
    /// liblz4's decoder (`LZ4_decompress_safe_usingDict`), for the tests that hold the
    /// package's own to it.
    static func liblz4Decode(_ block: UnsafeRawBufferPointer, dictionary: UnsafeRawBufferPointer, into out: MutableByteView) -> Int? {
        guard let src = block.baseAddress, block.count > 0 else { return nil }
        let n = clz4_decode_dict(src, block.count, out.start, out.count, dictionary.baseAddress, dictionary.count)
        return n >= 0 ? Int(n) : nil
    }
    #endif
}

/// LZ4HC blocks compressed one by one against a fixed dictionary (the hot labels), for the
/// LZ4 groups of cold labels. Only where ``Codec/compressesLZ4``.
final class LZ4BlockEncoder {
    #if SystemCodecs && os(Linux)
    private let encoder: UnsafeMutablePointer<clz4_hc_encoder>
    #endif

    /// An encoder at LZ4HC `level` over the last 64 KiB of `dictionary`; nil when this build
    /// cannot compress LZ4 or memory runs out.
    init?(dictionary: [UInt8], level: Int) {
        #if SystemCodecs && os(Linux)
        guard let e = dictionary.withUnsafeBytes({ clz4_hc_encoder_new($0.baseAddress, $0.count, Int32(level)) }) else { return nil }
        encoder = e
        #else
        return nil
        #endif
    }

    deinit {
        #if SystemCodecs && os(Linux)
        clz4_hc_encoder_free(encoder)
        #endif
    }

    /// Appends `bytes` (not empty) compressed as one block to `out`; false on failure.
    func compress(_ bytes: [UInt8], appendingTo out: inout [UInt8]) -> Bool {
        #if SystemCodecs && os(Linux)
        let bound = clz4_compress_bound(bytes.count)
        guard bound > 0 else { return false }
        let start = out.count
        out.append(contentsOf: repeatElement(0, count: bound))
        let n = bytes.withUnsafeBytes { src in
            out.withUnsafeMutableBytes { dst in clz4_hc_encode(encoder, src.baseAddress, src.count, dst.baseAddress! + start, bound) }
        }
        out.removeLast(bound - n)
        return n > 0
        #else
        return false
        #endif
    }
}
