// The pipeline's one place for C calls: libcallerid-phonenumber.so (the C interface over
// Google's libphonenumber, Sources/CallerIDPhoneNumber), loaded with dlopen on first use.
// Nothing links it, so `lookup NUMBER` starts without libphonenumber, ICU and protobuf
// (2 ms and 20 libraries at every start, measured: BENCHMARKS.md "Start-up").
import CallerID
import CLibraryLoader
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What libphonenumber says about one number (`cidpn_number` of callerid_phonenumber.h).
package struct PhoneNumberInfo: Sendable, Equatable {
    /// libphonenumber's verdict on the length (`ValidationResult`).
    package enum Possibility: Int32, Sendable {
        case possible = 0, localOnly = 1, invalidCountryCode = 2, tooShort = 3, invalidLength = 4, tooLong = 5
    }

    /// E.164 digits as an integer; 0 when the number has more than 15 digits.
    package var e164: UInt64
    package var countryCode: Int
    package var possibility: Possibility
    /// In an allocated range (`IsValidNumber`).
    package var isValid: Bool
    /// `PhoneNumberType`: 0 fixed line, 1 mobile, 2 fixed line or mobile, 3 toll free, 4 premium
    /// rate, 5 shared cost, 6 VoIP, 7 personal, 8 pager, 9 UAN, 10 voicemail, 11 unknown.
    package var type: Int
    package var nationalDigits: Int
    /// ISO 3166 alpha-2, "001" (non-geographic) or "ZZ" (unknown).
    package var region: String
    package var hadExtension: Bool
}

/// libcallerid-phonenumber.so, loaded once per process (``shared``).
package final class PhoneNumberLibrary: Sendable {
    private typealias ParseFunction = @convention(c) (UnsafePointer<CChar>?, Int, UnsafePointer<CChar>?, UnsafeMutableRawPointer?) -> Int32
    private typealias CheckFunction = @convention(c) (Int32, UnsafePointer<CChar>?, UnsafeMutableRawPointer?) -> Void
    private typealias RegionFunction = @convention(c) (UnsafePointer<CChar>?) -> Int32
    private typealias LengthsFunction = @convention(c) (Int32, UnsafeMutablePointer<UInt32>?, UnsafeMutablePointer<UInt32>?) -> Int32
    private typealias VersionFunction = @convention(c) () -> Int32
    private typealias TerritoryCountFunction = @convention(c) () -> Int32
    private typealias TerritoryFunction = @convention(c) (Int32, UnsafeMutableRawPointer?) -> Int32

    /// The ABI this code speaks (`CIDPN_ABI_VERSION`).
    static let abiVersion: Int32 = 2
    /// `sizeof(cidpn_number)` and its field offsets (callerid_phonenumber.h, x86-64 and arm64).
    private static let resultSize = 40

    /// The file name the package builds (`.library(name: "callerid-phonenumber", type: .dynamic)`).
    #if canImport(Darwin)
    package static let fileName = "libcallerid-phonenumber.dylib"
    #else
    package static let fileName = "libcallerid-phonenumber.so"
    #endif

    /// Where the library was loaded from.
    package let path: String
    private let parseFunction: ParseFunction
    private let checkFunction: CheckFunction
    private let regionFunction: RegionFunction
    /// libphonenumber's possible national lengths per calling code, read once at load.
    let possibleLengths: PossibleLengths
    /// libphonenumber's territories and their number patterns, read once at load.
    let territories: Territories
    /// The libphonenumber whose metadata judges numbers and its age, for messages about numbers
    /// the metadata may predate: "libphonenumber.so.8.12 of 2022-11-24" (the file the process
    /// mapped and its date), or "libphonenumber" when that cannot be found.
    package let metadataDescription: String

    /// The process's library, or why it could not be loaded. Looked for, in order: the file
    /// `$CALLERID_PHONENUMBER_LIBRARY` names; beside the running executable; in `../lib` of its
    /// folder (an installed `PREFIX/bin/lookup`); then by name on the loader's search path.
    package static let shared: Result<PhoneNumberLibrary, PipelineError> = load()

    private static func load() -> Result<PhoneNumberLibrary, PipelineError> {
        var candidates: [String] = []
        if let p = getenv("CALLERID_PHONENUMBER_LIBRARY"), p.pointee != 0 { candidates.append(String(cString: p)) }
        if let folder = executableFolder() {
            candidates.append(folder + "/" + fileName)
            candidates.append(folder + "/../lib/" + fileName)
        }
        candidates.append(fileName)
        var lastError = "not found"
        for path in candidates {
            var error = [CChar](repeating: 0, count: 512)
            let opened: UnsafeMutableRawPointer? = path.withCString { name in
                var names: [UnsafePointer<CChar>?] = [name, nil]
                return names.withUnsafeMutableBufferPointer { list in
                    cid_library_open(list.baseAddress, fileName, "libphonenumber8", &error, error.count)
                }
            }
            guard let handle = opened else {
                lastError = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                continue
            }
            do throws(PipelineError) {
                return .success(try PhoneNumberLibrary(handle: handle, path: path))
            } catch {
                cid_library_close(handle)
                return .failure(error)
            }
        }
        return .failure(PipelineError(.fileNotFound,
            "libphonenumber is not available (\(lastError)); "
            + "build the package's callerid-phonenumber product, "
            + "or set CALLERID_PHONENUMBER_LIBRARY"))
    }

    private static func executableFolder() -> String? {
        #if os(Linux)
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        let path = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        #else
        guard let first = CommandLine.arguments.first, first.contains("/") else { return nil }
        let path = first
        #endif
        guard let slash = path.lastIndex(of: "/") else { return nil }
        return String(path[..<slash])
    }

    private init(handle: UnsafeMutableRawPointer, path: String) throws(PipelineError) {
        func symbol<T>(_ name: String, as type: T.Type) throws(PipelineError) -> T {
            guard let p = cid_library_symbol(handle, name) else {
                throw PipelineError(.invalidConfiguration, "\(path): no symbol \(name) (a different library of that name?)")
            }
            return unsafeBitCast(p, to: type)
        }
        let version = try symbol("cidpn_abi_version", as: VersionFunction.self)()
        guard version == PhoneNumberLibrary.abiVersion else {
            throw PipelineError(.invalidConfiguration, "\(path): ABI version \(version), this program needs \(PhoneNumberLibrary.abiVersion) (rebuild the package)")
        }
        self.path = path
        parseFunction = try symbol("cidpn_parse", as: ParseFunction.self)
        checkFunction = try symbol("cidpn_check", as: CheckFunction.self)
        regionFunction = try symbol("cidpn_country_code_for_region", as: RegionFunction.self)
        let lengths = try symbol("cidpn_possible_lengths", as: LengthsFunction.self)
        possibleLengths = PossibleLengths { cc in
            var possible: UInt32 = 0, local: UInt32 = 0
            return lengths(Int32(cc), &possible, &local) == 1 ? (possible, local) : nil
        }
        let possible = possibleLengths
        territories = Territories(try PhoneNumberLibrary.readTerritories(
            count: try symbol("cidpn_territory_count", as: TerritoryCountFunction.self),
            territory: try symbol("cidpn_territory_at", as: TerritoryFunction.self)),
            lengths: { (1..<1000).contains($0) ? possible.possible(cc: $0) : 0 })
        metadataDescription = PhoneNumberLibrary.mappedLibphonenumber() ?? "libphonenumber"
    }

    /// The libphonenumber this process mapped (/proc/self/maps), by the name of its file once
    /// links are followed (`libphonenumber.so.8.12`: the version Debian ships), and the day the
    /// file was written (UTC): the age of the metadata compiled into it.
    private static func mappedLibphonenumber() -> String? {
        #if os(Linux)
        guard let maps = fopen("/proc/self/maps", "r") else { return nil }
        defer { fclose(maps) }
        var line: UnsafeMutablePointer<CChar>? = nil
        var capacity = 0
        defer { free(line) }
        while getline(&line, &capacity, maps) > 0, let line {
            let text = String(cString: line)
            guard let slash = text.firstIndex(of: "/"), text.contains("/libphonenumber.so") else { continue }
            let path = String(text[slash...].prefix { $0 != "\n" })
            guard let resolved = realpath(path, nil) else { continue }
            defer { free(resolved) }
            let file = String(cString: resolved)
            var info = stat()
            guard stat(file, &info) == 0 else { continue }
            var seconds = info.st_mtim.tv_sec
            var day = tm()
            guard gmtime_r(&seconds, &day) != nil else { continue }
            func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
            let name = file.split(separator: "/").last.map(String.init) ?? file
            return "\(name) of \(day.tm_year + 1900)-\(two(day.tm_mon + 1))-\(two(day.tm_mday))"
        }
        #endif
        return nil
    }

    /// `cidpn_territory` for every index: `sizeof(cidpn_territory)` is 24 (id[4], country_code,
    /// national_prefix[8], a pointer to the NUL-terminated pattern, which lives as long as the process).
    private static func readTerritories(count: TerritoryCountFunction,
                                        territory: TerritoryFunction) throws(PipelineError) -> [Territories.Metadata] {
        var list: [Territories.Metadata] = []
        var record = [UInt8](repeating: 0, count: 24)
        for index in 0..<count() {
            let pattern: String? = record.withUnsafeMutableBytes { raw in
                guard territory(index, raw.baseAddress) == 1,
                      let text = raw.loadUnaligned(fromByteOffset: 16, as: UnsafePointer<CChar>?.self) else { return nil }
                return String(cString: text)
            }
            guard let pattern else { continue }
            func text(_ range: Range<Int>) -> String { String(decoding: record[range].prefix { $0 != 0 }, as: UTF8.self) }
            let code = Int(record[4..<8].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            list.append(Territories.Metadata(id: text(0..<4), callingCode: code, nationalPrefix: text(8..<16), pattern: pattern))
        }
        guard !list.isEmpty else {
            throw PipelineError(.invalidConfiguration, "libphonenumber's metadata holds no territory (a broken build of libphonenumber?)")
        }
        return list
    }

    /// Why `parse` found no number (libphonenumber's `ErrorType`).
    package enum ParseFailure: Int32, Error, Sendable {
        case invalidCountryCode = 1, notANumber = 2, tooShortAfterIDD = 3, tooShortNSN = 4, tooLongNSN = 5
    }

    /// Parses a number as people write it, with `region` (ISO alpha-2) as the default country;
    /// nil region: the text must be international.
    package func parse(_ text: String, region: String?) -> Result<PhoneNumberInfo, ParseFailure> {
        var result = [UInt8](repeating: 0, count: PhoneNumberLibrary.resultSize)
        var text = text
        let status: Int32 = text.withUTF8 { utf8 in
            result.withUnsafeMutableBytes { out in
                utf8.withMemoryRebound(to: CChar.self) { chars in
                    if let region {
                        return region.withCString { parseFunction(chars.baseAddress, chars.count, $0, out.baseAddress) }
                    }
                    return parseFunction(chars.baseAddress, chars.count, nil, out.baseAddress)
                }
            }
        }
        guard status == 0 else { return .failure(ParseFailure(rawValue: status) ?? .notANumber) }
        return .success(PhoneNumberLibrary.info(result))
    }

    /// Classifies the E.164 number `countryCode` + `national` (digits 0...9, leading zeros kept).
    package func check(countryCode: Int, national: some Collection<UInt8>) -> PhoneNumberInfo {
        var result = [UInt8](repeating: 0, count: PhoneNumberLibrary.resultSize)
        let text = national.map { CChar(bitPattern: $0 + 0x30) } + [0]
        result.withUnsafeMutableBytes { out in
            text.withUnsafeBufferPointer { checkFunction(Int32(countryCode), $0.baseAddress, out.baseAddress) }
        }
        return PhoneNumberLibrary.info(result)
    }

    /// The calling code of a region (ISO alpha-2), nil when libphonenumber does not know it.
    package func countryCode(region: String) -> Int? {
        let code = region.withCString { regionFunction($0) }
        return code > 0 ? Int(code) : nil
    }

    private static func info(_ r: [UInt8]) -> PhoneNumberInfo {
        func u64(_ o: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(r[o + $1]) << (8 * UInt64($1)) } }
        func i32(_ o: Int) -> Int32 { Int32(bitPattern: (0..<4).reduce(0) { $0 | UInt32(r[o + $1]) << (8 * UInt32($1)) }) }
        let region = String(decoding: r[28..<32].prefix { $0 != 0 }, as: UTF8.self)
        return PhoneNumberInfo(e164: u64(0), countryCode: Int(i32(8)),
                               possibility: PhoneNumberInfo.Possibility(rawValue: i32(12)) ?? .invalidLength,
                               isValid: i32(16) != 0, type: Int(i32(20)), nationalDigits: Int(i32(24)),
                               region: region.isEmpty ? "ZZ" : region, hadExtension: i32(32) != 0)
    }
}
