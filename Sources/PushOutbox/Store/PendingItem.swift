/// The three kinds of pending item, named as on the wire.
package enum ItemKind: UInt8, Sendable, CaseIterable {
  case customEvent, customAttribute, userAttribute

  package var wireName: String {
    switch self {
    case .customEvent: "customEvent"
    case .customAttribute: "customAttribute"
    case .userAttribute: "userAttribute"
    }
  }

  package init?(wireName: String) {
    guard let kind = ItemKind.allCases.first(where: { $0.wireName == wireName }) else { return nil }
    self = kind
  }
}

/// One saved item, held until a flush hands it out and it is removed.
///
/// The payload is kept as ready-made JSON member bytes (`body`, each member preceded by a comma),
/// so a flush, a snapshot and a journal record all write it with one copy and no re-encoding.
package struct PendingItem: Sendable {
  package var seq: UInt64
  package var id: String
  package var kind: ItemKind
  /// Capture time, milliseconds since the Unix epoch (UTC).
  package var savedAt: Int64
  /// How many times a lease handed this item out and then ended without an ack.
  package var deliveryCount: Int32
  /// The user the item belongs to, when the save named one.
  package var user: UserIdentifier?
  /// The attribute key or user field, for items that set one; later saves of it supersede earlier ones.
  package var attribute: String?
  /// `,"user":{…},"name":"…",…`: the item's own members after the common header.
  package var body: [UInt8]
  /// Set while a lease holds the item.
  package var leased = false

  package init(
    seq: UInt64, id: String, kind: ItemKind, savedAt: Int64, deliveryCount: Int32 = 0,
    user: UserIdentifier?, attribute: String?, body: [UInt8]
  ) {
    self.seq = seq
    self.id = id
    self.kind = kind
    self.savedAt = savedAt
    self.deliveryCount = deliveryCount
    self.user = user
    self.attribute = attribute
    self.body = body
  }

  /// Bytes the item accounts for against `--max-pending-bytes`.
  package var byteCount: Int { body.count + id.utf8.count + Self.overhead }

  /// The fixed part of `byteCount`.
  package static let overhead = 64

  /// Writes the item as one JSON object: the header members, then the body.
  package func encodeJSON(into out: inout [UInt8], superseded: Bool = false) {
    var savedAtText = UTCTimeText()
    encodeJSON(into: &out, superseded: superseded, savedAtText: &savedAtText)
  }

  /// `encodeJSON(into:superseded:)`, reusing `savedAtText` when the last item had the same `savedAt`.
  package func encodeJSON(into out: inout [UInt8], superseded: Bool = false, savedAtText: inout UTCTimeText) {
    out.appendASCII("{\"id\":")
    out.appendJSONString(id)
    out.appendASCII(",\"seq\":")
    out.appendUInt(seq)
    out.appendASCII(",\"kind\":\"")
    out.appendUTF8(kind.wireName)
    out.appendASCII("\",\"savedAt\":\"")
    savedAtText.append(ms: savedAt, to: &out)
    out.appendASCII("\",\"deliveryCount\":")
    out.appendInt(Int64(deliveryCount))
    if superseded { out.appendASCII(",\"superseded\":true") }
    out.append(contentsOf: body)
    out.append(UInt8(ascii: "}"))
  }

  /// The item as a JSON value (for conversions that need to look inside, such as `/users/track`).
  package var json: JSONValue {
    var out: [UInt8] = []
    encodeJSON(into: &out)
    return (try? JSONReader.parse(out, maxDepth: 1000)) ?? .null
  }
}

extension PendingItem {
  /// Names of the header members written before `body`.
  static let headerKeys: Set<String> = ["id", "seq", "kind", "savedAt", "deliveryCount", "superseded"]

  /// Rebuilds an item from the object `encodeJSON` wrote (snapshot lines and journal records).
  package init(decoding value: JSONValue) throws(RPCError) {
    guard case .object(let members) = value,
      case .string(let id)? = members["id"],
      case .int(let seq)? = members["seq"], seq > 0,
      case .string(let kindName)? = members["kind"], let kind = ItemKind(wireName: kindName),
      case .string(let savedText)? = members["savedAt"], let savedAt = ISO8601.parseDateTime(savedText),
      case .int(let deliveries)? = members["deliveryCount"]
    else { throw RPCError.internalError("stored item is malformed") }
    var issues = Issues()
    let user = members["user"].flatMap { UserIdentifier.parse($0, path: "user", issues: &issues) }
    var body: [UInt8] = []
    for member in members where !Self.headerKeys.contains(member.key) {
      body.append(UInt8(ascii: ","))
      body.appendJSONString(member.key)
      body.append(UInt8(ascii: ":"))
      member.value.encodeJSON(into: &body)
    }
    let attribute = (members["key"] ?? members["field"])?.stringValue
    self.init(
      seq: UInt64(seq), id: id, kind: kind, savedAt: savedAt, deliveryCount: Int32(clamping: deliveries),
      user: user, attribute: attribute, body: body)
  }
}
