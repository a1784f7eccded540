package import OutboxJSON
package import OutboxSupport

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

/// One held item, copied out of the store for a flush or a test (the store itself keeps rows, not these).
///
/// The payload is ready-made JSON member bytes (`body`, each member preceded by a comma), so a flush
/// writes it with one copy and no re-encoding.
package struct PendingItem: Sendable {
  package var seq: UInt64
  package var id: ItemID
  package var kind: ItemKind
  /// Capture time, milliseconds since the Unix epoch (UTC).
  package var savedAt: Int64
  /// How many times a lease handed this item out and then ended without an ack.
  package var deliveryCount: UInt32
  /// The save named a user (the `user` member is in `body`).
  package var hasUser: Bool
  /// `,"user":{…},"name":"…",…`: the item's own members after the common header.
  package var body: [UInt8]
  /// The store knows `body` canonical (`CanonicalJSON`, as a save writes it), so a renderer may
  /// follow its structure without checking it again. False when not known (a body made elsewhere).
  package var canonical = false

  package init(
    seq: UInt64, id: ItemID, kind: ItemKind, savedAt: Int64, deliveryCount: UInt32 = 0, hasUser: Bool, body: [UInt8]
  ) {
    self.seq = seq
    self.id = id
    self.kind = kind
    self.savedAt = savedAt
    self.deliveryCount = deliveryCount
    self.hasUser = hasUser
    self.body = body
  }

  /// Bytes an item accounts for against `--max-pending-bytes`.
  package static func byteCount(body: Int, clientID: Int) -> Int { body + (clientID > 0 ? clientID : 36) + overhead }

  package var byteCount: Int { Self.byteCount(body: body.count, clientID: id.clientLength) }

  /// The fixed part of `byteCount`.
  static let overhead = 64

  /// Writes the item as one JSON object: the header members, then the body.
  package func encodeJSON(into out: inout [UInt8], superseded: Bool = false) {
    var savedAtText = UTCTimeText()
    encodeJSON(into: &out, superseded: superseded, savedAtText: &savedAtText)
  }

  /// `encodeJSON(into:superseded:)`, reusing `savedAtText` when the last item had the same `savedAt`.
  package func encodeJSON(into out: inout [UInt8], superseded: Bool = false, savedAtText: inout UTCTimeText) {
    body.withUnsafeBytes { body in
      PendingItem.encodeJSON(
        seq: seq, id: id, kind: kind, savedAt: savedAt, deliveryCount: deliveryCount, body: body,
        superseded: superseded, savedAtText: &savedAtText, into: &out)
    }
  }

  /// Writes one item object from its parts.
  package static func encodeJSON(
    seq: UInt64, id: ItemID, kind: ItemKind, savedAt: Int64, deliveryCount: UInt32, body: UnsafeRawBufferPointer,
    superseded: Bool, savedAtText: inout UTCTimeText, into out: inout [UInt8]
  ) {
    out.appendASCII("{\"id\":")
    id.appendJSON(to: &out)
    out.appendASCII(",\"seq\":")
    out.appendUInt(seq)
    out.appendASCII(",\"kind\":\"")
    out.appendUTF8(kind.wireName)
    out.appendASCII("\",\"savedAt\":\"")
    savedAtText.append(ms: savedAt, to: &out)
    out.appendASCII("\",\"deliveryCount\":")
    out.appendUInt(UInt64(deliveryCount))
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
