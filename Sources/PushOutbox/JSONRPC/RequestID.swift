/// A request id exactly as the client sent it: integer, string, fractional number or null.
///
/// Numbers keep their source text (`.number`), so `18446744073709551616` and `1.5` come back
/// byte for byte. A request without any `id` member is a notification and has no `RequestID`.
package enum RequestID: Sendable, Hashable {
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
