import CHTTPServer
package import CallerIDQuery
import CallerID
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// `lookup serve`'s HTTP server: libmicrohttpd, opened with dlopen when the server starts
// (Sources/CHTTPServer), with the request deadline, body limit and counters of that layer. This
// file turns its C callbacks into calls of an `HTTPHandler` and its answers into C calls; what
// is answered is decided in ServeAPI.swift.

/// A request whose headers are complete.
package struct IncomingRequest {
    package enum Method: Equatable {
        case get, head, post
        case other(String)
    }

    package let method: Method
    /// Percent-decoded, without the query; `%00` and escapes that are not two hex digits stay
    /// as written.
    package let path: String
    /// The decoded `country` query argument.
    package let country: String?
    package let contentType: String?
    /// The declared body length (nil: none declared).
    package let contentLength: Int?
    /// The query as sent (the text after `?`, undecoded); nil when the target has none.
    package var query: String? = nil
    /// The `Authorization` header.
    package var authorization: String? = nil
    /// The `X-Forwarded-For` header (a proxy's word, believed only with `--trust-proxy`).
    package var forwardedFor: String? = nil
    /// The peer's address ("" when unknown, or when the server was not asked for it:
    /// ``HTTPServer/Settings/clientAddresses``).
    package var client: String = ""

    package init(method: Method, path: String, country: String?, contentType: String?, contentLength: Int?,
                 query: String? = nil, authorization: String? = nil, forwardedFor: String? = nil, client: String = "") {
        (self.method, self.path, self.country, self.contentType, self.contentLength) = (method, path, country, contentType, contentLength)
        (self.query, self.authorization, self.forwardedFor, self.client) = (query, authorization, forwardedFor, client)
    }

    /// The first query argument called `name` (its case ignored, as the `country` argument's),
    /// decoded: `+` a space, then percent escapes; nil when absent, "" when given without a
    /// value. An argument whose escapes do not decode to UTF-8 is taken as absent.
    package func argument(_ name: String) -> String? {
        guard let query else { return nil }
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard Self.decoded(parts[0])?.lowercased() == name.lowercased() else { continue }
            return parts.count > 1 ? Self.decoded(parts[1]) : ""
        }
        return nil
    }

    private static func decoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var i = text.utf8.startIndex
        let utf8 = text.utf8
        while i < utf8.endIndex {
            let b = utf8[i]
            if b == UInt8(ascii: "%"), let j = utf8.index(i, offsetBy: 2, limitedBy: utf8.index(before: utf8.endIndex)),
               let hi = hexDigitValue(utf8[utf8.index(after: i)]), let lo = hexDigitValue(utf8[j]) {
                bytes.append(hi << 4 | lo)
                i = utf8.index(after: j)
                continue
            }
            bytes.append(b == UInt8(ascii: "+") ? UInt8(ascii: " ") : b)
            i = utf8.index(after: i)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

/// The value of a hex digit (either case), nil for another byte: percent escapes.
func hexDigitValue(_ b: UInt8) -> UInt8? {
    switch b {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): b - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): b - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): b - UInt8(ascii: "A") + 10
    default: nil
    }
}

/// A request that ended, for the access log.
package struct HTTPCompletion {
    package let method: String
    /// The request target as sent (with its query); nil unless the server keeps them.
    package let uri: String?
    package let client: String
    /// Who asked, as the handler named them (``HTTPExchange/setLabel(_:)``): an API key's name.
    package var label: String? = nil
    /// The status sent (0: none).
    package let status: Int
    package let endpoint: Int
    /// False when the client went away or the connection was cut before the answer was whole.
    package let completed: Bool
    package let bodyBytes: UInt64
    package let responseBytes: UInt64
    package let nanoseconds: UInt64
}

/// Receives an accepted request body, piece by piece, then answers it.
package protocol HTTPBodySink: AnyObject {
    func append(_ bytes: UnsafeRawBufferPointer)
    /// The whole body arrived: answer through `exchange`.
    func end(_ exchange: HTTPExchange)
}

/// A streamed answer body (chunked transfer), produced as the connection can take it.
package protocol HTTPBodyStream: AnyObject {
    /// Appends the next bytes to `out`; false at the end (nothing appended).
    func produce(into out: inout [UInt8]) -> Bool
}

/// What answers requests. Called on the server's threads, several requests at once.
package protocol HTTPHandler: AnyObject, Sendable {
    /// Answer with one of `exchange`'s `respond` methods, or accept a body
    /// (``HTTPExchange/acceptBody(endpoint:into:)``); doing neither closes the connection.
    func request(_ request: IncomingRequest, _ exchange: HTTPExchange)
    /// The HTTP layer refuses a request itself (`status`, `reason`: one sentence): answer it
    /// under endpoint 0, with a body as the route of `path` words its errors.
    func refuse(path: String, status: Int, reason: String, _ exchange: HTTPExchange)
    func completed(_ completion: HTTPCompletion)
}

/// The request being answered; valid only during the handler call that received it.
package struct HTTPExchange {
    fileprivate let raw: OpaquePointer

    /// Answers with `body`. `header`: one more header. False when the connection is gone.
    @discardableResult
    package func respond(_ status: Int, endpoint: Int, contentType: String?, body: UnsafeRawBufferPointer,
                 header: (name: String, value: String)? = nil) -> Bool {
        cid_respond(raw, Int32(endpoint), UInt32(status), contentType, body.baseAddress, body.count,
                    header?.name, header?.value) == 0
    }

    @discardableResult
    package func respond(_ status: Int, endpoint: Int, contentType: String?, text: String,
                 header: (name: String, value: String)? = nil) -> Bool {
        var text = text
        return text.withUTF8 { respond(status, endpoint: endpoint, contentType: contentType, body: UnsafeRawBufferPointer($0), header: header) }
    }

    /// Answers with a body of unknown length, read from `stream` as the connection takes it.
    @discardableResult
    package func respond(_ status: Int, endpoint: Int, contentType: String, stream: any HTTPBodyStream) -> Bool {
        let box = Unmanaged.passRetained(StreamBox(stream) as AnyObject).toOpaque()
        return cid_respond_stream(raw, Int32(endpoint), UInt32(status), contentType, box) == 0
    }

    /// Takes the request's body into `sink`, which answers once it has arrived whole.
    package func acceptBody(endpoint: Int, into sink: any HTTPBodySink) {
        cid_accept_body(raw, Int32(endpoint), Unmanaged.passRetained(SinkBox(sink) as AnyObject).toOpaque())
    }

    /// Names who asked (an API key's name) for the request's completion (the access log).
    package func setLabel(_ label: String) { cid_exchange_set_label(raw, label) }

    /// The counters of the server answering.
    package var counters: HTTPCounters { HTTPCounters(raw: cid_exchange_server(raw)) }
}

/// The counters of a running server, read without stopping it.
package struct HTTPCounters {
    fileprivate let raw: OpaquePointer

    /// Requests answered for `endpoint` with `status`.
    package func requests(endpoint: Int, status: Int) -> UInt64 { UInt64(cid_server_requests(raw, Int32(endpoint), UInt32(status))) }

    /// Requests whose latency fell in bucket `b` of ``HTTPServer/Settings/latencyBuckets`` (the
    /// one past the last bound: slower than all); not cumulative.
    package func bucket(_ b: Int) -> UInt64 { UInt64(cid_server_bucket(raw, Int32(b))) }

    package var gauges: HTTPGauges {
        var g = cid_server_gauges()
        cid_server_read_gauges(raw, &g)
        return HTTPGauges(latencyCount: UInt64(g.latency_count), latencyNanoseconds: UInt64(g.latency_sum_ns),
                          connectionsOpen: UInt64(g.connections_open), connectionsAccepted: UInt64(g.connections_accepted),
                          timedOut: UInt64(g.deadline_closed), inFlight: UInt64(g.in_flight))
    }
}

package struct HTTPGauges {
    /// Requests timed, and their time in all.
    package var latencyCount: UInt64
    package var latencyNanoseconds: UInt64
    package var connectionsOpen: UInt64
    package var connectionsAccepted: UInt64
    /// Connections closed because a request did not arrive whole in time.
    package var timedOut: UInt64
    /// Requests being received or answered.
    package var inFlight: UInt64
}

private final class StreamBox {
    package let stream: any HTTPBodyStream
    package var pending: [UInt8] = []
    package var offset = 0

    package init(_ stream: any HTTPBodyStream) { self.stream = stream }

    /// Copies the next bytes into `buffer`: their count, or -1 at the end.
    package func read(into buffer: UnsafeMutableRawPointer, capacity: Int) -> Int {
        if offset == pending.count {
            pending.removeAll(keepingCapacity: true)
            offset = 0
            guard stream.produce(into: &pending), !pending.isEmpty else { return -1 }
        }
        let n = min(capacity, pending.count - offset)
        pending.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress! + offset, byteCount: n) }
        offset += n
        return n
    }
}

private final class SinkBox {
    package let sink: any HTTPBodySink
    package init(_ sink: any HTTPBodySink) { self.sink = sink }
}

/// The handler, kept alive by the server while it runs (its C context).
private final class ServerContext {
    package let handler: any HTTPHandler
    package init(_ handler: any HTTPHandler) { self.handler = handler }
}

private func context(_ p: UnsafeMutableRawPointer?) -> ServerContext {
    Unmanaged<ServerContext>.fromOpaque(p!).takeUnretainedValue()
}

private func string(_ p: UnsafePointer<CChar>?) -> String? { p.map { String(cString: $0) } }

private let handlers = cid_handlers(
    request: { ctx, x, r in
        guard let x, let r else { return }
        let head = r.pointee
        let method: IncomingRequest.Method = switch Int(head.method) {
        case Int(CID_METHOD_GET): .get
        case Int(CID_METHOD_HEAD): .head
        case Int(CID_METHOD_POST): .post
        default: .other(string(head.method_name) ?? "")
        }
        let request = IncomingRequest(method: method, path: string(head.path) ?? "", country: string(head.country),
                                  contentType: string(head.content_type),
                                  contentLength: head.content_length >= 0 ? Int(clamping: head.content_length) : nil,
                                  query: string(head.query), authorization: string(head.authorization),
                                  forwardedFor: string(head.forwarded_for), client: string(head.client) ?? "")
        context(ctx).handler.request(request, HTTPExchange(raw: x))
    },
    refuse: { ctx, x, path, status, reason in
        guard let x else { return }
        context(ctx).handler.refuse(path: string(path) ?? "", status: Int(status), reason: string(reason) ?? "", HTTPExchange(raw: x))
    },
    body: { _, body, bytes, size in
        guard let body else { return }
        let box = Unmanaged<AnyObject>.fromOpaque(body).takeUnretainedValue() as! SinkBox
        box.sink.append(UnsafeRawBufferPointer(start: bytes, count: size))
    },
    body_end: { _, x, body in
        guard let x, let body else { return }
        let box = Unmanaged<AnyObject>.fromOpaque(body).takeUnretainedValue() as! SinkBox
        box.sink.end(HTTPExchange(raw: x))
    },
    read: { _, stream, buffer, capacity in
        guard let stream, let buffer else { return -2 }
        let box = Unmanaged<AnyObject>.fromOpaque(stream).takeUnretainedValue() as! StreamBox
        return box.read(into: buffer, capacity: capacity)
    },
    release: { _, state in
        guard let state else { return }
        Unmanaged<AnyObject>.fromOpaque(state).release()
    },
    completed: { ctx, c in
        guard let c else { return }
        let record = c.pointee
        context(ctx).handler.completed(HTTPCompletion(
            method: string(record.method) ?? "", uri: string(record.uri), client: string(record.client) ?? "",
            label: string(record.label), status: Int(record.status), endpoint: Int(record.endpoint), completed: record.completed != 0,
            bodyBytes: UInt64(record.body_bytes), responseBytes: UInt64(record.response_bytes),
            nanoseconds: UInt64(record.nanoseconds)))
    })

/// A running server (libmicrohttpd's threads) on a listening socket.
///
/// Invariant: `raw` is the started server until ``stop()``, which is called once; `context`
/// holds the handler retained until then.
package final class HTTPServer: @unchecked Sendable {
    package struct Settings {
        package init() {}

        package var threads = 2
        package var maxConnections = 16_384
        /// Seconds a request may take to arrive whole (from its connection's opening, or from
        /// the answer before it on the connection); also how long a connection may stay idle.
        package var requestTimeout = 10.0
        package var maxHeaderBytes = 8192
        package var maxBodyBytes = 64 << 20
        /// Hand the request target and the client's address to ``HTTPHandler/completed(_:)``.
        package var keepURIs = false
        /// Hand each request its peer's address (per-client rate limits); off, it is "".
        package var clientAddresses = false
        /// HTTPS: the PEM certificate chain and private key (nil: plain HTTP).
        package var tls: (certificate: String, key: String)? = nil
        /// Latency histogram upper bounds, seconds, ascending (at most 24).
        package var latencyBuckets: [Double] = []
    }

    private let raw: OpaquePointer
    private let context: Unmanaged<ServerContext>
    private var stopped = false

    /// libmicrohttpd's version, loading it; nil with ``libraryError`` when it cannot be loaded.
    package static var libraryVersion: String? { cid_server_library_version().map { String(cString: $0) } }
    package static var libraryError: String { String(cString: cid_server_library_error()) }

    /// A listening socket on `host` (numeric address or name; "" for all) and `port` (0: any
    /// free one), and the port it got.
    package static func listen(host: String, port: Int, backlog: Int = 1024) throws(QueryError) -> (socket: Int32, port: Int) {
        var error = [CChar](repeating: 0, count: 512)
        var bound: Int32 = 0
        var code: Int32 = 0
        let fd = cid_listen(host, Int32(port), Int32(backlog), &bound, &error, error.count, &code)
        guard fd >= 0 else {
            let message = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw QueryError(.cannotServe, code == 0 ? message : "\(message): \(Platform.errorText(code))")
        }
        return (fd, Int(bound))
    }

    /// Starts serving on `socket` (which the server then owns and closes).
    package init(socket: Int32, settings: Settings, handler: any HTTPHandler) throws(QueryError) {
        var config = cid_server_config()
        config.listen_fd = socket
        config.threads = UInt32(max(1, settings.threads))
        config.max_connections = UInt32(clamping: settings.maxConnections)
        config.request_timeout_ms = UInt32(clamping: Int((settings.requestTimeout * 1000).rounded(.up)))
        config.max_header_bytes = settings.maxHeaderBytes
        config.max_body_bytes = UInt64(settings.maxBodyBytes)
        config.keep_uris = settings.keepURIs ? 1 : 0
        config.want_client = settings.clientAddresses ? 1 : 0
        let bounds = settings.latencyBuckets.prefix(Int(CID_MAX_BUCKETS))
        withUnsafeMutableBytes(of: &config.bucket_bounds) { raw in
            let slots = raw.bindMemory(to: UInt64.self)
            for (i, seconds) in bounds.enumerated() { slots[i] = UInt64(seconds * 1e9) }
        }
        config.bucket_count = Int32(bounds.count)
        config.handlers = handlers
        context = Unmanaged.passRetained(ServerContext(handler))
        config.context = context.toOpaque()
        var error = [CChar](repeating: 0, count: 512)
        // The C layer copies the PEM text at start.
        let started: OpaquePointer? = if let tls = settings.tls {
            tls.certificate.withCString { cert in
                tls.key.withCString { key in
                    config.tls_cert = cert
                    config.tls_key = key
                    return cid_server_start(&config, &error, error.count)
                }
            }
        } else {
            cid_server_start(&config, &error, error.count)
        }
        guard let started else {
            context.release()
            throw QueryError(.cannotServe, String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        raw = started
    }

    /// Whether the libmicrohttpd installed speaks TLS (Debian builds it with GnuTLS).
    package static var supportsTLS: Bool { cid_server_supports_tls() != 0 }

    /// New connections are served with `certificate` and `key` (PEM) from now, without one
    /// refused; connections open keep the pair they began with until they close. On failure
    /// the old pair stays in use.
    package func reloadTLS(certificate: String, key: String) throws(QueryError) {
        var error = [CChar](repeating: 0, count: 512)
        let status = cid_server_reload_tls(raw, certificate, key, &error, error.count)
        guard status == 0 else {
            throw QueryError(.cannotServe, String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
    }

    /// Stops accepting connections; every answer from now on closes its connection.
    package func drain() { cid_server_drain(raw) }

    /// The requests being received or answered now.
    package var inFlight: UInt64 { counters.gauges.inFlight }

    package var counters: HTTPCounters { HTTPCounters(raw: raw) }

    /// Closes every connection and stops the threads.
    package func stop() {
        guard !stopped else { return }
        stopped = true
        cid_server_stop(raw)
        context.release()
    }
}
