/// What ``DirectoryFetcher`` needs from HTTP: one GET, streamed. The package ships two:
/// `URLSessionHTTPClient` (module CallerIDURLSession: Apple platforms, and Linux apps that
/// link FoundationNetworking) and the `lookup` tool's libcurl client (loaded with dlopen when
/// a fetch runs). An app may pass its own.
public protocol HTTPClient: Sendable {
    /// GETs `url`, asking for `Range: bytes=offset-` when `offset` > 0. The body is passed to
    /// `body` in pieces, each with the response's HTTP status (206 when the range was honoured,
    /// 200 when the server sent the whole file instead); `body` returns false to stop the
    /// transfer. Returns the HTTP status.
    /// - Throws: ``DirectoryError`` `unreachable` when no response arrived or the connection
    ///   broke before the body was complete; any error after `body` returned false.
    func get(_ url: String, offset: Int, body: (_ status: Int, _ bytes: UnsafeRawBufferPointer) -> Bool) throws(DirectoryError) -> Int
}
