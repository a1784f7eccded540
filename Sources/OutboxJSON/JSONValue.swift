/// A JSON value as read from the wire: exact, ordered and lossless.
///
/// - Integers that fit `Int64` are `.int`. Every other number token (fractions, exponents,
///   integers beyond `Int64`, `-0`) is `.number` holding its exact source text, so it is
///   written back byte for byte.
/// - Objects keep their members in source order, duplicates included; the request layer
///   decides what a duplicate means.
/// - Equality and hashing compare strings and keys by their code points (UTF-8 bytes), as JSON
///   does, never by Swift's canonical equivalence: `"\u00c5"` and `"A\u030a"` are different values.
package enum JSONValue: Sendable {
  case null
  case bool(Bool)
  case int(Int64)
  case number(String)
  case string(String)
  case array([JSONValue])
  case object([JSONMember])
}

/// One `"key": value` member of a JSON object.
package struct JSONMember: Sendable {
  package var key: String
  package var value: JSONValue

  package init(_ key: String, _ value: JSONValue) {
    self.key = key
    self.value = value
  }
}

extension JSONValue {
  /// Makes a number value from a finite double, written in Swift's shortest round-trip form.
  static func double(_ d: Double) -> JSONValue {
    precondition(d.isFinite, "JSON has no NaN or infinity")
    return .number(String(d))  // "3.0" stays a double, never "3"
  }

  /// The JSON type name used in error messages: null, boolean, integer, number, string, array, object.
  package var typeName: String {
    switch self {
    case .null: "null"
    case .bool: "boolean"
    case .int: "integer"
    case .number(let text): JSONValue.isIntegerText(text) ? "integer" : "number"
    case .string: "string"
    case .array: "array"
    case .object: "object"
    }
  }

  package var stringValue: String? {
    if case .string(let s) = self { return s }
    return nil
  }

  package var boolValue: Bool? {
    if case .bool(let b) = self { return b }
    return nil
  }

  package var intValue: Int64? {
    if case .int(let i) = self { return i }
    return nil
  }

  /// The value as a double, for `.int` and `.number`.
  var doubleValue: Double? {
    switch self {
    case .int(let i): Double(i)
    case .number(let text): Double(text)
    default: nil
    }
  }

  package var arrayValue: [JSONValue]? {
    if case .array(let a) = self { return a }
    return nil
  }

  package var objectValue: [JSONMember]? {
    if case .object(let o) = self { return o }
    return nil
  }

  package var isNull: Bool {
    if case .null = self { return true }
    return false
  }

  /// The first member named `key`, for objects.
  package subscript(key: String) -> JSONValue? {
    guard case .object(let members) = self else { return nil }
    return members[key]
  }

  /// True for number text without a fraction or exponent (an integer too large for Int64).
  package static func isIntegerText(_ text: String) -> Bool {
    !text.utf8.contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }
  }
}

extension Array where Element == JSONMember {
  /// The first member named `key` (compared by code points).
  package subscript(key: String) -> JSONValue? {
    first { sameText($0.key, key) }?.value
  }
}

/// True when `a` and `b` hold the same code points: byte equality of their UTF-8, unlike `==`,
/// which treats canonically equivalent strings (`"\u00c5"`, `"A\u030a"`) as equal.
@inline(__always)
package func sameText(_ a: String, _ b: String) -> Bool {
  a.utf8.count == b.utf8.count && a.utf8.elementsEqual(b.utf8)
}

/// Hashes `s` by its UTF-8 bytes, to match `sameText`.
@inline(__always)
package func hashText(_ s: String, into hasher: inout Hasher) {
  hasher.combine(s.utf8.count)
  for b in s.utf8 { hasher.combine(b) }
}

extension JSONValue: Hashable {
  package static func == (a: JSONValue, b: JSONValue) -> Bool {
    switch (a, b) {
    case (.null, .null): true
    case (.bool(let x), .bool(let y)): x == y
    case (.int(let x), .int(let y)): x == y
    case (.number(let x), .number(let y)): sameText(x, y)
    case (.string(let x), .string(let y)): sameText(x, y)
    case (.array(let x), .array(let y)): x == y
    case (.object(let x), .object(let y)): x == y
    default: false
    }
  }

  package func hash(into hasher: inout Hasher) {
    switch self {
    case .null: hasher.combine(0)
    case .bool(let b): hasher.combine(1); hasher.combine(b)
    case .int(let i): hasher.combine(2); hasher.combine(i)
    case .number(let t): hasher.combine(3); hashText(t, into: &hasher)
    case .string(let s): hasher.combine(4); hashText(s, into: &hasher)
    case .array(let a): hasher.combine(5); hasher.combine(a)
    case .object(let o): hasher.combine(6); hasher.combine(o)
    }
  }
}

extension JSONMember: Hashable {
  package static func == (a: JSONMember, b: JSONMember) -> Bool { sameText(a.key, b.key) && a.value == b.value }

  package func hash(into hasher: inout Hasher) {
    hashText(key, into: &hasher)
    hasher.combine(value)
  }
}
