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

enum Platform {
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

    /// `close(2)`.
    @discardableResult
    static func close(_ fd: Int32) -> Int32 {
        #if canImport(Glibc)
        Glibc.close(fd)
        #elseif canImport(Musl)
        Musl.close(fd)
        #else
        Darwin.close(fd)
        #endif
    }
}
