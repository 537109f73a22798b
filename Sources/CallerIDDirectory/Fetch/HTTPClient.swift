import CallerID

/// What ``DirectoryFetcher`` needs from HTTP: one GET, streamed, within a deadline. The package
/// ships two: `URLSessionHTTPClient` (module CallerIDURLSession: Apple platforms, and Linux
/// apps that link FoundationNetworking) and the `lookup` tool's libcurl client (loaded with
/// dlopen when a fetch runs). An app may pass its own; it must keep the rules below, or a
/// hostile server can hold a fetch for ever.
public protocol HTTPClient: Sendable {
    /// GETs `request.url`, asking for `Range: bytes=offset-` when `request.offset` > 0.
    ///
    /// - A status outside 200–299 (after redirects) ends the transfer at the status line: the
    ///   body is not read, `body` is not called, and the status is returned.
    /// - A 2xx body is passed to `body` in pieces, each with the status (206 when the range
    ///   was honoured, 200 when the server sent the whole file instead); `body` returns false
    ///   to stop the transfer. A piece is lent for the call only (a `RawSpan`).
    /// - The transfer keeps to ``HTTPRequest/deadline``: the client checks
    ///   ``TransferDeadline/isBehind(received:elapsed:)`` at least once a second, whether or
    ///   not bytes arrive, and stops with ``TransferDeadline/tooSlow(_:received:elapsed:)``'s
    ///   error when it is behind; it never runs past ``HTTPRequest/seconds``.
    ///
    /// Returns the HTTP status.
    /// - Throws: ``DirectoryError`` `unreachable` when no response arrived, the connection broke
    ///   before the body was complete, or the deadline passed; any error after `body` returned
    ///   false.
    func get(_ request: HTTPRequest, body: (_ status: Int, _ bytes: RawSpan) -> Bool) throws(DirectoryError) -> Int
}

/// One GET of a fetch: where, from which offset, how many body bytes it can be worth at most,
/// and how slow it may be.
public struct HTTPRequest: Sendable, Equatable {
    public var url: String
    /// Ask for the body from this byte on (`Range: bytes=offset-`); 0 for the whole file.
    public var offset: Int
    /// The most body bytes worth receiving: what the signed manifest says is left of a file,
    /// or the size limit of the manifest and its signature. The deadline grows with it.
    public var maxBytes: Int
    public var deadline: TransferDeadline

    public init(url: String, offset: Int = 0, maxBytes: Int, deadline: TransferDeadline = TransferDeadline()) {
        self.url = url
        self.offset = offset
        self.maxBytes = maxBytes
        self.deadline = deadline
    }

    /// The longest the transfer may last, in seconds: ``TransferDeadline/seconds(forBytes:)``
    /// of ``maxBytes``.
    public var seconds: Double { deadline.seconds(forBytes: maxBytes) }
}

/// How slow a transfer may be: after ``grace`` seconds (connecting, the first bytes) it must
/// have averaged at least ``minimumRate`` bytes per second since the grace ended. A body of N
/// bytes therefore ends within `grace + N / minimumRate` seconds, and a server that drips or
/// stalls is dropped soon after the grace, whatever size it announces.
public struct TransferDeadline: Sendable, Equatable {
    /// Seconds before the rate is checked.
    public var grace: Double
    /// Bytes per second, averaged from the end of the grace.
    public var minimumRate: Int

    /// The defaults: 30 s of grace, then 8 KiB/s (64 kbit/s, a poor mobile link); a 17 MB
    /// database may take 35 minutes, a dripping server is dropped after about half a minute.
    public init(grace: Double = 30, minimumRate: Int = 8 << 10) {
        self.grace = grace
        self.minimumRate = minimumRate
    }

    /// The longest a body of `bytes` may take, in seconds.
    public func seconds(forBytes bytes: Int) -> Double {
        grace + Double(max(0, bytes)) / Double(max(1, minimumRate))
    }

    /// True when `received` body bytes after `elapsed` seconds are fewer than the schedule asks.
    public func isBehind(received: Int, elapsed: Double) -> Bool {
        elapsed > grace && Double(received) < Double(max(1, minimumRate)) * (elapsed - grace)
    }

    /// The error a transfer that fell behind ends with (`unreachable`, exit 69).
    public func tooSlow(_ url: String, received: Int, elapsed: Double) -> DirectoryError {
        let seconds = (elapsed * 10).rounded() / 10
        return DirectoryError(.unreachable, """
            \(url): \(received) bytes in \(seconds) s, slower than \(minimumRate) bytes/s after a \(grace) s grace \
            (a stalled or dripping server; --min-rate and --grace change the limits)
            """)
    }
}
