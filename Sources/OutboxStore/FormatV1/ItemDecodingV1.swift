package import OutboxJSON
import OutboxSupport

extension PendingItem {
  /// Names of the header members format 1 wrote before `body`.
  static let headerKeysV1: Set<String> = ["id", "seq", "kind", "savedAt", "deliveryCount", "superseded"]

  /// Rebuilds an item from the JSON object format 1 wrote (snapshot lines and journal records).
  /// Its id is kept as the client's bytes, so it renders exactly as before.
  package init(decoding value: JSONValue) throws(MalformedItemV1) {
    guard case .object(let members) = value,
      case .string(let id)? = members["id"], !id.isEmpty, id.utf8.count <= 255,
      case .int(let seq)? = members["seq"], seq > 0,
      case .string(let kindName)? = members["kind"], let kind = ItemKind(wireName: kindName),
      case .string(let savedText)? = members["savedAt"], let savedAt = ISO8601.parseDateTime(savedText),
      case .int(let deliveries)? = members["deliveryCount"]
    else { throw MalformedItemV1() }
    var body: [UInt8] = []
    for member in members where !Self.headerKeysV1.contains(member.key) {
      body.append(UInt8(ascii: ","))
      body.appendJSONString(member.key)
      body.append(UInt8(ascii: ":"))
      member.value.encodeJSON(into: &body)
    }
    self.init(
      seq: UInt64(seq), id: ItemID(client: Array(id.utf8)), kind: kind, savedAt: savedAt,
      deliveryCount: UInt32(clamping: deliveries), hasUser: members["user"] != nil, body: body)
  }
}

/// A format-1 item object without the members every item has.
package struct MalformedItemV1: Error {}
