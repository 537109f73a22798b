// The one place CallerID calls its C codecs and C shims. The codecs come from the system
// (liblz4, libxxhash through CLZ4Shim) on Linux with the default `SystemCodecs` trait, and
// from the package's own portable C (CPortable) everywhere else and with `PortableCodecs`.
// Both agree bit for bit (Tests/CallerIDTests/PortableCodecTests.swift, Fuzz/codec_*.c).
#if SystemCodecs && os(Linux)
internal import CLZ4Shim
#endif
internal import CPortable

/// XXH3-64 (seed 0) and LZ4 block codec, as used by the file format.
enum Codec {
    /// Which codecs this build uses: "system" (liblz4, libxxhash) or "portable".
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

    /// Decompresses exactly `destination.count` bytes, with `dictionary` as the history
    /// before the block (may be empty); false when the input is malformed or does not produce
    /// exactly that many bytes. Never reads or writes out of bounds.
    static func decompress(_ source: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer,
                           dictionary: UnsafeRawBufferPointer) -> Bool {
        guard let src = source.baseAddress, let dst = destination.baseAddress,
              source.count > 0, source.count <= Int(Int32.max), destination.count <= Int(Int32.max)
        else { return false }
        #if SystemCodecs && os(Linux)
        let produced: Int32
        if let dict = dictionary.baseAddress, dictionary.count > 0 {
            produced = clz4_decompress_safe_dict(src, dst, Int32(source.count), Int32(destination.count), dict, Int32(dictionary.count))
        } else {
            produced = clz4_decompress_safe(src, dst, Int32(source.count), Int32(destination.count))
        }
        return Int(produced) == destination.count
        #else
        let dict = dictionary.count > 0 ? dictionary.baseAddress : nil
        let produced = cport_lz4_decode(src, source.count, dst, destination.count, dict, dict == nil ? 0 : dictionary.count)
        return produced == destination.count
        #endif
    }
}

/// LZ4 compression of independent blocks against one shared dictionary: LZ4HC with the
/// system codecs, the portable greedy encoder otherwise (valid blocks, about a third larger
/// on label data; `level` is then ignored).
final class DictionaryCompressor {
    #if SystemCodecs && os(Linux)
    private let dictionary: UnsafeMutableRawBufferPointer   // owned copy: the LZ4 state points into it
    private let state: UnsafeMutableRawPointer

    /// `dictionary`: up to the last 64 KiB are used.
    init(dictionary bytes: [UInt8], level: Int32) {
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 16)
        bytes.withUnsafeBytes { copy.copyMemory(from: $0) }
        dictionary = copy
        guard let s = clz4_dict_compressor_create(copy.baseAddress!, Int32(bytes.count), level) else {
            fatalError("out of memory allocating an LZ4HC state")
        }
        state = s
    }

    deinit {
        clz4_dict_compressor_free(state)
        dictionary.deallocate()
    }

    /// The compressed block, or nil when it would not fit in `limit` bytes.
    func compress(_ input: [UInt8], limit: Int) -> [UInt8]? {
        guard !input.isEmpty, input.count < Int(Int32.max) / 2 else { return nil }
        let capacity = Int(clz4_compress_bound(Int32(input.count)))
        var output = [UInt8](repeating: 0, count: capacity)
        let written = input.withUnsafeBytes { src in
            output.withUnsafeMutableBytes { dst in
                clz4_dict_compress(state, src.baseAddress!, dst.baseAddress!, Int32(input.count), Int32(capacity))
            }
        }
        guard written > 0, Int(written) <= limit else { return nil }
        output.removeSubrange(Int(written)...)
        return output
    }
    #else
    private let encoder: OpaquePointer   // the encoder keeps its own copy of the dictionary

    /// `dictionary`: up to the last 64 KiB are used. `level` is not used by the greedy encoder.
    init(dictionary bytes: [UInt8], level: Int32) {
        guard let e = bytes.withUnsafeBytes({ cport_lz4_encoder_create($0.baseAddress, $0.baseAddress == nil ? 0 : $0.count) }) else {
            fatalError("out of memory allocating an LZ4 encoder")
        }
        encoder = e
    }

    deinit { cport_lz4_encoder_free(encoder) }

    /// The compressed block, or nil when it would not fit in `limit` bytes.
    func compress(_ input: [UInt8], limit: Int) -> [UInt8]? {
        guard !input.isEmpty, input.count < Int(Int32.max) / 2, limit > 0 else { return nil }
        var output = [UInt8](repeating: 0, count: limit)
        let written = input.withUnsafeBytes { src in
            output.withUnsafeMutableBytes { dst in
                cport_lz4_encode(encoder, src.baseAddress!, input.count, dst.baseAddress!, limit)
            }
        }
        guard written > 0 else { return nil }
        output.removeSubrange(written...)
        return output
    }
    #endif
}

/// Bytes the process currently has allocated with malloc (glibc: `mallinfo2().uordblks +
/// hblkhd`; Darwin: the default zone's `size_in_use`; 0 where the C library cannot say).
/// Used by tests and benchmarks to prove that enumeration does not grow the heap.
public func currentHeapBytes() -> Int {
    Int(max(cport_heap_in_use(), 0))
}

/// A fixed array of pointer slots, each published at most once (NULL → value) with
/// acquire/release ordering. Lets several threads share lazily decoded label chunks
/// without a lock; a loser of a publish race frees its own copy.
final class PublishOnceSlots: @unchecked Sendable {
    // @unchecked: every access goes through the C11 atomics below.
    private let slots: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    let count: Int

    init(count: Int) {
        self.count = count
        slots = .allocate(capacity: max(count, 1))
        slots.initialize(repeating: nil, count: max(count, 1))
    }

    deinit {
        for i in 0..<count {
            if let p = slots[i] { p.deallocate() }
        }
        slots.deallocate()
    }

    /// The published buffer for slot `i`, if any.
    func load(_ i: Int) -> UnsafeRawPointer? {
        // A `void *const *` in C: the slot's address, read atomically.
        let raw = UnsafeRawPointer(slots + i).assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
        return cport_atomic_load_ptr(raw).map { UnsafeRawPointer($0) }
    }

    /// Publishes `buffer` (allocated with `UnsafeMutableRawPointer.allocate`) in slot `i`.
    /// Returns the buffer that ends up in the slot; frees `buffer` if another thread won.
    func publish(_ i: Int, _ buffer: UnsafeMutableRawPointer) -> UnsafeRawPointer {
        if let winner = cport_atomic_publish_ptr(slots + i, buffer) {
            buffer.deallocate()
            return UnsafeRawPointer(winner)
        }
        return UnsafeRawPointer(buffer)
    }
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
