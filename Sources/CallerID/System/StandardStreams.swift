#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Standard output and standard error as file descriptors, written with `write(2)`.
///
/// The query path (`lookup NUMBER`) goes through here rather than `FileHandle`, so that a
/// one-number lookup touches no Foundation at all (start-up cost: BENCHMARKS.md).
package struct StandardStream: Sendable {
    package init(descriptor: Int32) { self.descriptor = descriptor }

    package let descriptor: Int32

    package static let output = StandardStream(descriptor: 1)
    package static let error = StandardStream(descriptor: 2)

    /// Writes all of `bytes`, retrying after a signal or a short write. A stream that
    /// cannot be written (closed pipe, full disk) drops the rest and returns the `errno`: for
    /// standard output and error there is nowhere left to report it, and the exit code still
    /// says how the command ended; a log file's writer reports it.
    @discardableResult
    package func write(_ bytes: UnsafeRawBufferPointer) -> Int32? {
        Platform.writeAll(descriptor, bytes)
    }

    package func write(_ text: String) {
        var text = text
        text.withUTF8 { _ = write(UnsafeRawBufferPointer($0)) }
    }

    /// True when the stream is a terminal.
    package var isTerminal: Bool { isatty(descriptor) == 1 }

    /// The width in columns of the terminal the stream is, or nil when it is not a terminal or
    /// the terminal does not say (a width of 0).
    package var terminalColumns: Int? {
        #if canImport(Darwin)
        let request: UInt = 0x4008_7468  // TIOCGWINSZ, _IOR('t', 104, struct winsize): a macro Swift does not import
        #else
        let request = UInt(TIOCGWINSZ)
        #endif
        var size = winsize()
        guard ioctl(descriptor, request, &size) == 0, size.ws_col > 0 else { return nil }
        return Int(size.ws_col)
    }
}

/// The value of an environment variable, nil when it is not set.
package func environmentValue(_ name: String) -> String? {
    getenv(name).map { String(cString: $0) }
}
