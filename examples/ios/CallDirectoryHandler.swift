// The principal class of a Call Directory extension target (Xcode: File > New > Target >
// Call Directory Extension; set NSExtensionPrincipalClass to $(PRODUCT_MODULE_NAME).CallDirectoryHandler).
//
// It feeds this extension's slot of the store the app installed in the App Group container
// (see README.md): the whole slot on a full request, the continuation or a delta on an
// incremental one, at most `chunkSize` additions and removals per request. It never builds
// or writes a database; it only reads (mmap) what the app installed, so it links the reader
// (CallerID, CallerIDDirectory) and nothing else.
//
// Compiled here? No: this file needs CallKit and an iOS SDK (Xcode on a Mac). What was
// compiled and tested on Linux is the library code it calls; docs/PORTABILITY.md says which.
import CallKit
import CallerIDDirectory
import Foundation
import os

final class CallDirectoryHandler: CXCallDirectoryProvider, CXCallDirectoryExtensionContextDelegate {
    /// Shared with the app: the App Group both targets list under Signing & Capabilities.
    static let appGroup = "group.com.example.callerid"
    /// Which slot of the store's plan this extension feeds (0-based). One extension target per
    /// slot; `lookup install --slots M` / `InstalledStore.install(…)` made the plan with M slots.
    /// Read from the extension's Info.plist (key `CallerIDSlot`, an integer) so the same source
    /// file serves every extension target.
    static var slot: Int { Bundle.main.object(forInfoDictionaryKey: "CallerIDSlot") as? Int ?? 0 }
    /// Additions and removals per request. Each request is one `reloadExtension` from the app;
    /// 50,000 keeps a request well under the time and memory the system allows an extension.
    static let chunkSize = 50_000

    private let log = Logger(subsystem: "com.example.callerid", category: "directory")

    override func beginRequest(with context: CXCallDirectoryExtensionContext) {
        context.delegate = self
        let slot = Self.slot
        guard let defaults = UserDefaults(suiteName: Self.appGroup),
              let container = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: Self.appGroup) else {
            context.cancelRequest(withError: HandlerError.noAppGroup)
            return
        }
        let storePath = container.appendingPathComponent("callerid", isDirectory: true).path
        do {
            try autoreleasepool {
                let store = try InstalledStore(path: storePath)
                let feeder: DirectoryFeeder
                do {
                    feeder = try DirectoryFeeder(try store.pin(), slot: slot)   // one generation for the whole request
                } catch let error as DirectoryError where error.code == .fileNotFound {
                    // Nothing installed yet: an empty, successful request. Anything the system
                    // held is kept on an incremental request, dropped on a full one.
                    defaults.removeObject(forKey: Keys.pending(slot))
                    context.completeRequest()
                    return
                }
                let saved = defaults.data(forKey: Keys.cursor(slot)).flatMap { try? LoadCursor(bytes: [UInt8]($0)) }
                let result = try feeder.serve(CallKitSink(context), cursor: saved, chunk: Self.chunkSize)
                // Pending until the app hears that the request succeeded (AppReload.swift):
                // if the system rejects it, it keeps the previous lists, which the old cursor describes.
                defaults.set(Data(result.cursor.bytes), forKey: Keys.pending(slot))
                log.info("slot \(slot): \(result.mode.description, privacy: .public), \(result.calls) calls, complete: \(result.isComplete)")
            }
            context.completeRequest()
        } catch {
            log.error("slot \(slot): \(String(describing: error), privacy: .public)")
            defaults.removeObject(forKey: Keys.pending(slot))
            context.cancelRequest(withError: error)
        }
    }

    /// The system refused what was sent (a CallKit rule broken, or the extension was stopped):
    /// drop the pending cursor so the next request resumes from the last one that held.
    func requestFailed(for extensionContext: CXCallDirectoryExtensionContext, withError error: any Error) {
        UserDefaults(suiteName: Self.appGroup)?.removeObject(forKey: Keys.pending(Self.slot))
        log.error("slot \(Self.slot): request failed: \(String(describing: error), privacy: .public)")
    }

    enum HandlerError: Error { case noAppGroup }

    /// UserDefaults keys in the App Group suite, shared with the app.
    enum Keys {
        static func cursor(_ slot: Int) -> String { "callerid.cursor.\(slot)" }
        static func pending(_ slot: Int) -> String { "callerid.cursor.\(slot).pending" }
    }
}
