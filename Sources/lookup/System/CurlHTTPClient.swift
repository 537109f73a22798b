import CHTTPLoader
import CallerIDDirectory

/// The `lookup` tool's HTTP client: libcurl, loaded with dlopen at the first request
/// (Sources/CHTTPLoader). The tool's binary links neither libcurl nor FoundationNetworking, so
/// a one-number lookup does not load them at start-up; `lookup fetch` needs libcurl4 installed.
struct CurlHTTPClient: HTTPClient {
    /// Seconds to wait for a connection, and the longest stall (no byte received) tolerated.
    var connectTimeout = 20
    var stallTimeout = 30

    func get(_ url: String, offset: Int, body: (_ status: Int, _ bytes: UnsafeRawBufferPointer) -> Bool) throws(DirectoryError) -> Int {
        try withoutActuallyEscaping(body) { (escapable) throws(DirectoryError) -> Int in
            final class Box {
                let body: (Int, UnsafeRawBufferPointer) -> Bool
                init(_ body: @escaping (Int, UnsafeRawBufferPointer) -> Bool) { self.body = body }
            }
            let box = Box(escapable)
            var status = 0
            var message = [CChar](repeating: 0, count: 512)
            let context = Unmanaged.passUnretained(box).toOpaque()
            let rc = withExtendedLifetime(box) {
                cid_http_get(url, Int64(offset), connectTimeout, stallTimeout, { data, length, status, context in
                    let box = Unmanaged<Box>.fromOpaque(context!).takeUnretainedValue()
                    return box.body(Int(status), UnsafeRawBufferPointer(start: data, count: length)) ? 0 : 1
                }, context, &status, &message, message.count)
            }
            let text = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            switch rc {
            case Int32(CID_HTTP_OK): return Int(status)
            case Int32(CID_HTTP_ABORTED): throw DirectoryError(.io, "\(url): transfer stopped")
            case Int32(CID_HTTP_NO_LIBRARY): throw DirectoryError(.unreachable, "cannot fetch \(url): \(text)")
            default: throw DirectoryError(.unreachable, "\(url): \(text.isEmpty ? "transfer failed" : text)")
            }
        }
    }
}
