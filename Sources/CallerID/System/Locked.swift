#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value shared between threads, read and changed only with its mutex held (a pthread mutex:
/// the tool's start-up touches neither Foundation's locks nor the Synchronization module, which
/// Apple systems have only from macOS 15).
///
/// Invariant: `value` is accessed only inside ``withLock(_:)``, between lock and unlock of
/// `mutex`; the mutex is initialized in `init` and destroyed once in `deinit`.
package final class Locked<Value: Sendable>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: Value) {
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` on the value with the mutex held (keep it short: other threads wait).
    package func withLock<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// The value now.
    package var current: Value { withLock { $0 } }
}
