import OutboxJSON
import OutboxSupport

/// A type a `parsePayload` `require` entry can ask for.
enum PayloadType: String, Sendable, CaseIterable {
  case string, integer, number, boolean, object, array, url, date, datetime
}

/// The typed-value rules behind `parsePayload`'s `require`.
///
/// Dashboard key-value pairs arrive as strings ("custom-defined string key-value pairs",
/// `advanced_settings.md`; the demo's `Int(String)` in domain.md §1.2), so a string whose JSON text
/// is of the asked type satisfies it and comes back typed: `"3"` → `3` for integer, `"2.5"` → `2.5`
/// for number, `"true"` → `true` for boolean, `"{\"a\":1}"` → an object. The text is read with
/// `JSONReader`, so it follows JSON's grammar exactly (`"007"`, `"1."`, `"TRUE"` are not numbers or
/// booleans). `url`, `date` and `datetime` take strings and return them unchanged.
enum PayloadRequire {
  /// The outcome of checking one value against a type.
  enum Outcome: Equatable {
    case ok(JSONValue)
    /// The JSON type cannot hold the asked type (code `wrong_type`).
    case wrongType
    /// A string (or an out-of-range integer) that does not read as the asked type (code `invalid`).
    case invalid(String)
  }

  /// Parses `require`: null or absent means none; otherwise an object `{key: type name}`.
  /// Errors: `wrong_type` at `require` or `require.KEY`, `unknown_type` at `require.KEY`.
  static func specs(_ require: JSONValue?, issues: inout Issues) -> [(key: String, type: PayloadType)] {
    guard let require, !require.isNull else { return [] }
    guard case .object(let members) = require else {
      issues.error("require", "wrong_type", "require must be an object {key: type}, not \(require.typeName)")
      return []
    }
    var specs: [(key: String, type: PayloadType)] = []
    let names = PayloadType.allCases.map(\.rawValue).joined(separator: ", ")
    for m in members {
      let path = joinPath("require", m.key)
      guard case .string(let name) = m.value else {
        issues.error(path, "wrong_type", "a required type must be a string (one of \(names)), not \(m.value.typeName)")
        continue
      }
      guard name.isASCII, let type = PayloadType(rawValue: name) else {
        issues.error(path, "unknown_type", "unknown type \"\(name)\"; use one of \(names)")
        continue
      }
      specs.append((m.key, type))
    }
    return specs
  }

  /// Checks `value` against `type`, coercing dashboard strings.
  static func coerce(_ value: JSONValue, to type: PayloadType) -> Outcome {
    switch (type, value) {
    case (.string, .string): return .ok(value)
    case (.integer, .int), (.number, .int), (.number, .number), (.boolean, .bool), (.object, .object), (.array, .array):
      return .ok(value)
    case (.integer, .number(let text)) where JSONValue.isIntegerText(text):
      return .invalid("\(text) does not fit a 64-bit integer")
    case (.integer, .string(let s)), (.number, .string(let s)), (.boolean, .string(let s)),
      (.object, .string(let s)), (.array, .string(let s)):
      return fromText(s, type: type)
    case (.url, .string(let s)):
      return isURL(s) ? .ok(value) : .invalid("\"\(s)\" is not a URL with a scheme")
    case (.date, .string(let s)):
      return ISO8601.isDate(s) ? .ok(value) : .invalid("\"\(s)\" is not a real YYYY-MM-DD date")
    case (.datetime, .string(let s)):
      return ISO8601.parseDateTime(s) != nil ? .ok(value) : .invalid("\"\(s)\" is not an ISO 8601 date-time")
    default:
      return .wrongType
    }
  }

  /// A string holding the JSON text of a value of `type`.
  private static func fromText(_ s: String, type: PayloadType) -> Outcome {
    let parsed = try? JSONReader.parse(Array(s.utf8))
    switch (type, parsed) {
    case (.integer, .int?), (.number, .int?), (.number, .number?), (.boolean, .bool?), (.object, .object?),
      (.array, .array?):
      return .ok(parsed!)
    case (.integer, .number(let text)?) where JSONValue.isIntegerText(text):
      return .invalid("\"\(s)\" does not fit a 64-bit integer")
    default:
      let what =
        type == .integer
        ? "an integer" : type == .array ? "an array" : type == .object ? "an object" : "a \(type.rawValue)"
      return .invalid("\"\(short(s))\" is not \(what)")
    }
  }

  /// A URL with a scheme (RFC 3986 `ALPHA *(ALPHA / DIGIT / "+" / "-" / ".") ":"`) and something
  /// after it, without whitespace or control characters: `https://x.example/a`, `myapp://item/3`, `mailto:a@b.c`.
  static func isURL(_ s: String) -> Bool {
    let u = s.utf8
    guard let colon = u.firstIndex(of: UInt8(ascii: ":")), colon != u.startIndex,
      u.index(after: colon) != u.endIndex
    else { return false }
    for (n, b) in u[..<colon].enumerated() {
      let letter = (b | 0x20) >= 0x61 && (b | 0x20) <= 0x7A
      let other = (b >= 0x30 && b <= 0x39) || b == 0x2B || b == 0x2D || b == 0x2E
      guard letter || (n > 0 && other) else { return false }
    }
    return !u.contains { $0 <= 0x20 || $0 == 0x7F }
  }

  /// At most 40 characters of `s`, for messages.
  static func short(_ s: String) -> String {
    s.unicodeScalars.count <= 40 ? s : TextLimit.truncate(s, to: 40) + "…"
  }
}
