package import OutboxJSON

/// The length of compact JSON text, computed without writing it.
///
/// Mirrors `JSONWriter` byte for byte (its escapes: `\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\f`
/// take 2 bytes, other control bytes and U+2028/U+2029 take 6), so
/// `value.encodedJSONSize == value.jsonBytes.count` always holds.
extension JSONValue {
  /// The byte count of `jsonBytes`, without allocating.
  var encodedJSONSize: Int {
    switch self {
    case .null: 4
    case .bool(let b): b ? 4 : 5
    case .int(let i): JSONSize.digits(i)
    case .number(let text): text.utf8.count
    case .string(let s): JSONSize.string(s)
    case .array(let items):
      items.reduce(max(1, items.count) + 1) { $0 + $1.encodedJSONSize }
    case .object(let members): JSONSize.object(members)
    }
  }
}

/// Size arithmetic for `JSONValue.encodedJSONSize`.
package enum JSONSize {
  /// `{` `}`, commas, and for each member its quoted key, a colon and its value.
  package static func object(_ members: [JSONMember]) -> Int {
    var n = max(1, members.count) + 1
    for m in members { n += string(m.key) + 1 + m.value.encodedJSONSize }
    return n
  }

  /// Decimal digits of `i`, with its minus sign.
  package static func digits(_ i: Int64) -> Int {
    var n = i < 0 ? 2 : 1
    var v = i.magnitude
    while v >= 10 {
      v /= 10
      n += 1
    }
    return n
  }

  /// A quoted, escaped JSON string.
  package static func string(_ s: String) -> Int {
    var n = 2
    var pendingE2 = 0  // position in a possible E2 80 A8/A9 sequence
    for b in s.utf8 {
      n += 1
      if b < 0x20 {
        switch b {
        case 0x0A, 0x0D, 0x09, 0x08, 0x0C: n += 1
        default: n += 5
        }
      } else if b == 0x22 || b == 0x5C {
        n += 1
      }
      switch (pendingE2, b) {
      case (_, 0xE2): pendingE2 = 1
      case (1, 0x80): pendingE2 = 2
      case (2, 0xA8), (2, 0xA9): n += 3; pendingE2 = 0  // 3 raw bytes become 6
      default: pendingE2 = 0
      }
    }
    return n
  }

  /// An upper bound for `string(s)` that costs O(1): every byte escaped as `\u00XX`.
  @inline(__always)
  static func stringBound(_ s: String) -> Int { s.utf8.count * 6 + 2 }
}
