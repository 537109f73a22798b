import CallerID
import Foundation

/// Reads an input file (or standard input for `-`) in 1 MiB chunks and hands out UTF-8.
/// A UTF-8 byte-order mark is dropped; UTF-16 (declared, or detected by its byte-order mark
/// when no encoding was given) and single-byte code pages are converted on the way, bytes
/// they do not define becoming 0xFF (invalid UTF-8, so the row is rejected later).
/// Memory stays at one chunk whatever the file size.
struct ByteSource {
    let path: String
    /// Size of the file in bytes (nil for standard input or a pipe).
    let totalBytes: Int64?
    /// Raw bytes read so far (before transcoding).
    private(set) var bytesRead: Int64 = 0
    /// The encoding in effect (declared, or detected from a byte-order mark), for messages.
    private(set) var encoding: TextEncoding
    private let handle: FileHandle
    private var transcoder: UTF16Transcoder? = nil
    private var started = false
    private var finished = false
    private let declared: TextEncoding?
    static let chunkSize = 1 << 20

    /// - Parameter encoding: the declared encoding, or nil for UTF-8 with UTF-16 detected by BOM.
    init(path: String, encoding: TextEncoding?) throws(PipelineError) {
        self.path = path
        self.declared = encoding
        self.encoding = encoding ?? .utf8
        if path == "-" {
            handle = FileHandle.standardInput
            totalBytes = nil
            return
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw PipelineError(.fileNotFound, "\(path): cannot open: No such file or directory")
        }
        guard !isDirectory.boolValue else { throw PipelineError(.io, "\(path): is a directory") }
        guard let h = FileHandle(forReadingAtPath: path) else {
            throw PipelineError(.unreadableInput, "\(path): cannot open: permission denied or unreadable")
        }
        handle = h
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        totalBytes = (attributes?[.size] as? NSNumber)?.int64Value
    }

    func close() {
        if path != "-" { try? handle.close() }
    }

    /// The next chunk as UTF-8 (possibly holding 0xFF markers for undefined input), nil at the end.
    mutating func next() throws(PipelineError) -> [UInt8]? {
        guard !finished else { return nil }
        let data: Data?
        do {
            data = try handle.read(upToCount: ByteSource.chunkSize)
        } catch {
            // Foundation says only "The operation could not be completed": the system's reason is
            // its underlying error.
            let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError
            let why = underlying.map { $0.domain == NSPOSIXErrorDomain ? Platform.errorText(Int32($0.code)) : $0.localizedDescription }
                ?? error.localizedDescription
            // Nothing read yet: the input cannot be read at all (EX_NOINPUT); later, an I/O error.
            throw bytesRead == 0 ? PipelineError(.unreadableInput, "\(path): cannot be read: \(why)")
                                 : PipelineError(.io, "\(path): read failed after \(bytesRead) bytes: \(why)")
        }
        guard let data, !data.isEmpty else {
            finished = true
            if var t = transcoder {
                var tail: [UInt8] = []
                t.finish(into: &tail)
                transcoder = t
                return tail.isEmpty ? nil : tail
            }
            return nil
        }
        bytesRead += Int64(data.count)
        var bytes = [UInt8](data)
        if !started {
            started = true
            bytes = try sniff(bytes)
        }
        if var t = transcoder {
            var out: [UInt8] = []
            out.reserveCapacity(bytes.count * 3 / 2)
            bytes.withUnsafeBytes { t.transcode($0, into: &out) }
            transcoder = t
            return out
        }
        if encoding.isSingleByte {
            var out: [UInt8] = []
            out.reserveCapacity(bytes.count * 2)
            bytes.withUnsafeBytes { encoding.appendUTF8(ofSingleByte: $0, to: &out) }
            return out
        }
        return bytes
    }

    /// Handles a byte-order mark at the start of the input, and refuses input that is not
    /// text in the encoding it is read in (see ``NonTextInput``).
    private mutating func sniff(_ bytes: [UInt8]) throws(PipelineError) -> [UInt8] {
        let d = declared
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]), d == nil || d == .utf8 {
            return Array(bytes.dropFirst(3))
        }
        let le = bytes.starts(with: [0xFF, 0xFE]), be = bytes.starts(with: [0xFE, 0xFF])
        if (le || be) && (d == nil || d == .utf16 || d == .utf16LE || d == .utf16BE) {
            transcoder = UTF16Transcoder(bigEndian: be)
            encoding = be ? .utf16BE : .utf16LE
            let rest = Array(bytes.dropFirst(2))
            try refuseBinary(rest, utf16: true)
            return rest
        }
        if let d, d.isUTF16 {
            transcoder = UTF16Transcoder(bigEndian: d == .utf16BE)
            try refuseBinary(bytes, utf16: true)
            return bytes
        }
        // Not UTF-16: refuse NUL-laden input (UTF-16 without its mark, /dev/zero) at once
        // rather than read it as rows of garbage or as one endless line.
        try refuseBinary(bytes, utf16: false)
        return bytes
    }

    /// Throws when `bytes` (the start of the input) is binary, or UTF-16 while `utf16` is false.
    private func refuseBinary(_ bytes: [UInt8], utf16: Bool) throws(PipelineError) {
        guard let problem = bytes.withUnsafeBytes({ NonTextInput.detect($0) }) else { return }
        if utf16, case .utf16 = problem { return }   // what a UTF-16 file should look like
        throw PipelineError(.invalidInput, "\(path): \(problem.message(declaring: "--encoding"))")
    }
}
