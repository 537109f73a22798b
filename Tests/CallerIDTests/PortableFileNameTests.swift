import Foundation
import Testing
@testable import CallerID
@testable import CallerIDDirectory
@testable import CallerIDPipeline

// File names a set lists in manifest.json: a closed set of characters (A-Z a-z 0-9 . _ -, no
// leading dot), checked where a set enters a store or is published (sign, install, fetch), so
// that no name can drive a terminal or reorder a line; and `lookup build` names region files so.

@Suite struct PortableFileNameTests {
    static let hostileNames = ["a\nb.cid", "pay\u{202E}dic.cid", "x\u{1B}[2J.cid", "Москва.cid", "a b.cid", "a:b.cid"]

    @Test func theClosedSetOfCharacters() {
        for name in ["moscow.cid", "Sankt-Peterburg.cid", "xn--bm3bl3fptb42g9ys.cid", "a_b-2.CID", "-x.cid", "1"] {
            #expect(DirectoryManifest.isPortableFileName(name), "\(name)")
        }
        for name in Self.hostileNames + ["", ".hidden.cid", "a/b.cid", "manifest.json", "CURRENT", String(repeating: "a", count: 256)] {
            #expect(!DirectoryManifest.isPortableFileName(name), "\(name)")
        }
    }

    /// Before: `lookup sign` signed, `lookup install` installed and `lookup info STORE` printed
    /// a name holding a newline or U+202E as it was. Now sign and install refuse it (exit 65)
    /// and the message shows it escaped.
    @Test(arguments: hostileNames)
    func signAndInstallRefuseANameOutsideTheSet(_ name: String) throws {
        let dir = TempDir()
        let set = dir.path("set")
        let region = String(name.dropLast(4))
        try writeSignedSet(set, [SignedRegion(name: region, entries: [Entry(number: 79_131_234_567, label: "A")])], version: "1", key: nil)
        try SigningSecretKey.generate().write(to: dir.path("k"))
        let sign = try lookup(["sign", "--key", dir.path("k"), set])
        #expect(sign.status == 65, "\(sign.stderr)")
        #expect(sign.stderr.contains("not a portable file name"), "\(sign.stderr)")
        #expect(!FileManager.default.fileExists(atPath: set + "/manifest.json.sig"))
        let install = try lookup(["install", "--store", dir.path("store"), set])
        #expect(install.status == 65, "\(install.stderr)")
        #expect(install.stderr.contains("not a portable file name"))
        for out in [sign.stderr, install.stderr] {
            #expect(LabelText.check(out.replacingOccurrences(of: "\n", with: " ")) == nil, "raw in the message: \(out)")
        }
        #expect(!FileManager.default.fileExists(atPath: dir.path("store/CURRENT")))
    }

    /// Before: a signed manifest listing `x\n.cid` fetched, installed and was printed raw. Now
    /// the fetch refuses it before downloading a database (exit 65).
    @Test func fetchRefusesANameOutsideTheSet() throws {
        let fx = try FetchFixture()
        try fx.publish("v1", version: 1)
        #expect(try fx.fetch("v1").status == 0)
        let web = fx.dir.path("web/v2")
        try writeSignedSet(web, [SignedRegion(name: "x\u{202E}\n", entries: [Entry(number: 79_131_234_567, label: "A")])], version: "2",
                           buildTime: "2026-06-02T00:00:00Z", key: nil)
        // Signed with the library's low-level call (`lookup sign` refuses such a name).
        let manifest = try bytesOf(web + "/manifest.json")
        try ManifestSignature.sign(manifest, with: fx.key).fileText.write(toFile: web + "/manifest.json.sig", atomically: true, encoding: .utf8)
        _ = fx.server.takeRequests()
        let r = try fx.fetch("v2")
        #expect(r.status == 65, "\(r.stderr)")
        let message = try #require((try fx.json(r)["error"] as? [String: Any])?["message"] as? String)
        #expect(message.contains("not a portable file name") && message.contains("'x\\u{202E}\\u{A}.cid'"), "\(message)")
        #expect(!fx.server.takeRequests().contains { $0.contains(".cid") }, "no database was downloaded")
        #expect(try fx.current().version == "1")
    }

    /// A store installed before the rule (its manifest written in place here) still reads,
    /// and `lookup info` shows such a name escaped.
    @Test func infoShowsANameOfAnOlderStoreEscaped() throws {
        let dir = TempDir()
        let set = dir.path("set")
        try writeSignedSet(set, [SignedRegion(name: "plain", entries: [Entry(number: 79_131_234_567, label: "A")])], version: "1", key: nil)
        #expect(try lookup(["install", "--store", dir.path("store"), set]).status == 0)
        let generation = try #require(try InstalledStore(path: dir.path("store")).current()).path
        let hostile = "x\u{202E}\n\u{1B}[2J.cid"
        try FileManager.default.moveItem(atPath: generation + "/plain.cid", toPath: generation + "/" + hostile)
        let manifest = try String(contentsOfFile: generation + "/manifest.json", encoding: .utf8)
            .replacingOccurrences(of: "\"plain.cid\"", with: jsonQuote(hostile))
        try manifest.write(toFile: generation + "/manifest.json", atomically: false, encoding: .utf8)
        let info = try lookup(["info", dir.path("store")])
        #expect(info.status == 0, "\(info.stderr)")
        #expect(info.stdout.contains("x\\u{202E}\\u{A}\\u{1B}[2J.cid"), "\(info.stdout)")
        #expect(!info.stdout.contains("\u{202E}") && !info.stdout.contains("\u{1B}"))
        #expect(try lookup(["79131234567", "--db", dir.path("store")]).stdout == "79131234567\tA\tidentify\n")
    }

    /// Before: `lookup install` listed the regions it added by the manifest's `region` field as
    /// it was, so a region called "x\u{202E}\n" reached the terminal raw. Now it is escaped.
    @Test func installShowsRegionNamesEscaped() throws {
        let dir = TempDir()
        let set = dir.path("set")
        try writeSignedSet(set, [SignedRegion(name: "plain", entries: [Entry(number: 79_131_234_567, label: "A")])], version: "1", key: nil)
        let manifest = try String(contentsOfFile: set + "/manifest.json", encoding: .utf8)
            .replacingOccurrences(of: "\"region\" : \"plain\"", with: "\"region\" : " + jsonQuote("x\u{202E}\n\u{1B}[2J"))
        #expect(manifest.contains("\\u202e"), "\(manifest)")
        try manifest.write(toFile: set + "/manifest.json", atomically: false, encoding: .utf8)
        let install = try lookup(["install", "--store", dir.path("store"), set])
        #expect(install.status == 0, "\(install.stderr)")
        #expect(install.stdout.contains("+x\\u{202E}\\u{A}\\u{1B}[2J"), "\(install.stdout)")
        #expect(LabelText.check(install.stdout.replacingOccurrences(of: "\n", with: " ")) == nil)
    }

    // MARK: The names `lookup build` gives region files

    @Test func regionFileNamesArePortableAndReadable() {
        let cases: [(String, String)] = [
            ("Санкт-Петербург", "Sankt-Peterburg"),
            ("Московская область", "Moskovskaya_oblast"),
            ("Ханты-Мансийский автономный округ — Югра", "Khanty-Mansiyskiy_avtonomnyy_okrug_Yugra"),
            ("Île-de-France", "Ile-de-France"),
            ("São Paulo", "Sao_Paulo"),
            ("Straße", "Strasse"),
            ("Київ", "Kiyiv"),                                        // the Russian table: и i, ї yi
            ("서울특별시", "xn--bm3bl3fptb42g9ys"),
            ("東京都", "xn--1lqs71dym3a"),
            (".hidden", "hidden"),
            ("a\u{202E}b\nc", "a_b_c"),
            ("!!!", "region"),
        ]
        for (region, name) in cases {
            #expect(Pipeline.fileName(region) == name, "\(region)")
            #expect(DirectoryManifest.isPortableFileName(Pipeline.fileName(region) + ".cid"))
        }
        // Punycode as RFC 3492 gives it (its sample "Pročprostěnemluvíčesky" and a mixed name).
        #expect(Pipeline.punycode("Pročprostěnemluvíčesky") == "Proprostnemluvesky-uyb24dma41a")
        #expect(Pipeline.punycode("Москва_北京") == "_-2rb4dh3bxav6253m2ki")
    }

    /// Before: a region called Санкт-Петербург became the file `Санкт-Петербург.cid`, which
    /// sign and install must now refuse. The build names it portably, and the set it writes
    /// signs, installs and answers.
    @Test func aBuildSplitByCyrillicRegionsSignsAndInstalls() throws {
        let dir = TempDir()
        let csv = dir.path("in.csv")
        try "number,label,region\n+78121234567,A,Санкт-Петербург\n+74951234567,B,Москва\n+78219876543,C,서울\n"
            .write(toFile: csv, atomically: false, encoding: .utf8)
        let build = try lookup(["build", "-o", dir.path("out/"), csv, "--split-by", "field", "--region-field", "region"])
        #expect(build.status == 0, "\(build.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path("out")).sorted()
        #expect(names == ["Moskva.cid", "Sankt-Peterburg.cid", "manifest.json", "xn--2i4bq6h.cid"], "\(names)")
        let manifest = try DirectoryManifest.read(directory: dir.path("out"))
        #expect(manifest.files.map(\.regionKey).sorted() == ["Москва", "Санкт-Петербург", "서울"])
        try SigningSecretKey.generate().write(to: dir.path("k"))
        #expect(try lookup(["sign", "--key", dir.path("k"), dir.path("out")]).status == 0)
        #expect(try lookup(["install", "--store", dir.path("store"), dir.path("out")]).status == 0)
        #expect(try lookup(["78121234567", "--db", dir.path("store")]).stdout == "78121234567\tA\tidentify\n")
    }
}
