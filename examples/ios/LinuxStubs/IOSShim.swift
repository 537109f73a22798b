// What the example expects from CallerIDDirectory on iOS that Linux does not build: CallKitSink, autoreleasepool.
import CallKit
import CallerIDDirectory
public final class CallKitSink: CallDirectorySink {
    public let context: CXCallDirectoryExtensionContext
    public init(_ context: CXCallDirectoryExtensionContext) { self.context = context }
    public var isIncremental: Bool { context.isIncremental }
    public func addIdentificationEntry(_ number: Int64, label: String) {}
    public func addBlockingEntry(_ number: Int64) {}
    public func removeIdentificationEntry(_ number: Int64) {}
    public func removeBlockingEntry(_ number: Int64) {}
    public func removeAllIdentificationEntries() {}
    public func removeAllBlockingEntries() {}
}
public func autoreleasepool<T>(invoking body: () throws -> T) rethrows -> T { try body() }
import Foundation
extension FileManager {
    public func containerURL(forSecurityApplicationGroupIdentifier id: String) -> URL? { nil }
}
