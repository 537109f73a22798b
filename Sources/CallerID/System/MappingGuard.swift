// The mapping guard: reads of a mapped database file that survive the file being cut short in
// place (C: Sources/CPortable/signals.c, one SIGBUS handler for the process).
internal import CPortable

/// Keeps the process alive when a file it has mapped is truncated in place.
///
/// A mapped file (``DatabaseMapping/map``) that is cut short under its reader (`truncate`,
/// `cp new.cid live.cid`, a shell's `>`) makes every read of a page past its new end raise
/// SIGBUS, which ends the process. Once ``install()`` has run, a SIGBUS in a database's mapping
/// maps zero pages over the rest of that mapping, marks the database (``Database/mappingFaulted``,
/// and ``Database/checkFile()`` throws `fileChanged`), and lets the read go on: it reads zeros,
/// which the checked readers take as damaged bytes, never as a reason to trap. What was read
/// from that database since it was opened may be wrong and must be discarded: a caller checks
/// ``Database/mappingFaulted`` after each answer it keeps.
///
/// Every mapping is registered when it is made and unregistered before it is unmapped, whether
/// or not the guard is installed; the handler is the process's, installed once, and chained to
/// the handler installed before it for any other SIGBUS (a fault elsewhere still ends the
/// process as it would have). A library does not install it by itself: the host decides
/// (`lookup serve` and `lookup NUMBER`/`lookup -` do).
///
/// Linux and Darwin (both raise SIGBUS past the end of a shrunk mapping; the Darwin branch is
/// not built in this repository's CI).
package enum MappingGuard {
    /// Installs the process's SIGBUS handler (once; later calls do nothing).
    /// - Throws: ``CallerIDError`` (`io`) when `sigaction` refuses.
    package static func install() throws(CallerIDError) {
        guard cport_guard_install() == 0 else {
            throw CallerIDError(.io, "cannot install the SIGBUS handler of mapped files: \(errnoMessage())")
        }
    }

    /// True once ``install()`` succeeded.
    package static var isInstalled: Bool { cport_guard_installed() != 0 }

    /// Faults handled in every mapping since the process started: 0 while every read of every
    /// mapping read its file. One atomic load (a cheap first check before looking at each file).
    package static var faults: UInt64 { cport_guard_faults_total() }
}

extension MappingGuard {
    /// Registers `count` bytes at `base` (a mapping just made); the handle to keep, nil when
    /// the registry had no memory (the mapping is then not guarded).
    static func register(_ base: UnsafeRawPointer, count: Int) -> UnsafeMutableRawPointer? {
        cport_guard_register(base, count)
    }

    /// Unregisters a region: before it is unmapped.
    static func unregister(_ handle: UnsafeMutableRawPointer?) {
        cport_guard_unregister(handle)
    }

    /// Whether a read of the region faulted (and read zeros) since it was registered.
    static func faulted(_ handle: UnsafeMutableRawPointer?) -> Bool {
        handle.map { cport_guard_faults($0) > 0 } ?? false
    }
}
