import OutboxDomain
import OutboxJSON
package import OutboxStore

/// The identity of an item's user for per-user ordering: the bytes of the canonical JSON of its
/// `user` member (compared as bytes, never as Unicode-equivalent text).
///
/// Saves write `user` first, as `user.json` encodes it, so the key is usually read straight from the
/// body's first bytes without parsing; any other layout (an upgraded store) is parsed and re-encoded
/// the same way, so both paths give the same key for the same user.
package enum UserKey {
  private static let prefix = Array(#","user":"#.utf8)

  /// The key of a held row's user: read from its interned `user` member when the record holds one
  /// (the body is not put back together), else from its body.
  static func of(row: Int, in items: HeldItems) -> [UInt8]? {
    if let key = items.withParts(row: row, { leading($0.user) }) { return key }
    return items.withBody(row: row) { of(body: $0) { items.item(row: row) } }
  }

  package static func of(body: UnsafeRawBufferPointer, item: () -> PendingItem) -> [UInt8]? {
    if let fast = leading(body) { return fast }
    guard let user = item().user else { return nil }
    var bytes: [UInt8] = []
    user.json.encodeJSON(into: &bytes)
    return bytes
  }

  /// The `{…}` after a leading `,"user":`, found by matching braces outside strings.
  private static func leading(_ body: UnsafeRawBufferPointer) -> [UInt8]? {
    guard body.count > prefix.count + 1, body.starts(with: prefix), body[prefix.count] == UInt8(ascii: "{") else {
      return nil
    }
    var depth = 0
    var inString = false
    var escaped = false
    for index in prefix.count..<body.count {
      let byte = body[index]
      if inString {
        if escaped {
          escaped = false
        } else if byte == UInt8(ascii: "\\") {
          escaped = true
        } else if byte == UInt8(ascii: "\"") {
          inString = false
        }
        continue
      }
      switch byte {
      case UInt8(ascii: "\""): inString = true
      case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
      case UInt8(ascii: "}"), UInt8(ascii: "]"):
        depth -= 1
        if depth == 0 { return Array(body[prefix.count...index]) }
      default: break
      }
    }
    return nil
  }
}

/// A user's identity as a small number, so the per-row checks of a scan hash an integer.
typealias UserNumber = Int32

/// Hands out one number per distinct user key (by bytes).
struct UserNumbers {
  static let none: UserNumber = -1
  private var numbers: [ByteKey: UserNumber] = [:]
  var count: Int { numbers.count }

  mutating func number(for key: [UInt8]) -> UserNumber {
    if let number = numbers[ByteKey(key)] { return number }
    let number = UserNumber(truncatingIfNeeded: numbers.count)
    numbers[ByteKey(key)] = number
    return number
  }
}
