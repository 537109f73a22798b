import Foundation
package import CallerID
package import CallerIDQuery
import CallerIDDirectory
import Dispatch

// Who may ask `lookup serve` what, and how often (docs/SERVE.md, "On the open network"): API
// keys stored as hashes, the permissions each key has, and token buckets per key and per client
// address in memory of a fixed size.

/// What a key may do.
package struct Permissions: OptionSet, Sendable, Hashable {
    package let rawValue: Int
    package init(rawValue: Int) { self.rawValue = rawValue }

    /// Lookups: `GET /v1/lookup/N`, `POST /v1/lookup`, `GET /v1/cnam/N`, `GET /v3/phone/N`.
    package static let lookup = Permissions(rawValue: 1)
    /// Report intake: `POST /v1/reports`.
    package static let report = Permissions(rawValue: 2)
    /// `GET /metrics`.
    package static let metrics = Permissions(rawValue: 4)

    package static let names: [(String, Permissions)] = [("lookup", .lookup), ("report", .report), ("metrics", .metrics)]

    /// `lookup,report`; nil when a name is unknown or none is given.
    package init?(names text: String) {
        var set: Permissions = []
        for name in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard let p = Self.names.first(where: { $0.0 == name.lowercased() })?.1 else { return nil }
            set.insert(p)
        }
        guard !set.isEmpty else { return nil }
        self = set
    }

    package var names: String { Self.names.filter { contains($0.1) }.map(\.0).joined(separator: ",") }
}

/// A rate: `rate` requests a second on average, `burst` at once (a token bucket).
package struct RateLimit: Sendable, Equatable {
    package var perSecond: Double
    package var burst: Double

    package init(perSecond: Double, burst: Double) {
        self.perSecond = perSecond
        self.burst = burst
    }

    /// `50/s`, `3000/min`, `100000/h` (or `/m`, `/hour`…): requests a second; nil when malformed.
    package static func perSecond(_ text: String) -> Double? {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let n = Double(parts[0]), n.isFinite, n > 0 else { return nil }
        switch parts[1].lowercased() {
        case "s", "sec", "second": return n
        case "m", "min", "minute": return n / 60
        case "h", "hour": return n / 3600
        default: return nil
        }
    }
}

/// One API key of a keys file: its name (shown in the access log), the SHA-256 of its secret,
/// what it may do, and its own rate (nil: the server's `--rate`).
package struct APIKey: Sendable, Equatable {
    package let name: String
    /// 64 lowercase hex digits.
    package let hash: String
    package let may: Permissions
    package let rate: RateLimit?
}

/// The keys file of `lookup serve --keys FILE`: one key a line,
///
///     NAME  sha256:HEX  lookup,report,metrics  [rate=50/s] [burst=100]
///
/// `#` begins a comment. The file never holds a usable secret: only the SHA-256 of each key. A
/// key is 32 random bytes (`cid_` and 43 base64url characters), far beyond guessing, so one
/// SHA-256 (not a slow password hash) is enough to keep the file from being a key list.
package struct APIKeys: Sendable {
    package let keys: [APIKey]
    /// Each key's index by its SHA-256 (read from the file's hex once).
    private let byDigest: [Digest: Int]

    /// A SHA-256 as four words: what a request's key is looked up by (no hex, no String).
    private struct Digest: Hashable {
        var a: UInt64, b: UInt64, c: UInt64, d: UInt64

        init(_ bytes: [UInt8]) {
            func word(_ i: Int) -> UInt64 { bytes[i..<(i + 8)].reduce(0) { $0 << 8 | UInt64($1) } }
            (a, b, c, d) = (word(0), word(8), word(16), word(24))
        }

        /// 64 lowercase hex digits (checked by the file's reader).
        init(hex: String) {
            let digits = Array(hex.utf8).map { $0 <= 0x39 ? $0 - 0x30 : $0 - 0x61 + 10 }
            self.init(stride(from: 0, to: 64, by: 2).map { digits[$0] << 4 | digits[$0 + 1] })
        }
    }

    package init(_ keys: [APIKey]) {
        self.keys = keys
        var byDigest: [Digest: Int] = [:]
        for (i, k) in keys.enumerated() { byDigest[Digest(hex: k.hash)] = i }
        self.byDigest = byDigest
    }

    /// Reads a keys file; a bad line is refused with the file, line and reason.
    package static func read(_ path: String) throws(QueryError) -> APIKeys {
        guard let data = FileManager.default.contents(atPath: path) else {
            let missing = !FileManager.default.fileExists(atPath: path)
            throw QueryError(code: .init(missing ? .fileNotFound : .io), message: "\(path): cannot read the keys file", underlying: nil)
        }
        return try parse(String(decoding: data, as: UTF8.self), path: path)
    }

    package static func parse(_ text: String, path: String) throws(QueryError) -> APIKeys {
        var keys: [APIKey] = []
        for (i, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0]
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }).map(String.init)
            if fields.isEmpty { continue }
            func bad(_ why: String) -> QueryError { QueryError(code: .invalidRequest, message: "\(path):\(i + 1): \(why)", underlying: nil) }
            guard fields.count >= 3 else { throw bad("a key line is NAME sha256:HEX PERMISSIONS [rate=R/s] [burst=N]") }
            let name = fields[0]
            guard nameProblem(name) == nil else { throw bad("key name '\(escapedForDisplay(name))': \(nameProblem(name)!)") }
            guard fields[1].hasPrefix("sha256:"), isHexDigest(String(fields[1].dropFirst(7))) else {
                throw bad("the key's hash must be sha256: and 64 lowercase hex digits")
            }
            guard let may = Permissions(names: fields[2]) else {
                throw bad("permissions '\(escapedForDisplay(fields[2]))': give lookup, report or metrics, joined by commas")
            }
            var rate: Double? = nil, burst: Double? = nil
            for option in fields.dropFirst(3) {
                if option.hasPrefix("rate=") {
                    guard let r = RateLimit.perSecond(String(option.dropFirst(5))) else { throw bad("rate= takes N/s, N/min or N/h") }
                    rate = r
                } else if option.hasPrefix("burst=") {
                    guard let b = Int(option.dropFirst(6)), b >= 1 else { throw bad("burst= takes a whole number of requests, at least 1") }
                    burst = Double(b)
                } else {
                    throw bad("unknown field '\(escapedForDisplay(option))' (rate=R/s and burst=N may follow the permissions)")
                }
            }
            guard burst == nil || rate != nil else { throw bad("burst= needs rate= on the same line") }
            let hash = String(fields[1].dropFirst(7))
            guard !keys.contains(where: { $0.name == name }) else { throw bad("key name '\(name)' is used twice") }
            guard !keys.contains(where: { $0.hash == hash }) else { throw bad("the same key is listed twice") }
            keys.append(APIKey(name: name, hash: hash, may: may,
                               rate: rate.map { RateLimit(perSecond: $0, burst: burst ?? max(1, ($0 * 2).rounded(.up))) }))
        }
        return APIKeys(keys)
    }

    /// Why `name` cannot name a key (it appears in logs and in the file's columns), nil if it can.
    package static func nameProblem(_ name: String) -> String? {
        guard !name.isEmpty, name.utf8.count <= 64 else { return "1 to 64 characters" }
        guard name.utf8.allSatisfy({ b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x2D || b == 0x5F || b == 0x2E
        }) else { return "letters, digits, '-', '_' and '.' only" }
        return nil
    }

    /// The key whose secret is `secret`, nil for none.
    package func key(secret: String) -> APIKey? {
        guard let digest = try? Crypto.sha256(Array(secret.utf8)) else { return nil }
        return byDigest[Digest(digest)].map { keys[$0] }
    }

    /// The hex SHA-256 of a secret, as the file holds it.
    package static func hash(_ secret: String) throws(QueryError) -> String {
        do { return hexString(try Crypto.sha256(Array(secret.utf8))) } catch { throw QueryError(passingOn: error) }
    }

    /// A new secret (`cid_` and 32 random bytes in base64url) and the keys-file line that lets
    /// it in; the secret is shown once and kept nowhere.
    package static func newKey(name: String, may: Permissions, rate: RateLimit? = nil) throws(QueryError) -> (secret: String, line: String) {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let secret = "cid_" + Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        var line = "\(name) sha256:\(try hash(secret)) \(may.names)"
        if let rate { line += " rate=\(formatted(rate.perSecond))/s burst=\(Int(rate.burst))" }
        return (secret, line)
    }

    /// Makes a key named `name` and appends its line to the keys file at `path` (made when
    /// missing; its lines are checked first, and a name is used once), written whole through
    /// the core's atomic writer. Returns the key, to be shown once.
    package static func add(name: String, may: Permissions, rate: RateLimit?, to path: String) throws(QueryError) -> String {
        var text = ""
        if FileManager.default.fileExists(atPath: path) {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw QueryError(code: .init(.io), message: "\(path): cannot read the keys file", underlying: nil)
            }
            text = String(decoding: data, as: UTF8.self)
            if try parse(text, path: path).keys.contains(where: { $0.name == name }) {
                throw QueryError(code: .invalidRequest, message: "\(path) already has a key named \(name)", underlying: nil)
            }
        }
        let made = try newKey(name: name, may: may, rate: rate)
        if !text.isEmpty && !text.hasSuffix("\n") { text += "\n" }
        text += made.line + "\n"
        do { try AtomicFileWriter.write(Array(text.utf8), to: path) } catch { throw QueryError(passingOn: error) }
        return made.secret
    }

    private static func formatted(_ x: Double) -> String { x == x.rounded() ? String(Int(x)) : String(x) }

    private static func isHexDigest(_ s: String) -> Bool {
        s.utf8.count == 64 && s.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }
}

/// Token buckets in memory of a fixed size, for any number of clients: 64 stripes of 1,024
/// slots (about 1.5 MB), each client's bucket in one of two slots its address hashes to. A
/// client not seen in either takes the slot of the two whose bucket is fuller (idle longest),
/// starting with a full bucket itself; so a flood of distinct addresses never grows memory and
/// at worst makes the limit forget an idle client, never refuse one wrongly.
package final class RateLimiter: Sendable {
    private struct Slot {
        var tag: UInt64 = 0
        var tokens: Double = 0
        var last: UInt64 = 0
    }

    package static let stripes = 64
    package static let slotsPerStripe = 1024
    private let table: [Locked<[Slot]>]
    package let limit: RateLimit
    private let now: @Sendable () -> UInt64

    /// - Parameter now: nanoseconds of a monotonic clock (a test's own clock).
    package init(_ limit: RateLimit, now: @escaping @Sendable () -> UInt64 = { DispatchTime.now().uptimeNanoseconds }) {
        self.limit = limit
        self.now = now
        table = (0..<Self.stripes).map { _ in Locked([Slot](repeating: Slot(), count: Self.slotsPerStripe)) }
    }

    /// Slots of the table: the most clients remembered at once.
    package var capacity: Int { Self.stripes * Self.slotsPerStripe }

    /// Bytes the table holds: fixed when the limiter is made.
    package var tableBytes: Int { table.reduce(0) { $0 + $1.withLock { $0.capacity } } * MemoryLayout<Slot>.stride }

    /// Clients remembered now (slots in use).
    package var remembered: Int { table.reduce(0) { $0 + $1.withLock { $0.reduce(0) { $0 + ($1.tag != 0 ? 1 : 0) } } } }

    /// Takes one token of client `id`'s bucket (`limit`, or the limiter's): nil when it had one,
    /// else the seconds until it will.
    package func take(_ id: UInt64, limit override: RateLimit? = nil) -> Double? {
        let limit = override ?? self.limit
        let tag = id | 1   // 0 marks an empty slot
        let stripe = Int(truncatingIfNeeded: (id >> 32) % UInt64(Self.stripes))
        let first = Int(truncatingIfNeeded: id % UInt64(Self.slotsPerStripe)) & ~1
        let t = now()
        return table[stripe].withLock { slots -> Double? in
            func refilled(_ s: Slot) -> Double {
                s.tag == 0 ? limit.burst : min(limit.burst, s.tokens + Double(t &- s.last) / 1e9 * limit.perSecond)
            }
            var i = first
            if slots[first].tag != tag {
                if slots[first + 1].tag == tag {
                    i = first + 1
                } else {
                    i = refilled(slots[first]) >= refilled(slots[first + 1]) ? first : first + 1
                    slots[i] = Slot(tag: tag, tokens: limit.burst, last: t)
                }
            }
            var tokens = refilled(slots[i])
            slots[i].last = t
            guard tokens >= 1 else {
                slots[i].tokens = tokens
                return (1 - tokens) / limit.perSecond
            }
            tokens -= 1
            slots[i].tokens = tokens
            return nil
        }
    }
}

/// The server's access rules, fixed for its life: the keys (nil: open to anyone who reaches
/// it), the rate per key and per client, and whether a proxy's `X-Forwarded-For` names clients.
package struct AccessSettings: Sendable {
    package init() {}
    package var keys: APIKeys? = nil
    /// `--rate`/`--burst`: per key (unless its line says otherwise) and per client address.
    package var rate: RateLimit? = nil
    /// `--trust-proxy`: the client is the last address of `X-Forwarded-For` (the one the proxy
    /// in front added), not the connection's peer.
    package var trustProxy = false
}

/// The PEM certificate chain and private key of `--tls-cert` and `--tls-key`, read at start and
/// on SIGHUP.
package enum TLSFiles {
    package static func read(certificate: String, key: String) throws(QueryError) -> (certificate: String, key: String) {
        func read(_ path: String, _ what: String, _ marker: String) throws(QueryError) -> String {
            guard let data = FileManager.default.contents(atPath: path) else {
                let missing = !FileManager.default.fileExists(atPath: path)
                throw QueryError(code: .init(missing ? .fileNotFound : .io), message: "\(path): cannot read the \(what)", underlying: nil)
            }
            let text = String(decoding: data, as: UTF8.self)
            guard text.contains("-----BEGIN ") && text.contains(marker) else {
                throw QueryError(code: .init(.invalidInput), message: "\(path): not a PEM \(what) (no '-----BEGIN …\(marker)' line)", underlying: nil)
            }
            return text
        }
        return (try read(certificate, "certificate", "CERTIFICATE-----"), try read(key, "private key", "PRIVATE KEY-----"))
    }
}

/// Why a request is refused before it is answered.
package enum AccessRefusal: Error, Equatable {
    /// No key, or one the file does not list (401).
    case unauthorized(String)
    /// A key without the permission (403).
    case forbidden(String)
    /// Over the rate: retry after so many seconds (429).
    case limited(seconds: Int, byKey: Bool)
}

/// Decides, request by request, who is asking and whether they may.
package final class AccessControl: Sendable {
    package let settings: AccessSettings
    /// The keys in force: the settings' at start, the keys file's after each ``replaceKeys(_:)``.
    private let keys: Locked<APIKeys?>
    private let clients: RateLimiter?
    /// Each key's bucket (its line's rate, or the server's); each take says which.
    private let keyBuckets: RateLimiter?
    private let refusals = Locked<(key: Int, client: Int)>((0, 0))

    package init(_ settings: AccessSettings, now: @escaping @Sendable () -> UInt64 = { DispatchTime.now().uptimeNanoseconds }) {
        self.settings = settings
        keys = Locked(settings.keys)
        clients = settings.rate.map { RateLimiter($0, now: now) }
        keyBuckets = settings.keys == nil ? nil : RateLimiter(settings.rate ?? RateLimit(perSecond: 1, burst: 1), now: now)
    }

    /// The keys in force from now (the keys file read again on SIGHUP: a key added, or one
    /// removed because it leaked). A server started without keys stays open.
    package func replaceKeys(_ new: APIKeys) throws(QueryError) {
        guard keys.current != nil else {
            throw QueryError(code: .invalidRequest, message: "the server was started without --keys", underlying: nil)
        }
        keys.withLock { $0 = new }
    }

    /// Requests refused for their rate so far, by key and by client address.
    package var rateRefusals: (key: Int, client: Int) { refusals.current }

    /// The client a request counts against: its peer, or with `--trust-proxy` the last address
    /// of `X-Forwarded-For`.
    package func client(of request: IncomingRequest) -> String {
        if settings.trustProxy, let forwarded = request.forwardedFor,
           let last = forwarded.split(separator: ",").last?.trimmingCharacters(in: .whitespaces), !last.isEmpty {
            return last
        }
        return request.client
    }

    /// The key a request sends: `Authorization: Bearer KEY`, else `?api_key=` or OpenCNAM's
    /// `?auth_token=` (what PBX modules can send).
    package static func secret(of request: IncomingRequest) -> String? {
        if let header = request.authorization, let token = bearerToken(header) { return token }
        return request.argument("api_key") ?? request.argument("auth_token")
    }

    /// The token of an `Authorization: Bearer TOKEN` value (the scheme's case ignored, spaces
    /// and tabs around the token dropped), read as bytes: this runs for every request.
    private static func bearerToken(_ header: String) -> String? {
        let bytes = Array(header.utf8)
        let scheme: [UInt8] = [0x62, 0x65, 0x61, 0x72, 0x65, 0x72]   // "bearer"
        guard bytes.count > scheme.count + 1 else { return nil }
        for i in 0..<scheme.count where bytes[i] | 0x20 != scheme[i] { return nil }
        func isBlank(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 }
        guard isBlank(bytes[scheme.count]) else { return nil }
        var start = scheme.count, end = bytes.count
        while start < end && isBlank(bytes[start]) { start += 1 }
        while end > start && isBlank(bytes[end - 1]) { end -= 1 }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }

    /// Whether `request` may use what `needs` names (nil: open to all, as `/healthz`): the key
    /// it names (nil when the server has no keys) or why it is refused. A request with a valid
    /// key draws from its key's bucket, any other from its client address's.
    package func admit(_ request: IncomingRequest, needs: Permissions?) -> Result<APIKey?, AccessRefusal> {
        guard let needs else { return .success(nil) }
        var key: APIKey? = nil
        if let keys = keys.current {
            guard let secret = Self.secret(of: request), !secret.isEmpty else {
                return limitedClient(request) ?? .failure(.unauthorized("an API key is needed: send Authorization: Bearer KEY, or ?api_key=KEY"))
            }
            guard let found = keys.key(secret: secret) else {
                return limitedClient(request) ?? .failure(.unauthorized("this API key is not known here"))
            }
            guard found.may.isSuperset(of: needs) else {
                return .failure(.forbidden("key \(found.name) may not use \(needs.names) (it may use \(found.may.names))"))
            }
            key = found
        }
        if let key, let buckets = keyBuckets, let limit = key.rate ?? settings.rate {
            var hasher = Hasher()
            hasher.combine(0x6B6579 as UInt32)   // "key": apart from addresses
            hasher.combine(key.hash)
            if let wait = buckets.take(UInt64(bitPattern: Int64(hasher.finalize())), limit: limit) {
                refusals.withLock { $0.key += 1 }
                return .failure(.limited(seconds: Self.retryAfter(wait), byKey: true))
            }
            return .success(key)
        }
        if key == nil, let refused = limitedClient(request) { return refused }
        return .success(key)
    }

    private func limitedClient(_ request: IncomingRequest) -> Result<APIKey?, AccessRefusal>? {
        guard let clients else { return nil }
        var hasher = Hasher()
        hasher.combine(client(of: request))
        guard let wait = clients.take(UInt64(bitPattern: Int64(hasher.finalize()))) else { return nil }
        refusals.withLock { $0.client += 1 }
        return .failure(.limited(seconds: Self.retryAfter(wait), byKey: false))
    }

    /// Whole seconds for `Retry-After`, at least 1.
    private static func retryAfter(_ seconds: Double) -> Int { max(1, Int(seconds.rounded(.up))) }

    /// Whether `host` (as `--listen` names it) is reachable from this machine only.
    package static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" || host == "::1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }
}
