#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
package import CallerID
package import CallerIDQuery


// What `lookup serve` asks of the operating system besides sockets: its signals, its limit of
// open files, the time of day for the access log, a log file, and spooled request bodies.

/// The signals `lookup serve` acts on.
package enum ServerSignal {
    /// SIGHUP: open the data again.
    case reload
    /// SIGTERM or SIGINT: drain and exit.
    case stop
}

package enum ServerSignals {
    /// Blocks SIGHUP, SIGTERM and SIGINT in the calling thread and every thread it starts from
    /// now on (call it before the server's threads start), so that only ``wait(seconds:)`` sees
    /// them; SIGPIPE is ignored (a client gone mid-answer is an error of that write only).
    package static func block() {
        signal(SIGPIPE, SIG_IGN)
        var set = sigset_t()
        sigemptyset(&set)
        for s in [SIGHUP, SIGTERM, SIGINT] { sigaddset(&set, s) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Waits up to `seconds` for a blocked signal; nil when none came.
    package static func wait(seconds: Double) -> ServerSignal? {
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
package func raiseOpenFileLimit(to wanted: Int) -> Int {
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
package func processorCount() -> Int { max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN))) }

