package import OutboxJSON
import OutboxSupport

/// A request id exactly as the client sent it: integer, string, fractional number or null.
///
/// Numbers keep their source text (`.number`), so `18446744073709551616` and `1.5` come back
/// byte for byte. A request without any `id` member is a notification and has no `RequestID`.
/// Equality compares strings by code points, not by canonical equivalence.
package enum RequestID: Sendable {
  case int(Int64)
  case number(String)
  case string(String)
  case null

  /// The id for a JSON value, or nil when the type is not allowed (boolean, array, object).
  package init?(_ value: JSONValue) {
    switch value {
    case .int(let i): self = .int(i)
    case .number(let text): self = .number(text)
    case .string(let s): self = .string(s)
    case .null: self = .null
    case .bool, .array, .object: return nil
    }
  }

  /// The id at node `n`, or nil when the type is not allowed.
  package init?(_ tape: JSONTape, _ n: Int) {
    switch tape.lead(n) {
    case UInt8(ascii: "\""): self = .string(tape.string(n))
    case UInt8(ascii: "n"): self = .null
    case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
      if let i = tape.int64(n) { self = .int(i) } else { self = .number(String(decoding: tape.text(n), as: UTF8.self)) }
    default: return nil
    }
  }
}

extension RequestID: Hashable {
  package static func == (a: RequestID, b: RequestID) -> Bool {
    switch (a, b) {
    case (.int(let x), .int(let y)): x == y
    case (.number(let x), .number(let y)), (.string(let x), .string(let y)): sameText(x, y)
    case (.null, .null): true
    default: false
    }
  }

  package func hash(into hasher: inout Hasher) {
    switch self {
    case .int(let i): hasher.combine(0); hasher.combine(i)
    case .number(let t): hasher.combine(1); hashText(t, into: &hasher)
    case .string(let s): hasher.combine(2); hashText(s, into: &hasher)
    case .null: hasher.combine(3)
    }
  }
}

extension RequestID: JSONEncodable {
  package func encodeJSON(into out: inout [UInt8]) {
    switch self {
    case .int(let i): out.appendInt(i)
    case .number(let text): out.appendUTF8(text)
    case .string(let s): out.appendJSONString(s)
    case .null: out.appendASCII("null")
    }
  }
}
