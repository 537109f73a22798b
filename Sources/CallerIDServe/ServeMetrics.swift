// `GET /metrics` of `lookup serve`: the Prometheus text format (version 0.0.4).

package import CallerID
package import CallerIDQuery

/// The statuses the API answers with, and those the HTTP layer sends for malformed requests.
private let countedStatuses = [200, 400, 401, 403, 404, 405, 408, 413, 414, 417, 429, 431, 500, 501, 503, 505]

/// The metrics page: requests by endpoint and status, the latency histogram, connections, and
/// the data in use (generation, files, entries, reloads).
package func metricsText(_ counters: HTTPCounters, _ status: ServeStatus, buckets: [Double], refusals: (key: Int, client: Int) = (0, 0),
                         reportsWritten: Int? = nil) -> String {
    var t = ""
    t += "# HELP callerid_http_requests_total Requests answered, by endpoint and HTTP status.\n"
    t += "# TYPE callerid_http_requests_total counter\n"
    for endpoint in Endpoint.allCases {
        for code in countedStatuses {
            let n = counters.requests(endpoint: endpoint.rawValue, status: code)
            // The API's usual answers always appear (at 0 too), so that rates start from a sample.
            guard n > 0 || (endpoint != .http && endpoint != .other && code == 200) else { continue }
            t += "callerid_http_requests_total{endpoint=\"\(endpoint.label)\",code=\"\(code)\"} \(n)\n"
        }
    }
    t += "# HELP callerid_rate_limited_total Requests refused (429) for their rate, by what the rate counts: a key or a client address.\n"
    t += "# TYPE callerid_rate_limited_total counter\n"
    t += "callerid_rate_limited_total{by=\"key\"} \(refusals.key)\n"
    t += "callerid_rate_limited_total{by=\"client\"} \(refusals.client)\n"
    if let reportsWritten {
        t += "# HELP callerid_reports_written_total Reports taken by POST /v1/reports and fsync'd to the report log.\n"
        t += "# TYPE callerid_reports_written_total counter\n"
        t += "callerid_reports_written_total \(reportsWritten)\n"
    }
    let g = counters.gauges
    t += "# HELP callerid_http_request_duration_seconds Time from a request's first line to the end of its answer.\n"
    t += "# TYPE callerid_http_request_duration_seconds histogram\n"
    var cumulative: UInt64 = 0
    for (i, bound) in buckets.enumerated() {
        cumulative += counters.bucket(i)
        t += "callerid_http_request_duration_seconds_bucket{le=\"\(bound)\"} \(cumulative)\n"
    }
    cumulative += counters.bucket(buckets.count)
    t += "callerid_http_request_duration_seconds_bucket{le=\"+Inf\"} \(cumulative)\n"
    t += "callerid_http_request_duration_seconds_sum \(Double(g.latencyNanoseconds) / 1e9)\n"
    t += "callerid_http_request_duration_seconds_count \(g.latencyCount)\n"
    t += "# HELP callerid_http_requests_in_flight Requests being received or answered.\n"
    t += "# TYPE callerid_http_requests_in_flight gauge\n"
    t += "callerid_http_requests_in_flight \(g.inFlight)\n"
    t += "# HELP callerid_http_connections Open connections.\n"
    t += "# TYPE callerid_http_connections gauge\n"
    t += "callerid_http_connections \(g.connectionsOpen)\n"
    t += "# HELP callerid_http_connections_accepted_total Connections accepted.\n"
    t += "# TYPE callerid_http_connections_accepted_total counter\n"
    t += "callerid_http_connections_accepted_total \(g.connectionsAccepted)\n"
    t += "# HELP callerid_http_connections_timed_out_total Connections closed because a request did not arrive whole in time (or the connection stayed idle).\n"
    t += "# TYPE callerid_http_connections_timed_out_total counter\n"
    t += "callerid_http_connections_timed_out_total \(g.timedOut)\n"
    let data = status.data
    t += "# HELP callerid_generation The store generation answered from (0: database files or build directories).\n"
    t += "# TYPE callerid_generation gauge\n"
    t += "callerid_generation \(data.generation ?? 0)\n"
    t += "# HELP callerid_database_files Database files answered from.\n"
    t += "# TYPE callerid_database_files gauge\n"
    t += "callerid_database_files \(data.files.count)\n"
    t += "# HELP callerid_database_files_missing Database files the data lists that are missing on disk (left out).\n"
    t += "# TYPE callerid_database_files_missing gauge\n"
    t += "callerid_database_files_missing \(data.missing.count)\n"
    t += "# HELP callerid_entries Entries in the databases answered from.\n"
    t += "# TYPE callerid_entries gauge\n"
    t += "callerid_entries \(data.entries)\n"
    t += "# HELP callerid_ranges Ranges in the databases answered from.\n"
    t += "# TYPE callerid_ranges gauge\n"
    t += "callerid_ranges \(data.ranges)\n"
    t += "# HELP callerid_reloads_total Loads of new data, by result (a failed one keeps the data in use).\n"
    t += "# TYPE callerid_reloads_total counter\n"
    t += "callerid_reloads_total{result=\"ok\"} \(status.reloads)\n"
    t += "callerid_reloads_total{result=\"failed\"} \(status.failedReloads)\n"
    t += "# HELP callerid_national_number_hints_total Not-found answers for numbers given without a country that look like national numbers (their \"hint\" says to give ?country=).\n"
    t += "# TYPE callerid_national_number_hints_total counter\n"
    t += "callerid_national_number_hints_total \(status.nationalNumberHints)\n"
    t += "# HELP callerid_data_ok 1 while the data in use can be trusted, 0 once a file was modified in place or cut short and until it is opened again.\n"
    t += "# TYPE callerid_data_ok gauge\n"
    t += "callerid_data_ok \(status.problem == nil && status.data.withdrawn == nil ? 1 : 0)\n"
    t += "# HELP callerid_mapping_faults_total Reads of a mapped database file that faulted past the end of the file, cut short under the server (they read zeros; the file's answers were discarded).\n"
    t += "# TYPE callerid_mapping_faults_total counter\n"
    t += "callerid_mapping_faults_total \(MappingGuard.faults)\n"
    return t
}
