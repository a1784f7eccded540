/// Appending text, decimal numbers and quoted JSON strings to a byte buffer without allocating: the
/// primitives every writer of replies, records and log lines shares (JSON's writer, `Log`).
extension Array where Element == UInt8 {
  /// Appends ASCII text known at compile time.
  @inlinable @inline(__always)
  public mutating func appendASCII(_ s: StaticString) {
    appendBytes(UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
  }

  /// Appends `bytes`: one capacity check and one copy, where `append(contentsOf:)` of a buffer
  /// pointer spends some 80 instructions more per call (callgrind), a cost the hot save pays about
  /// ten times.
  @inlinable @inline(__always)
  public mutating func appendBytes(_ bytes: UnsafeRawBufferPointer) {
    let count = bytes.count
    guard count > 0, let source = bytes.baseAddress else { return }
    append(addingCapacity: count) { span in
      span.withUnsafeMutableBufferPointer { buffer, initialized in
        UnsafeMutableRawPointer(buffer.baseAddress! + initialized).copyMemory(from: source, byteCount: count)
        initialized += count
      }
    }
  }

  /// `appendBytes` of typed bytes.
  @inlinable @inline(__always)
  public mutating func appendBytes(_ bytes: UnsafeBufferPointer<UInt8>) {
    appendBytes(UnsafeRawBufferPointer(bytes))
  }

  /// Appends the UTF-8 bytes of `s` without escaping.
  @inlinable @inline(__always)
  public mutating func appendUTF8(_ s: String) {
    var s = s
    s.withUTF8 { appendBytes($0) }
  }

  /// Appends a decimal integer without allocating.
  package mutating func appendInt(_ value: Int64) {
    if value < 0 {
      append(UInt8(ascii: "-"))
      appendUInt(value == .min ? UInt64(Int64.max) + 1 : UInt64(-value))
    } else {
      appendUInt(UInt64(value))
    }
  }

  package mutating func appendUInt(_ value: UInt64) {
    ByteCursor.append(to: &self, capacity: 20) { $0.put(decimal: value) }
  }

  /// Appends `s` as a quoted JSON string. Escapes `"`, `\`, control characters and U+2028/U+2029,
  /// so the output never holds a raw line break of any kind.
  package mutating func appendJSONString(_ s: String) {
    var s = s
    s.withUTF8 { appendJSONString(utf8: $0) }
  }

  package mutating func appendJSONString(utf8 bytes: UnsafeBufferPointer<UInt8>) {
    append(UInt8(ascii: "\""))
    var runStart = 0
    var i = 0
    let n = bytes.count
    while i < n {
      let b = bytes[i]
      if b >= 0x20 && b != 0x22 && b != 0x5C && b != 0xE2 {
        i += 1
        continue
      }
      if b == 0xE2, i + 2 < n, bytes[i + 1] == 0x80, bytes[i + 2] == 0xA8 || bytes[i + 2] == 0xA9 {
        append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<i]))
        appendASCII(bytes[i + 2] == 0xA8 ? "\\u2028" : "\\u2029")
        i += 3
        runStart = i
        continue
      }
      if b == 0xE2 {
        i += 1
        continue
      }
      append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<i]))
      appendEscape(b)
      i += 1
      runStart = i
    }
    append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<n]))
    append(UInt8(ascii: "\""))
  }

  private mutating func appendEscape(_ b: UInt8) {
    switch b {
    case 0x22: appendASCII("\\\"")
    case 0x5C: appendASCII("\\\\")
    case 0x0A: appendASCII("\\n")
    case 0x0D: appendASCII("\\r")
    case 0x09: appendASCII("\\t")
    case 0x08: appendASCII("\\b")
    case 0x0C: appendASCII("\\f")
    default:
      let hex: StaticString = "0123456789abcdef"
      appendASCII("\\u00")
      hex.withUTF8Buffer { h in
        append(h[Int(b >> 4)])
        append(h[Int(b & 0xF)])
      }
    }
  }
}
