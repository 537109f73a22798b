#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CallerID

// What `lookup serve` asks of the operating system besides sockets: its signals, its limit of
// open files, the time of day for the access log, a log file, and spooled request bodies.

/// The signals `lookup serve` acts on.
enum ServerSignal {
    /// SIGHUP: open the data again.
    case reload
    /// SIGTERM or SIGINT: drain and exit.
    case stop
}

enum ServerSignals {
    /// Blocks SIGHUP, SIGTERM and SIGINT in the calling thread and every thread it starts from
    /// now on (call it before the server's threads start), so that only ``wait(seconds:)`` sees
    /// them; SIGPIPE is ignored (a client gone mid-answer is an error of that write only).
    static func block() {
        signal(SIGPIPE, SIG_IGN)
        var set = sigset_t()
        sigemptyset(&set)
        for s in [SIGHUP, SIGTERM, SIGINT] { sigaddset(&set, s) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Waits up to `seconds` for a blocked signal; nil when none came.
    static func wait(seconds: Double) -> ServerSignal? {
        #if os(Linux)
        var set = sigset_t()
        sigemptyset(&set)
        for s in [SIGHUP, SIGTERM, SIGINT] { sigaddset(&set, s) }
        var timeout = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
        let s = sigtimedwait(&set, nil, &timeout)
        switch s {
        case SIGHUP: return .reload
        case SIGTERM, SIGINT: return .stop
        default: return nil
        }
        #else
        // No sigtimedwait: poll for pending signals.
        var waited = 0.0
        while waited < seconds {
            var pending = sigset_t()
            sigpending(&pending)
            for (s, what) in [(SIGHUP, ServerSignal.reload), (SIGTERM, .stop), (SIGINT, .stop)] where sigismember(&pending, s) == 1 {
                var one = sigset_t()
                sigemptyset(&one)
                sigaddset(&one, s)
                var got: Int32 = 0
                sigwait(&one, &got)
                return what
            }
            usleep(20_000)
            waited += 0.02
        }
        return nil
        #endif
    }
}

/// Raises the soft limit of open files towards `wanted` (at most the hard limit); returns the
/// soft limit in force afterwards.
func raiseOpenFileLimit(to wanted: Int) -> Int {
    #if os(Linux)
    let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    let resource = RLIMIT_NOFILE
    #endif
    var limit = rlimit()
    guard getrlimit(resource, &limit) == 0 else { return 1024 }
    let target = rlim_t(wanted)
    if limit.rlim_cur < target {
        var raised = limit
        raised.rlim_cur = min(target, limit.rlim_max)
        if setrlimit(resource, &raised) == 0 { limit = raised }
    }
    return limit.rlim_cur >= rlim_t(Int.max) ? Int.max : Int(limit.rlim_cur)
}

/// The processors available now (at least 1).
func processorCount() -> Int { max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN))) }

/// Now as `2026-01-31T12:34:56.789Z`.
func utcTimestamp() -> String {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    var t = time_t(now.tv_sec)
    var parts = tm()
    gmtime_r(&t, &parts)
    func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
    let ms = Int(now.tv_nsec / 1_000_000)
    let millis = ms < 10 ? "00\(ms)" : ms < 100 ? "0\(ms)" : "\(ms)"
    return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(millis)Z"
}

/// A file opened for appending (created 0640 when missing), written with ``StandardStream``;
/// `-` is standard output.
func openAppending(_ path: String) throws(ToolError) -> StandardStream {
    if path == "-" { return .output }
    let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o640)
    guard fd >= 0 else {
        throw ToolError(code: Exit.ioError, message: "\(path): cannot open for writing: \(Platform.errorText(errno))")
    }
    return StandardStream(descriptor: fd)
}

/// Bytes written once, then read back in order: held in memory up to `memoryLimit`, beyond
/// that in an unnamed temporary file (created in `$TMPDIR` or /tmp and unlinked at once), so a
/// request body of any allowed size costs a bounded amount of memory.
///
/// Invariant: `fd` is -1 or an open descriptor this object owns (closed in `deinit`); the bytes
/// written are `memory` when `fd` is -1, else the file's first `written` bytes.
final class Spool {
    private var memory: [UInt8] = []
    private var fd: Int32 = -1
    private var written = 0
    private var readOffset = 0
    private let memoryLimit: Int

    init(memoryLimit: Int = 1 << 20) {
        self.memoryLimit = memoryLimit
    }

    deinit {
        if fd >= 0 { close(fd) }
    }

    /// Bytes written.
    var count: Int { fd >= 0 ? written : memory.count }

    func append(_ bytes: UnsafeRawBufferPointer) throws(ToolError) {
        if fd < 0 {
            if memory.count + bytes.count <= memoryLimit {
                memory.append(contentsOf: bytes)
                return
            }
            try spill()
        }
        try writeAll(bytes)
    }

    func append(_ bytes: [UInt8]) throws(ToolError) {
        try bytes.withUnsafeBytes { raw in Result { () throws(ToolError) in try append(raw) } }.get()
    }

    /// The next bytes, at most `max`, replacing `buffer`'s contents; false at the end.
    func read(into buffer: inout [UInt8], max: Int) throws(ToolError) -> Bool {
        buffer.removeAll(keepingCapacity: true)
        let n = min(max, count - readOffset)
        guard n > 0 else { return false }
        if fd < 0 {
            buffer.append(contentsOf: memory[readOffset..<(readOffset + n)])
        } else {
            buffer.reserveCapacity(n)
            var got = 0
            while got < n {
                let r = withUnsafeTemporaryAllocation(byteCount: n - got, alignment: 1) { raw in
                    let r = pread(fd, raw.baseAddress!, n - got, off_t(readOffset + got))
                    if r > 0 { buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[0..<r])) }
                    return r
                }
                if r < 0 && errno == EINTR { continue }
                guard r > 0 else { throw ToolError(code: Exit.ioError, message: "request body spool: read failed: \(Platform.errorText(errno))") }
                got += r
            }
        }
        readOffset += n
        return true
    }

    private func spill() throws(ToolError) {
        let directory = (getenv("TMPDIR").map { String(cString: $0) }).flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((directory + "/lookup-serve-body-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard made >= 0 else {
            throw ToolError(code: Exit.ioError, message: "\(directory): cannot create a file for a request body: \(Platform.errorText(errno))")
        }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        _ = fcntl(made, F_SETFD, FD_CLOEXEC)
        fd = made
        let held = memory
        memory = []
        try held.withUnsafeBytes { raw in Result { () throws(ToolError) in try writeAll(raw) } }.get()
    }

    private func writeAll(_ bytes: UnsafeRawBufferPointer) throws(ToolError) {
        if let code = Platform.writeAll(fd, bytes, written: { written += $0 }) {
            throw ToolError(code: Exit.ioError, message: "request body spool: write failed: \(Platform.errorText(code))")
        }
    }
}
