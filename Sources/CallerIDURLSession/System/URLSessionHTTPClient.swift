import CallerID
public import CallerIDDirectory
import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// ``HTTPClient`` over URLSession, for ``DirectoryFetcher`` in an app: on Apple platforms
/// (the app, or its Call Directory extension's host app, fetching on a schedule), and on Linux
/// for programs that accept FoundationNetworking (libcurl, OpenSSL…) in their process.
///
/// A separate module so that linking CallerIDDirectory never brings FoundationNetworking in:
/// the `lookup` tool uses its own client, which opens libcurl only when a fetch runs.
///
/// Keeps ``HTTPClient``'s rules: a status outside 200–299 cancels the task at the response
/// (the error body is not read); the calling thread checks the request's deadline every half
/// second and cancels a transfer that falls behind; the request's ``HTTPRequest/seconds`` is
/// the session's resource timeout.
public struct URLSessionHTTPClient: HTTPClient {
    /// Seconds without progress after which a request fails (URLSession's request timeout).
    public var timeout: Double

    public init(timeout: Double = 30) {
        self.timeout = timeout
    }

    public func get(_ request: HTTPRequest, body: (_ status: Int, _ bytes: RawSpan) -> Bool) throws(DirectoryError) -> Int {
        let url = request.url
        guard let u = URL(string: url) else { throw DirectoryError(.invalidArgument, "\(url): not a URL") }
        var urlRequest = URLRequest(url: u, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout)
        if request.offset > 0 { urlRequest.setValue("bytes=\(request.offset)-", forHTTPHeaderField: "Range") }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForResource = request.seconds + 1
        return try withoutActuallyEscaping(body) { (escapable) throws(DirectoryError) -> Int in
            let transfer = Transfer(escapable)
            let session = URLSession(configuration: configuration, delegate: transfer, delegateQueue: nil)
            let task = session.dataTask(with: urlRequest)
            let started = DispatchTime.now().uptimeNanoseconds
            task.resume()
            var late: (received: Int, elapsed: Double)? = nil
            while transfer.done.wait(timeout: .now() + 0.5) == .timedOut {
                let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
                if let late {
                    if elapsed > late.elapsed + 5 { break }  // cancelled; its completion is not waited for longer
                    continue
                }
                let received = transfer.received
                if request.deadline.isBehind(received: received, elapsed: elapsed) {
                    late = (received, elapsed)
                    transfer.stop(task)
                }
            }
            task.cancel()
            session.invalidateAndCancel()
            // The session keeps its delegate a while longer; the caller's closure must not outlive this call.
            transfer.release()
            if let late { throw request.deadline.tooSlow(url, received: late.received, elapsed: late.elapsed) }
            if transfer.refused { return transfer.status }
            if transfer.stopped { throw DirectoryError(.io, "\(url): transfer stopped") }
            if let error = transfer.error {
                throw DirectoryError(.unreachable, "\(url): \(error.localizedDescription)")
            }
            return transfer.status
        }
    }
}

/// The delegate of one request: passes the body on as it arrives. Its state is touched by the
/// session's delegate queue and by the waiting caller, always under `lock`.
private final class Transfer: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private var body: ((Int, RawSpan) -> Bool)?
    private let lock = NSLock()
    let done = DispatchSemaphore(value: 0)
    private var _status = 0, _received = 0
    private var _stopped = false, _refused = false, _signalled = false
    private var _error: (any Error)?

    init(_ body: @escaping (Int, RawSpan) -> Bool) { self.body = body }

    private func locked<R>(_ f: () -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return f()
    }

    var status: Int { locked { _status } }
    var received: Int { locked { _received } }
    /// The body callback, or the deadline, stopped the transfer.
    var stopped: Bool { locked { _stopped } }
    /// The status was outside 200–299: the task was cancelled at the response.
    var refused: Bool { locked { _refused } }
    var error: (any Error)? { locked { _error } }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        let refuse = !(200..<300).contains(status)
        locked {
            _status = status
            _refused = refuse
        }
        completionHandler(refuse ? .cancel : .allow)
        if refuse { finish() }
    }

    /// Wakes the caller, once: at a refused status, or when the task completes.
    private func finish() {
        let first = locked { () -> Bool in
            defer { _signalled = true }
            return !_signalled
        }
        if first { done.signal() }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        lock.lock()
        defer { lock.unlock() }
        guard !_stopped, !_refused, let body else { return }
        _received += data.count
        if !data.withUnsafeBytes({ body(_status, RawSpan(_unsafeBytes: $0)) }) {
            _stopped = true
            dataTask.cancel()
        }
    }

    /// Stops the transfer from outside (a missed deadline).
    func stop(_ task: URLSessionTask) {
        locked { _stopped = true }
        task.cancel()
    }

    func release() {
        locked { body = nil }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        locked {
            if !_stopped && !_refused { _error = error }
        }
        finish()
    }
}
