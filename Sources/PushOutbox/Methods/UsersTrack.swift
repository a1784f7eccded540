/// Turns flushed items into `POST /users/track` request bodies.
///
/// Each item becomes one object carrying exactly one identifier. Attribute objects keep their
/// order, and Braze applies a body's attributes before its events, so applying the bodies in order
/// gives the same profile state as applying the saves in order. Superseded user attributes are not sent.
package enum UsersTrack {
  /// Request bodies `{attributes, events}` with at most `limit` objects per array.
  package static func requests(
    _ items: [PendingItem], superseded: Set<UInt64>, defaultUser: UserIdentifier?, limit: Int
  ) -> [JSONValue] {
    var attributes: [JSONValue] = []
    var events: [JSONValue] = []
    for item in items where !superseded.contains(item.seq) {
      guard let user = item.user ?? defaultUser, case .object(let members) = item.json else { continue }
      switch item.kind {
      case .customEvent:
        events.append(.object(user.trackMembers + event(members)))
      case .customAttribute:
        attributes.append(.object(user.trackMembers + [customAttribute(members)]))
      case .userAttribute:
        let field = members["field"]?.stringValue ?? ""
        attributes.append(.object(user.trackMembers + [JSONMember(field, members["value"] ?? .null)]))
      }
    }
    let bodies = max(chunks(attributes.count, limit), chunks(events.count, limit))
    return (0..<bodies).map { n in
      .object([
        JSONMember("attributes", .array(slice(attributes, n, limit))),
        JSONMember("events", .array(slice(events, n, limit))),
      ])
    }
  }

  private static func event(_ members: [JSONMember]) -> [JSONMember] {
    [
      JSONMember("name", members["name"] ?? .null), JSONMember("time", members["time"] ?? .null),
      JSONMember("properties", members["properties"] ?? .object([])),
    ]
  }

  private static func customAttribute(_ members: [JSONMember]) -> JSONMember {
    let key = members["key"]?.stringValue ?? ""
    let value = members["value"] ?? .null
    switch members["op"]?.stringValue {
    case "inc": return JSONMember(key, .object([JSONMember("inc", value)]))
    case "add": return JSONMember(key, .object([JSONMember("add", value)]))
    case "remove": return JSONMember(key, .object([JSONMember("remove", value)]))
    case "unset": return JSONMember(key, .null)
    default: return JSONMember(key, value)
    }
  }

  private static func chunks(_ count: Int, _ limit: Int) -> Int { (count + limit - 1) / limit }

  private static func slice(_ values: [JSONValue], _ n: Int, _ limit: Int) -> [JSONValue] {
    let start = n * limit
    return start < values.count ? Array(values[start..<min(values.count, start + limit)]) : []
  }
}

extension Array where Element == PendingItem {
  /// Seqs of user-attribute items that a later item in this list sets again for the same user and field.
  /// Keys compare by bytes (code points), never by canonical equivalence.
  package var supersededSeqs: Set<UInt64> {
    var latest: [ByteKey: UInt64] = [:]
    var keys: [UInt64: ByteKey] = [:]
    for item in self where item.kind == .userAttribute {
      let members = item.members
      let key = ByteKey((members["user"].map(UserIdentifier.key) ?? "") + "\u{0}" + (members["field"]?.stringValue ?? ""))
      latest[key] = item.seq
      keys[item.seq] = key
    }
    var superseded = Set<UInt64>()
    for (seq, key) in keys where latest[key] != seq { superseded.insert(seq) }
    return superseded
  }
}

extension PendingItem {
  /// The item's own members (its body), parsed.
  package var members: [JSONMember] {
    var text: [UInt8] = [UInt8(ascii: "{")]
    text.append(contentsOf: body.dropFirst())
    text.append(UInt8(ascii: "}"))
    guard case .object(let members)? = try? JSONReader.parse(text, maxDepth: 1000) else { return [] }
    return members
  }

  /// The user the save named, if any.
  package var user: UserIdentifier? {
    guard hasUser, let value = members["user"] else { return nil }
    var issues = Issues()
    return UserIdentifier.parse(value, path: "user", issues: &issues)
  }
}

extension UserIdentifier {
  /// The identity key of a stored `user` value.
  static func key(_ value: JSONValue) -> String {
    var issues = Issues()
    return UserIdentifier.parse(value, path: "user", issues: &issues)?.key ?? ""
  }
}
