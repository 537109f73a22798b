// The protobuf wire format, as much as the Live Caller ID datasets need: varints and
// length-delimited fields (https://protobuf.dev/programming-guides/encoding/). No code
// generator: the few messages are written by hand in LiveCallerIDExport.swift.

/// Protobuf wire types used here.
enum WireType: UInt8 {
    case varint = 0
    case lengthDelimited = 2
}

/// Appends protobuf binary encoding to a byte array that is reused row after row
/// (`removeAll(keepingCapacity:)`): no allocation per row once it has grown.
struct ProtobufWriter {
    var bytes: [UInt8] = []

    init(capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    mutating func reset() { bytes.removeAll(keepingCapacity: true) }

    /// Bytes a varint takes for `value` (1 … 10).
    @inline(__always)
    static func varintSize(_ value: UInt64) -> Int {
        // 7 payload bits per byte; 0 still takes one byte.
        value == 0 ? 1 : (64 - value.leadingZeroBitCount + 6) / 7
    }

    /// Bytes a length-delimited field takes in total: tag, length, payload (field numbers < 16).
    @inline(__always)
    static func lengthDelimitedSize(_ payload: Int) -> Int {
        1 + varintSize(UInt64(payload)) + payload
    }

    @inline(__always)
    mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    /// A field key: `(field << 3) | wire type`. Field numbers here are all below 16 (one byte).
    @inline(__always)
    mutating func tag(_ field: UInt8, _ wire: WireType) {
        precondition(field > 0 && field < 16, "field numbers here fit one key byte")
        bytes.append(field << 3 | wire.rawValue)
    }

    /// Tag and varint value.
    @inline(__always)
    mutating func varintField(_ field: UInt8, _ value: UInt64) {
        tag(field, .varint)
        varint(value)
    }

    /// Tag and length of a length-delimited field whose payload follows (written by the caller).
    @inline(__always)
    mutating func lengthDelimitedHeader(_ field: UInt8, length: Int) {
        tag(field, .lengthDelimited)
        varint(UInt64(length))
    }

    /// A complete length-delimited field (bytes, string or an already encoded message).
    @inline(__always)
    mutating func bytesField(_ field: UInt8, _ payload: UnsafeRawBufferPointer) {
        lengthDelimitedHeader(field, length: payload.count)
        bytes.append(contentsOf: payload)
    }

    mutating func append(_ payload: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: payload)
    }
}

/// The text-format (`.txtpb`) literal of a string field: double quotes; `"`, `\`, newline,
/// carriage return and tab escaped with a backslash, the other bytes below 0x20 and DEL as
/// three-digit octal escapes (`\001`); every other byte, UTF-8 included, as it is (the text
/// format's string literal rules, https://protobuf.dev/reference/protobuf/textformat-spec/).
func appendTextFormatString(_ bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
    out.append(0x22)
    for b in bytes {
        switch b {
        case 0x22: out.append(0x5C); out.append(0x22)
        case 0x5C: out.append(0x5C); out.append(0x5C)
        case 0x0A: out.append(0x5C); out.append(0x6E)
        case 0x0D: out.append(0x5C); out.append(0x72)
        case 0x09: out.append(0x5C); out.append(0x74)
        case 0..<0x20, 0x7F:
            out.append(0x5C)
            out.append(0x30 + (b >> 6))
            out.append(0x30 + ((b >> 3) & 7))
            out.append(0x30 + (b & 7))
        default:
            out.append(b)
        }
    }
    out.append(0x22)
}
