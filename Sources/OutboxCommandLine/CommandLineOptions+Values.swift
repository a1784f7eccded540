import OutboxServer

/// How the option table reads a flag's value: bounded numbers, booleans, one of a list.
extension Configuration {
  /// Upper bounds for numeric flags: every value is bounded where it is parsed, so arithmetic on
  /// limits (a line's buffer, a poll timeout) cannot overflow.
  enum Limits {
    /// One line, item or JSON value: 1 GiB.
    static let bytes = 1 << 30
    static let items = 1 << 40
    static let storeBytes = 1 << 50
  }

  static func int(_ v: String, min: Int, max: Int) throws(UsageError) -> Int {
    guard v.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }), let n = Int(v), n >= min, n <= max
    else { throw UsageError("needs a whole number from \(min) to \(max)") }
    return n
  }

  /// A plain decimal number (digits, at most one `.`): no sign, exponent, hex or inf.
  static func number(_ v: String, min: Double, max: Double) throws(UsageError) -> Double {
    let plain = v.utf8.allSatisfy { ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || $0 == UInt8(ascii: ".") }
    guard plain, v.utf8.count <= 20, let n = Double(v), n >= min, n <= max else {
      throw UsageError("needs a decimal number from \(min) to \(max)")
    }
    return n
  }

  static func bool(_ v: String) throws(UsageError) -> Bool {
    switch v {
    case "true", "1", "yes": return true
    case "false", "0", "no": return false
    default: throw UsageError("takes no value (or true/false in its environment variable)")
    }
  }

  static func choice<T>(_ v: String, _ all: [T], _ name: (T) -> String) throws(UsageError) -> T {
    guard let found = all.first(where: { name($0) == v }) else {
      throw UsageError("must be " + EnglishList.or(all.map(name)))
    }
    return found
  }
}

/// "a, b or c".
enum EnglishList {
  package static func or(_ words: [String]) -> String {
    words.count < 2 ? words.joined() : words.dropLast().joined(separator: ", ") + " or " + words.last!
  }
}
