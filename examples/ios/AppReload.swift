// The app side of a chunked or incremental load: ask the system to reload an extension, keep
// the cursor the extension left as "pending" only when the system accepted the request, and
// ask again until the load is complete. Call `reload(slot:)` after installing a new generation
// (InstalledStore.install) or when the app starts with an incomplete cursor.
//
// Compiled here? No (CallKit, iOS SDK). Keys and App Group must match CallDirectoryHandler.swift.
import CallKit
import CallerIDDirectory
import Foundation

enum DirectoryReload {
    static let appGroup = "group.com.example.callerid"
    /// The bundle identifiers of the extension targets, slot 0 first.
    static let extensions = ["com.example.callerid.directory0", "com.example.callerid.directory1"]

    static func reload(slot: Int, attempts: Int = 200, done: @escaping @Sendable (Error?) -> Void = { _ in }) {
        guard attempts > 0 else { return done(nil) }
        CXCallDirectoryManager.sharedInstance.reloadExtension(withIdentifier: extensions[slot]) { error in
            guard let defaults = UserDefaults(suiteName: appGroup) else { return done(error) }
            let pendingKey = "callerid.cursor.\(slot).pending"
            let pending = defaults.data(forKey: pendingKey)
            defaults.removeObject(forKey: pendingKey)
            guard error == nil, let pending else { return done(error) }   // failed: the old cursor still holds
            defaults.set(pending, forKey: "callerid.cursor.\(slot)")
            if let cursor = try? LoadCursor(bytes: [UInt8](pending)), !cursor.isComplete {
                reload(slot: slot, attempts: attempts - 1, done: done)  // the next chunk
            } else {
                done(nil)
            }
        }
    }

    static func reloadAll() {
        for slot in extensions.indices { reload(slot: slot) }
    }
}
