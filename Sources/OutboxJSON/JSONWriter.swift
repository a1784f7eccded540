import OutboxSupport

/// Something that writes itself as compact, single-line JSON into a byte buffer.
package protocol JSONEncodable {
  func encodeJSON(into out: inout [UInt8])
}

extension JSONValue: JSONEncodable {
  package func encodeJSON(into out: inout [UInt8]) {
    switch self {
    case .null: out.appendASCII("null")
    case .bool(let b): out.appendASCII(b ? "true" : "false")
    case .int(let i): out.appendInt(i)
    case .number(let text): out.appendUTF8(text)
    case .string(let s): out.appendJSONString(s)
    case .array(let items):
      out.append(UInt8(ascii: "["))
      for (n, item) in items.enumerated() {
        if n > 0 { out.append(UInt8(ascii: ",")) }
        item.encodeJSON(into: &out)
      }
      out.append(UInt8(ascii: "]"))
    case .object(let members):
      members.encodeJSONObject(into: &out)
    }
  }

  /// The compact JSON text of this value.
  package var jsonBytes: [UInt8] {
    var out: [UInt8] = []
    encodeJSON(into: &out)
    return out
  }

  package var jsonText: String { String(decoding: jsonBytes, as: UTF8.self) }
}

extension Array: JSONEncodable where Element == JSONMember {
  package func encodeJSON(into out: inout [UInt8]) { encodeJSONObject(into: &out) }

  package func encodeJSONObject(into out: inout [UInt8]) {
    out.append(UInt8(ascii: "{"))
    for (n, member) in enumerated() {
      if n > 0 { out.append(UInt8(ascii: ",")) }
      out.appendJSONString(member.key)
      out.append(UInt8(ascii: ":"))
      member.value.encodeJSON(into: &out)
    }
    out.append(UInt8(ascii: "}"))
  }
}
