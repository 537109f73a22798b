import Foundation
package import CallerID
import CallerIDDirectory

// `lookup verify PATH...`: every database file a path stands for, read whole (checksums,
// structure) and held to what its manifest claims of its numbers.

/// The verification of one database file.
package struct FileVerification {
    package let path: String
    /// Entries and ranges of an intact file, or why it is refused (damaged, unreadable, or
    /// not what its manifest says).
    package let outcome: Outcome

    package enum Outcome {
        case intact(entries: Int, ranges: Int)
        case refused(any CallerIDFailure)
    }
}

package enum Verification {
    /// Verifies what `argument` names: a build directory or store stands for its databases,
    /// anything else is one file (a missing one is reported like a damaged one). Returns
    /// whether the argument was a directory; a directory that cannot be resolved is one
    /// failed result under its own path.
    @discardableResult
    package static func verify(_ argument: String, each: (FileVerification) -> Void) -> Bool {
        var files = [argument]
        var listed: [DirectoryManifest.File?] = [nil]
        var manifestPath = ""
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory), isDirectory.boolValue else {
            each(verify(argument, claims: nil, manifestPath: ""))
            return false
        }
        do {
            let set = try DatabaseSet.resolve(path: argument)
            files = set.files
            listed = set.manifest?.files ?? files.map { _ in nil }
            manifestPath = set.manifestPath ?? argument
        } catch {
            each(FileVerification(path: argument, outcome: .refused(error)))
            return true
        }
        for (path, claims) in zip(files, listed) { each(verify(path, claims: claims, manifestPath: manifestPath)) }
        return true
    }

    private static func verify(_ path: String, claims: DirectoryManifest.File?, manifestPath: String) -> FileVerification {
        do {
            let db = try Database(path: path, verify: true)
            // What the manifest says of the file's numbers, which lookups rely on.
            do throws(DirectoryError) {
                try claims?.checkNumbers(of: db, manifestPath: manifestPath)
            } catch {
                return FileVerification(path: path, outcome: .refused(error))
            }
            return FileVerification(path: path, outcome: .intact(entries: db.count, ranges: db.rangeCount))
        } catch {
            return FileVerification(path: path, outcome: .refused(error))
        }
    }
}
