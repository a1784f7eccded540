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
  package var supersededSeqs: Set<UInt64> {
    var latest: [String: UInt64] = [:]
    for item in self where item.kind == .userAttribute {
      latest[(item.user?.key ?? "") + "\u{0}" + (item.attribute ?? "")] = item.seq
    }
    var superseded = Set<UInt64>()
    for item in self where item.kind == .userAttribute {
      if latest[(item.user?.key ?? "") + "\u{0}" + (item.attribute ?? "")] != item.seq { superseded.insert(item.seq) }
    }
    return superseded
  }
}
