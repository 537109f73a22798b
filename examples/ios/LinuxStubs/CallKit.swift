// Linux stand-ins for the CallKit API the example uses (signatures as in the iOS SDK), only to type-check it.
import Foundation
open class CXCallDirectoryProvider: NSObject { open func beginRequest(with context: CXCallDirectoryExtensionContext) {} }
public protocol CXCallDirectoryExtensionContextDelegate: NSObjectProtocol {
    func requestFailed(for extensionContext: CXCallDirectoryExtensionContext, withError error: any Error)
}
open class CXCallDirectoryExtensionContext: NSObject {
    open weak var delegate: (any CXCallDirectoryExtensionContextDelegate)?
    open var isIncremental: Bool { false }
    open func completeRequest(completionHandler: ((Bool) -> Void)? = nil) {}
    open func cancelRequest(withError error: any Error) {}
    open func addIdentificationEntry(withNextSequentialPhoneNumber n: Int64, label: String) {}
    open func addBlockingEntry(withNextSequentialPhoneNumber n: Int64) {}
    open func removeIdentificationEntry(withPhoneNumber n: Int64) {}
    open func removeBlockingEntry(withPhoneNumber n: Int64) {}
    open func removeAllIdentificationEntries() {}
    open func removeAllBlockingEntries() {}
}
open class CXCallDirectoryManager: NSObject {
    nonisolated(unsafe) public static let sharedInstance = CXCallDirectoryManager()
    open func reloadExtension(withIdentifier identifier: String, completionHandler: (@Sendable ((any Error)?) -> Void)? = nil) {}
}
