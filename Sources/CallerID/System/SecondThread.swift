// The core's one use of a second thread: ``Database/verify()`` checks two halves of a file at
// once (docs/FORMAT.md §7). POSIX threads: glibc, musl and Darwin share these calls.
#if canImport(Glibc)
internal import Glibc
#elseif canImport(Musl)
internal import Musl
#elseif canImport(Darwin)
internal import Darwin
#endif

/// Runs `first` on the calling thread and `second` on a new thread at the same time, and
/// returns both results once both have finished (the new thread is joined: nothing of it
/// outlives the call). When no thread can be started, `second` runs after `first` on the
/// calling thread: the results are the same, only slower.
///
/// The closures must not share mutable state; each may read what the caller lends them.
func runConcurrently<A, B>(_ first: () -> A, _ second: () -> B) -> (A, B) {
    withoutActuallyEscaping(second) { second -> (A, B) in
        let job = SecondThreadJob(second)
        let context = Unmanaged.passRetained(job).toOpaque()
        #if canImport(Darwin)
        var thread: pthread_t? = nil
        #else
        var thread = pthread_t()
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
            job.run()
            let a = first()
            return (a, job.take())
        }
        let a = first()
        #if canImport(Darwin)
        if let thread { pthread_join(thread, nil) }
        #else
        pthread_join(thread, nil)
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
