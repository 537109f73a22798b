import CallerID
import CHTTPLoader
import CallerIDDirectory
import Dispatch

/// The `lookup` tool's HTTP client: libcurl, loaded with dlopen at the first request
/// (Sources/CHTTPLoader). The tool's binary links neither libcurl nor FoundationNetworking, so
/// a one-number lookup does not load them at start-up; `lookup fetch` needs libcurl4 installed.
///
/// Keeps ``HTTPClient``'s rules: libcurl stops at a status of 400 or more (FAILONERROR), its
/// progress callback checks the request's deadline about once a second, and the request's
/// ``HTTPRequest/seconds`` is libcurl's overall timeout.
struct CurlHTTPClient: HTTPClient {
    /// Seconds to wait for a connection (within the deadline's grace, which it never exceeds).
    var connectTimeout = 20

    func get(_ request: HTTPRequest, body: (_ status: Int, _ bytes: RawSpan) -> Bool) throws(DirectoryError) -> Int {
        try withoutActuallyEscaping(body) { (escapable) throws(DirectoryError) -> Int in
            final class Box {
                let body: (Int, RawSpan) -> Bool
                let deadline: TransferDeadline
                let started = DispatchTime.now().uptimeNanoseconds
                var late: (received: Int, elapsed: Double)? = nil
                init(_ body: @escaping (Int, RawSpan) -> Bool, _ deadline: TransferDeadline) {
                    self.body = body
                    self.deadline = deadline
                }
                /// False (stop) once the transfer is behind its deadline's schedule.
                func onTime(_ received: Int) -> Bool {
                    let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
                    guard deadline.isBehind(received: received, elapsed: elapsed) else { return true }
                    late = (received, elapsed)
                    return false
                }
            }
            let box = Box(escapable, request.deadline)
            var status = 0
            var message = [CChar](repeating: 0, count: 512)
            let context = Unmanaged.passUnretained(box).toOpaque()
            // The overall limit: the deadline for the largest body worth receiving, and a second
            // for the last tick.
            let timeoutMS = Int(min(request.seconds + 1, Double(Int32.max) / 1000) * 1000)
            let connect = max(1, min(connectTimeout, Int(request.deadline.grace.rounded(.up))))
            let rc = withExtendedLifetime(box) {
                cid_http_get(request.url, Int64(request.offset), connect, timeoutMS, { data, length, status, context in
                    let box = Unmanaged<Box>.fromOpaque(context!).takeUnretainedValue()
                    return box.body(Int(status), RawSpan(_unsafeBytes: UnsafeRawBufferPointer(start: data, count: length))) ? 0 : 1
                }, { received, context in
                    let box = Unmanaged<Box>.fromOpaque(context!).takeUnretainedValue()
                    return box.onTime(Int(received)) ? 0 : 1
                }, context, &status, &message, message.count)
            }
            let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            switch rc {
            case Int32(CID_HTTP_OK): return Int(status)
            case Int32(CID_HTTP_ABORTED):
                if let late = box.late { throw request.deadline.tooSlow(request.url, received: late.received, elapsed: late.elapsed) }
                throw DirectoryError(.io, "\(request.url): transfer stopped")
            case Int32(CID_HTTP_NO_LIBRARY): throw DirectoryError(.unreachable, "cannot fetch \(request.url): \(text)")
            default: throw DirectoryError(.unreachable, "\(request.url): \(text.isEmpty ? "transfer failed" : text)")
            }
        }
    }
}
