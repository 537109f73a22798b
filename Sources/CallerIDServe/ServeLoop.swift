// `lookup serve`'s life after it listens: the data opened again on SIGHUP, when a followed
// store moves on, and when a file in use changes under it; what it tells on stdout and stderr.
package import CallerID
package import CallerIDQuery

extension ServeAPI {
    /// Runs until SIGTERM or SIGINT: opens the data again on SIGHUP, when a followed store changes
    /// generation (checked 4 times a second), and when a file in use was modified in place or cut
    /// short (checked every second; the file is withdrawn first: its numbers are answered 503, its
    /// mapping not read); flushes the access log. A generation that fails to load is not tried
    /// again until the store moves on or SIGHUP comes; data whose changed file could not be opened
    /// again is tried again when its files change once more (checked every second).
    ///
    /// `onHangUp` runs on each SIGHUP too, after the data (the TLS certificate read again).
    package func serveUntilStopped(_ source: ServedData.Source, _ events: ServeEvents, onHangUp: () -> Void = {}) {
        var ticks = 0
        var failedGeneration: UInt64? = nil
        /// The data's files when opening them again after a change failed.
        var failedFiles: [FileIdentity?]? = nil
        while true {
            let signal = ServerSignals.wait(seconds: 0.25)
            accessLog?.flush()
            ticks += 1
            switch signal {
            case .stop:
                return
            case .reload:
                failedGeneration = nil
                reload(source, why: "SIGHUP", events)
                onHangUp()
            case nil:
                let data = data
                if let now = data.storeGeneration(), now != data.generation, now != failedGeneration {
                    if !reload(source, why: "the store's current generation is now \(now)", events) { failedGeneration = now }
                } else if ticks % 4 == 0 {
                    let failing = status.withLock { $0.problem != nil }
                    if !failing, let path = data.fileModifiedInPlace() {
                        // Not read again, whether or not the data can be opened again.
                        data.packs.withdraw(path, because: "\(path) was modified in place while the server answered from it; the numbers it holds are answered 503 until it is opened again (replace database files with rename, never by writing over them)")
                        failedFiles = reload(source, why: "\(path) was modified in place", events) ? nil : data.fileIdentities()
                    } else if failing, let seen = failedFiles, data.fileIdentities() != seen {
                        failedFiles = reload(source, why: "the files changed again", events) ? nil : data.fileIdentities()
                    }
                }
            }
        }
    }

    /// Opens `source` again and answers from it; on failure keeps the data in use (and says so).
    @discardableResult
    private func reload(_ source: ServedData.Source, why: String, _ events: ServeEvents) -> Bool {
        do throws(QueryError) {
            let fresh = try ServedData(source)
            // Whole data in use is not given up for data with packs missing.
            if !fresh.missing.isEmpty && data.missing.isEmpty {
                throw QueryError(.fileNotFound, "missing: \(fresh.missing.joined(separator: ", "))")
            }
            status.withLock { s in
                s.data = fresh
                s.reloads += 1
                s.problem = nil
            }
            events.reloaded(why: why, data: fresh)
            events.missing(fresh)
            return true
        } catch {
            let old = data
            let modified = old.fileModifiedInPlace()
            status.withLock { s in
                s.failedReloads += 1
                if let modified { s.problem = "\(modified) was modified in place and cannot be opened again: \(error.message)" }
            }
            events.reloadFailed(why: why, error: error.message, keeping: old)
            return false
        }
    }
}

/// What `lookup serve` tells: the start line on stdout (where it listens), events on stderr;
/// as text, or as one JSON object per line with `--json`.
package struct ServeEvents: Sendable {
    package let json: Bool

    package init(json: Bool) { self.json = json }

    package func listening(_ address: String, port: Int, data: ServedData, library: String, settings: HTTPServer.Settings) {
        if json {
            StandardStream.output.write("{\"listening\":\(jsonQuote(address)),\"port\":\(port),\(fields(data)),\"libmicrohttpd\":\(jsonQuote(library)),\"threads\":\(settings.threads),\"max_connections\":\(settings.maxConnections),\"tls\":\(settings.tls != nil)}\n")
        } else {
            StandardStream.output.write("listening on \(address)\n")
            StandardStream.error.write("lookup serve: \(data.summary); libmicrohttpd \(library), \(settings.threads) threads, at most \(settings.maxConnections) connections\n")
        }
    }

    package func reloaded(why: String, data: ServedData) {
        emit("{\"event\":\"reload\",\"reason\":\(jsonQuote(why)),\(fields(data))}", "\(why): now answering from \(data.summary)")
    }

    package func reloadFailed(why: String, error: String, keeping data: ServedData) {
        emit("{\"event\":\"reload-failed\",\"reason\":\(jsonQuote(why)),\"error\":\(jsonQuote(error)),\(fields(data))}",
             "\(why): cannot open the data (\(escapedForDisplay(error))); still answering from \(data.summary)")
    }

    package func stopped(cut: UInt64, after seconds: Double) {
        emit("{\"event\":\"stopped\",\"requests_cut\":\(cut)}",
             "stopped" + (cut > 0 ? " (\(cut) requests still in flight after \(seconds) s were cut)" : ""))
    }

    /// The packs the data lacks, one event each: their numbers fail, the others are answered.
    package func missing(_ data: ServedData) {
        for file in data.missing {
            emit("{\"event\":\"missing\",\"file\":\(jsonQuote(file))}",
                 "\(escapedForDisplay(file)) is missing: a number in its bounds is answered 500, every other number as usual")
        }
    }

    package func note(_ message: String) {
        emit("{\"event\":\"note\",\"message\":\(jsonQuote(message))}", message)
    }

    private func emit(_ object: String, _ text: String) {
        StandardStream.error.write((json ? object : "lookup serve: \(text)") + "\n")
    }

    /// The data's fields of an event: generation (when a store's), files, entries, ranges.
    private func fields(_ data: ServedData) -> String {
        (data.generation.map { "\"generation\":\($0)," } ?? "") + "\"files\":\(data.files.count),\"entries\":\(data.entries),\"ranges\":\(data.ranges)"
    }
}
