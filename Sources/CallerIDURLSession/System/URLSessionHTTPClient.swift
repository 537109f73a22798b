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
public struct URLSessionHTTPClient: HTTPClient {
    /// Seconds without progress after which a request fails.
    public var timeout: Double

    public init(timeout: Double = 30) {
        self.timeout = timeout
    }

    public func get(_ url: String, offset: Int, body: (_ status: Int, _ bytes: UnsafeRawBufferPointer) -> Bool) throws(DirectoryError) -> Int {
        guard let u = URL(string: url) else { throw DirectoryError(.invalidArgument, "\(url): not a URL") }
        var request = URLRequest(url: u, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout)
        if offset > 0 { request.setValue("bytes=\(offset)-", forHTTPHeaderField: "Range") }
        return try withoutActuallyEscaping(body) { (escapable) throws(DirectoryError) -> Int in
            let transfer = Transfer(escapable)
            let session = URLSession(configuration: .ephemeral, delegate: transfer, delegateQueue: nil)
            session.dataTask(with: request).resume()
            transfer.done.wait()
            session.invalidateAndCancel()
            // The session keeps its delegate a while longer; the caller's closure must not outlive this call.
            transfer.release()
            if transfer.stopped { throw DirectoryError(.io, "\(url): transfer stopped") }
            if let error = transfer.error {
                throw DirectoryError(.unreachable, "\(url): \(error.localizedDescription)")
            }
            return transfer.status
        }
    }
}

/// The delegate of one request: passes the body on as it arrives. Its state is touched by the
/// session's serial delegate queue only, and read after `done` is signalled.
private final class Transfer: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private var body: ((Int, UnsafeRawBufferPointer) -> Bool)?
    private let lock = NSLock()
    let done = DispatchSemaphore(value: 0)
    var status = 0
    var stopped = false
    var error: (any Error)?

    init(_ body: @escaping (Int, UnsafeRawBufferPointer) -> Bool) { self.body = body }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        status = (response as? HTTPURLResponse)?.statusCode ?? 0
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped, let body else { return }
        if !data.withUnsafeBytes({ body(status, $0) }) {
            stopped = true
            dataTask.cancel()
        }
    }

    func release() {
        lock.lock()
        body = nil
        lock.unlock()
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        if !stopped { self.error = error }
        done.signal()
    }
}
