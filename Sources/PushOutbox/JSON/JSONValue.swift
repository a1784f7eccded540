/// A JSON value as read from the wire: exact, ordered and lossless.
///
/// - Integers that fit `Int64` are `.int`. Every other number token (fractions, exponents,
///   integers beyond `Int64`, `-0`) is `.number` holding its exact source text, so it is
///   written back byte for byte.
/// - Objects keep their members in source order, duplicates included; the request layer
///   decides what a duplicate means.
package enum JSONValue: Sendable, Hashable {
  case null
  case bool(Bool)
  case int(Int64)
  case number(String)
  case string(String)
  case array([JSONValue])
  case object([JSONMember])
}

/// One `"key": value` member of a JSON object.
package struct JSONMember: Sendable, Hashable {
  package var key: String
  package var value: JSONValue

  package init(_ key: String, _ value: JSONValue) {
    self.key = key
    self.value = value
  }
}

extension JSONValue {
  /// Makes a number value from a finite double, written in Swift's shortest round-trip form.
  package static func double(_ d: Double) -> JSONValue {
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
  package var doubleValue: Double? {
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
    return members.first { $0.key == key }?.value
  }

  /// True for number text without a fraction or exponent (an integer too large for Int64).
  package static func isIntegerText(_ text: String) -> Bool {
    !text.utf8.contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }
  }
}

extension Array where Element == JSONMember {
  /// The first member named `key`.
  package subscript(key: String) -> JSONValue? {
    first { $0.key == key }?.value
  }
}
