// The C library, one branch per OS: glibc (Debian), musl (static Linux SDK) and Darwin
// (macOS, iOS). The few calls whose names or struct fields differ between them are wrapped
// here; everything else in the `System/` files uses the POSIX names, which all three share.
#if canImport(Glibc)
internal import Glibc
#elseif canImport(Musl)
internal import Musl
#elseif canImport(Darwin)
internal import Darwin
#endif
// `stat`'s fields may be owned by CPortable's clang module (its header includes the C
// library's): a clean build then needs this import (MemberImportVisibility).
internal import CPortable

/// The package's calls into the C library that differ between platforms or that every module
/// needs the same way: the one loop that writes all of a buffer, and the one text of an errno.
package enum Platform {
    /// Last modification time of a `stat` result (glibc/musl `st_mtim`, Darwin `st_mtimespec`).
    static func modificationTime(_ st: stat) -> timespec {
        #if canImport(Darwin)
        st.st_mtimespec
        #else
        st.st_mtim
        #endif
    }

    /// Last status change time (glibc/musl `st_ctim`, Darwin `st_ctimespec`).
    static func changeTime(_ st: stat) -> timespec {
        #if canImport(Darwin)
        st.st_ctimespec
        #else
        st.st_ctim
        #endif
    }

    /// `write(2)`: bytes written or -1 with errno.
    static func write(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
        #if canImport(Glibc)
        Glibc.write(fd, bytes, count)
        #elseif canImport(Musl)
        Musl.write(fd, bytes, count)
        #else
        Darwin.write(fd, bytes, count)
        #endif
    }

    /// Writes all of `bytes` to `fd`: retries after a signal (EINTR) and after a short write,
    /// through the disk-full seam (``DiskFullSimulation``), so a test's full disk reaches every
    /// file the package writes. Nil when everything was written; else the `errno` of the
    /// failure (what was written before it stays written). `written`: bytes written so far.
    package static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer,
                                 written: (Int) -> Void = { _ in }) -> Int32? {
        guard let base = bytes.baseAddress else { return nil }
        var done = 0
        while done < bytes.count {
            let n = DiskFullSimulation.write(fd, base + done, bytes.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            done += n
            written(n)
        }
        return nil
    }

    /// `read(2)` into `buffer`, retried after a signal: bytes read (0 at the end of the file),
    /// or -1 with `errno`.
    package static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard let base = buffer.baseAddress else { return 0 }
        while true {
            #if canImport(Glibc)
            let n = Glibc.read(fd, base, buffer.count)
            #elseif canImport(Musl)
            let n = Musl.read(fd, base, buffer.count)
            #else
            let n = Darwin.read(fd, base, buffer.count)
            #endif
            if n < 0 && errno == EINTR { continue }
            return n
        }
    }

    /// The C library's text for an `errno` value ("No space left on device").
    package static func errorText(_ code: Int32) -> String {
        String(cString: strerror(code))
    }

    /// `close(2)`.
    @discardableResult
    package static func close(_ fd: Int32) -> Int32 {
        #if canImport(Glibc)
        Glibc.close(fd)
        #elseif canImport(Musl)
        Musl.close(fd)
        #else
        Darwin.close(fd)
        #endif
    }
}

// The package's second thread: `Database.verify()` checks two parts of a large file at once
// (docs/FORMAT.md §8), the writer encodes the blocks beside the label sections, and the build's
// row loop has the next chunk of its input read and split ahead. POSIX threads: glibc, musl and
// Darwin share these calls.

/// Runs `first` on the calling thread and `second` on a new thread at the same time, and
/// returns both results once both have finished (the new thread is joined: nothing of it
/// outlives the call). When no thread can be started, `second` runs after `first` on the
/// calling thread: the results are the same, only slower.
///
/// The closures must not share mutable state; each may read what the caller lends them.
package func runConcurrently<A, B>(_ first: () -> A, _ second: () -> B) -> (A, B) {
    withoutActuallyEscaping(second) { second -> (A, B) in
        let job = SecondThreadJob(second)
        let context = Unmanaged.passRetained(job).toOpaque()
        // pthread_t: a pointer on Darwin and musl (imported as optional), an integer on glibc.
        #if canImport(Glibc)
        var thread = pthread_t()
        #else
        var thread: pthread_t? = nil
        #endif
        let started = pthread_create(&thread, nil, { context in
            // The job was retained for the thread; the caller keeps its own reference.
            #if canImport(Darwin)
            Unmanaged<SecondThreadWork>.fromOpaque(context).takeRetainedValue().run()
            #else
            if let context { Unmanaged<SecondThreadWork>.fromOpaque(context).takeRetainedValue().run() }
            #endif
            return nil
        }, context)
        if started != 0 {
            Unmanaged<SecondThreadJob<B>>.fromOpaque(context).release()
            let a = first()
            job.run()
            return (a, job.take())
        }
        let a = first()
        #if canImport(Glibc)
        pthread_join(thread, nil)
        #else
        if let thread { pthread_join(thread, nil) }
        #endif
        return (a, job.take())
    }
}

/// What the thread's C entry point sees (it cannot be generic).
private class SecondThreadWork {
    func run() {}
}

/// The work of the second thread and its result: written by that thread before it ends, read
/// by the caller after `pthread_join` (which orders the two).
private final class SecondThreadJob<B>: SecondThreadWork {
    private var body: (() -> B)?
    private var result: B?

    init(_ body: @escaping () -> B) { self.body = body }

    override func run() {
        result = body?()
        body = nil  // the closure must not outlive `withoutActuallyEscaping`
    }

    func take() -> B {
        guard let result else { preconditionFailure("the second thread's work did not run") }
        return result
    }
}
