// The app side of a chunked or incremental load: ask the system to reload an extension, keep
// the cursor the extension left as "pending" only when the system accepted the request, and
// ask again until the load is complete. Call `reloadChanged(storePath:)` after installing a new
// generation (InstalledStore.install, DirectoryFetcher.fetch) or when the app starts: it reloads
// only the extensions whose slot changed (an unchanged slot keeps its bounds and entries from one
// generation to the next, and its extension has nothing to load).
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

    /// Reloads the extensions whose saved cursor does not hold their slot of the current
    /// generation: the slot plan records since which generation each slot's entries are the
    /// same (SlotPlan.isLoaded(slot:by:)), so this also catches up after missed installs.
    static func reloadChanged(storePath: String) {
        guard let defaults = UserDefaults(suiteName: appGroup),
              let pinned = try? InstalledStore(path: storePath).pin() else { return reloadAll() }
        for slot in extensions.indices {
            let saved = defaults.data(forKey: "callerid.cursor.\(slot)").flatMap { try? LoadCursor(bytes: [UInt8]($0)) }
            if let saved, pinned.plan.slots.indices.contains(slot), pinned.plan.isLoaded(slot: slot, by: saved) { continue }
            reload(slot: slot)
        }
    }
}
