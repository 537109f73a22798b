// Linux stand-in for os.Logger (message interpolation with privacy), only to type-check the example.
public enum OSLogPrivacy { case `public`, `private` }
public struct OSLogMessage: ExpressibleByStringInterpolation {
    public struct StringInterpolation: StringInterpolationProtocol {
        public init(literalCapacity: Int, interpolationCount: Int) {}
        public mutating func appendLiteral(_ s: String) {}
        public mutating func appendInterpolation<T>(_ v: T, privacy: OSLogPrivacy = .private) {}
    }
    public init(stringLiteral: String) {}
    public init(stringInterpolation: StringInterpolation) {}
}
public struct Logger: Sendable {
    public init(subsystem: String, category: String) {}
    public func info(_ message: OSLogMessage) {}
    public func error(_ message: OSLogMessage) {}
}
