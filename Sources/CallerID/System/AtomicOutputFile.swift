// A buffered front for the atomic writer (`AtomicFileWriter` in MappedFile.swift), for the
// package's other modules that stream a large file (the Live Caller ID export). `package`
// access: not part of the library's public API.

/// Streams a new file through a fixed buffer into a temporary file beside `path` and moves it
/// into place with ``commit()`` (temporary file, `fsync`, `rename`, directory `fsync`: the
/// atomic writer's rules). Until then `path` is untouched; a file released without a commit,
/// or one whose write failed, removes its temporary file, so a failed export never leaves a
/// half-written file under the final name.
///
/// Heap use is the buffer (`bufferBytes`), whatever is written.
package final class AtomicOutputFile {
    package let path: String
    private var writer: AtomicFileWriter
    private var buffer: [UInt8]
    private let capacity: Int
    private var done = false
    /// Bytes written so far (buffered or not).
    package private(set) var bytesWritten = 0

    package init(path: String, bufferBytes: Int = 1 << 20) throws(CallerIDError) {
        self.path = path
        writer = try AtomicFileWriter(path: path)
        capacity = max(bufferBytes, 4096)
        buffer = []
        buffer.reserveCapacity(capacity)
    }

    deinit {
        writer.abandon()
    }

    /// Appends bytes; writes the buffer out when it is full.
    package func write(_ bytes: UnsafeRawBufferPointer) throws(CallerIDError) {
        guard !done else { throw CallerIDError(.io, "\(path): write after the file was finished") }
        bytesWritten += bytes.count
        if buffer.count + bytes.count > capacity {
            try flush()
            if bytes.count >= capacity {
                try writer.write(bytes)
                return
            }
        }
        buffer.append(contentsOf: bytes)
    }

    /// Appends bytes.
    package func write(_ bytes: [UInt8]) throws(CallerIDError) {
        try bytes.withUnsafeBytes { raw in Result { () throws(CallerIDError) in try write(raw) } }.get()
    }

    private func flush() throws(CallerIDError) {
        guard !buffer.isEmpty else { return }
        do {
            try buffer.withUnsafeBytes { raw in Result { () throws(CallerIDError) in try writer.write(raw) } }.get()
        } catch {
            done = true
            throw error
        }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Writes what is buffered, makes the file durable and moves it over ``path``.
    package func commit() throws(CallerIDError) {
        guard !done else { throw CallerIDError(.io, "\(path): the file was already finished") }
        try flush()
        done = true
        try writer.commit()
    }

    /// Removes the temporary file; ``path`` is left as it was.
    package func abandon() {
        done = true
        writer.abandon()
    }
}
