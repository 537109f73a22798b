import Foundation
import Testing
@testable import CallerID
import CallerIDServe

// `lookup serve --tls-cert --tls-key`: HTTPS with certificates made at test time by openssl,
// asked with curl and Python's ssl; a certificate renewed by SIGHUP while clients connect.

let opensslPath = ["/usr/bin/openssl", "/usr/local/bin/openssl"].first { FileManager.default.isExecutableFile(atPath: $0) }

/// A self-signed certificate for 127.0.0.1 named `name` (its CN), and its key: (cert, key) paths.
func makeCertificate(_ dir: TempDir, _ name: String) throws -> (certificate: String, key: String) {
    let cert = dir.path("\(name).crt"), key = dir.path("\(name).key")
    let run = try runTool(try #require(opensslPath), ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                                                     "-days", "2", "-subj", "/CN=\(name)", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
    #expect(run.status == 0, "\(run.stderr)")
    return (cert, key)
}

@Suite(.enabled(if: opensslPath != nil, "openssl is not installed: no certificate can be made for the HTTPS tests"))
struct ServeTLSTests {
    @Test func httpsAnswersWithTheCertificateAndRefusesOldTLSAndPlainHTTP() throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        let pair = try makeCertificate(dir, "callerid-test")
        let server = try ServeProcess(["--db", db, "--tls-cert", pair.certificate, "--tls-key", pair.key, "--json"])
        #expect(server.startLine.contains("\"tls\":true"))
        let https = "https://127.0.0.1:\(server.port)"
        let found = try #require(try curl(["--cacert", pair.certificate, https + "/v1/lookup/79131234567"]))
        #expect(found.status == 200 && found.body.contains("Pizza Hut"))
        #expect(try #require(try curl(["--cacert", pair.certificate, https + "/v3/phone/79131234567?format=text"])).body == "Pizza Hut")
        // An unknown issuer, TLS 1.1, and plain HTTP on the TLS port get no answer.
        #expect(try curl([https + "/healthz"]) == nil)
        #expect(try curl(["--cacert", pair.certificate, "--tlsv1.0", "--tls-max", "1.1", https + "/healthz"]) == nil)
        #expect(try curl(["http://127.0.0.1:\(server.port)/healthz"]) == nil)
        #expect(try #require(try curl(["--cacert", pair.certificate, "--tlsv1.3", https + "/healthz"])).status == 200)
    }

    @Test func aCertificateAndKeyThatDoNotMatchOrAreNotPEMAreRefused() throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        let a = try makeCertificate(dir, "a"), b = try makeCertificate(dir, "b")
        let mismatched = try lookup(["serve", "--db", db, "--tls-cert", a.certificate, "--tls-key", b.key])
        #expect(mismatched.status == 69 && mismatched.stderr.contains("certificate"), "\(mismatched.stderr)")
        #expect(try lookup(["serve", "--db", db, "--tls-cert", db, "--tls-key", a.key]).status == 65)
        #expect(try lookup(["serve", "--db", db, "--tls-cert", dir.path("missing.crt"), "--tls-key", a.key]).status == 66)
        #expect(try lookup(["serve", "--db", db, "--tls-cert", a.certificate]).status == 64)
    }

    /// Clients open a new TLS connection for every request while the certificate is replaced
    /// and SIGHUP sent, three times: no request fails, and connections made after a reload get
    /// the new certificate. A pair that does not match is refused and the one in use kept.
    @Test func sighupLoadsARenewedCertificateWithoutAFailedRequest() throws {
        let dir = TempDir()
        let db = try serveFixture(dir)
        let names = ["first", "second", "third", "fourth"]
        let pairs = try names.map { try makeCertificate(dir, $0) }
        let bundle = dir.path("bundle.pem")
        try Data(pairs.map { try String(contentsOfFile: $0.certificate, encoding: .utf8) }.joined().utf8).write(to: URL(fileURLWithPath: bundle))
        let cert = dir.path("live.crt"), key = dir.path("live.key")
        @Sendable func install(_ pair: (certificate: String, key: String)) throws {
            // As a renewal tool does: each file replaced whole (written beside, renamed).
            for (from, to) in [(pair.certificate, cert), (pair.key, key)] {
                try? FileManager.default.removeItem(atPath: to + ".new")
                try FileManager.default.copyItem(atPath: from, toPath: to + ".new")
                _ = rename(to + ".new", to)
            }
        }
        try install(pairs[0])
        let server = try ServeProcess(["--db", db, "--tls-cert", cert, "--tls-key", key])
        let client = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/tls_client.py").path
        let pid = server.pid
        let renewals = DispatchQueue(label: "renewals")
        renewals.async {
            for pair in pairs.dropFirst() {
                usleep(700_000)
                try? install(pair)
                kill(pid, SIGHUP)
            }
        }
        let run = try runTool("python3", [client, "\(server.port)", bundle, "3.5"], timeout: 60)
        renewals.sync {}
        let result = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout) \(run.stderr)")
        #expect(result["failed"] as? Int == 0, "\(result)")
        #expect((result["ok"] as? Int ?? 0) > 20, "\(result)")
        #expect(result["subjects"] as? [String] == names, "\(result)")
        #expect(server.stderr.components(separatedBy: "loaded again").count - 1 == 3, "\(server.stderr)")

        // A key that does not match the certificate: refused, the renewed pair stays in use.
        let wrong = try makeCertificate(dir, "wrong")
        try FileManager.default.removeItem(atPath: key)
        try FileManager.default.copyItem(atPath: wrong.key, toPath: key)
        server.send(SIGHUP)
        usleep(500_000)
        #expect(server.stderr.contains("not loaded again"), "\(server.stderr)")
        #expect(try #require(try curl(["--cacert", bundle, "https://127.0.0.1:\(server.port)/healthz"])).status == 200)
    }
}
