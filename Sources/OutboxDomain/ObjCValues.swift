import OutboxJSON

/// Objective-C's lenient `boolValue` / `intValue`, which Braze's `ABKPushUtils.m` uses on payload
/// values, so `parsePayload` classifies a push exactly as the SDK would (`"1"`, `1`, `true` and `"YES"`
/// are all true there).
enum ObjC {
  /// `-[NSNumber boolValue]` / `-[NSString boolValue]`; absent, null, arrays and objects are false.
  /// A string is true when, after leading whitespace, an optional sign and leading zeros, it starts
  /// with Y, y, T, t or a digit 1–9.
  static func boolValue(_ value: JSONValue?) -> Bool {
    switch value {
    case .bool(let b)?: return b
    case .int(let i)?: return i != 0
    case .number(let text)?: return (Double(text) ?? 0) != 0
    case .string(let s)?:
      var bytes = s.utf8.drop { $0 == 0x20 || ($0 >= 0x09 && $0 <= 0x0D) }
      if let sign = bytes.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
      guard let first = bytes.first(where: { $0 != UInt8(ascii: "0") }) else { return false }
      return "YyTt123456789".utf8.contains(first)
    default: return false
    }
  }

  /// `-[NSNumber intValue]` / `-[NSString intValue]`: numbers truncate toward zero, a string gives its
  /// leading decimal integer (0 if none), booleans give 0 or 1; anything else is 0.
  static func intValue(_ value: JSONValue?) -> Int64 {
    switch value {
    case .bool(let b)?: return b ? 1 : 0
    case .int(let i)?: return i
    case .number(let text)?:
      guard let d = Double(text), d.isFinite else { return 0 }
      return d >= 9.2e18 ? .max : d <= -9.2e18 ? .min : Int64(d)
    case .string(let s)?:
      var bytes = s.utf8.drop { $0 == 0x20 || ($0 >= 0x09 && $0 <= 0x0D) }
      var negative = false
      if let sign = bytes.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
        negative = sign == UInt8(ascii: "-")
        bytes = bytes.dropFirst()
      }
      var n: Int64 = 0
      for b in bytes {
        guard b >= 0x30, b <= 0x39 else { break }
        let (m, o1) = n.multipliedReportingOverflow(by: 10)
        let (sum, o2) = m.addingReportingOverflow(Int64(b - 0x30))
        if o1 || o2 { return negative ? .min : .max }
        n = sum
      }
      return negative ? -n : n
    default: return 0
    }
  }
}
