/// The Braze user an item belongs to: exactly one of the five `/users/track` identifiers
/// (`post_user_track.md`: "Every object needs one of `external_id`, `user_alias`, `braze_id`,
/// `email`, or `phone`"; alias per `user_alias_object.md`).
///
/// Values are kept exactly as given (no trimming or case folding), because Braze matches them exactly.
package enum UserIdentifier: Sendable, Hashable {
  case externalId(String)
  case brazeId(String)
  case alias(name: String, label: String)
  case email(String)
  case phone(String)

  /// The wire keys of the `user` param, in the order error messages list them.
  static let wireKeys = ["externalId", "brazeId", "alias", "email", "phone"]

  /// Parses the `user` param: an object with exactly one of `externalId` | `brazeId` |
  /// `alias {name, label}` | `email` | `phone`, each a non-empty string.
  ///
  /// Problems go into `issues` with paths below `path` (`user.alias.name`), codes
  /// `wrong_type`, `unknown_key`, `missing`, `ambiguous_identifier`, `empty`. Returns nil on any problem.
  package static func parse(_ value: JSONValue, path: String, issues: inout Issues) -> UserIdentifier? {
    guard case .object(let members) = value else {
      issues.error(path, "wrong_type", "\(path) must be an object with one of \(wireKeys.joined(separator: ", ")), not \(value.typeName)")
      return nil
    }
    let before = issues.errors.count
    var found: [JSONMember] = []
    for m in members {
      if wireKeys.contains(m.key) {
        found.append(m)
      } else {
        issues.error(joinPath(path, m.key), "unknown_key", "unknown identifier key \"\(m.key)\"; use one of \(wireKeys.joined(separator: ", "))")
      }
    }
    guard found.count == 1 else {
      if found.isEmpty {
        issues.error(path, "missing", "\(path) needs one of \(wireKeys.joined(separator: ", "))")
      } else {
        issues.error(path, "ambiguous_identifier", "\(path) must hold exactly one identifier, got \(found.map(\.key).joined(separator: ", "))")
      }
      return nil
    }
    let m = found[0]
    let result = identifier(key: m.key, value: m.value, path: joinPath(path, m.key), issues: &issues)
    return issues.errors.count == before ? result : nil
  }

  private static func identifier(key: String, value: JSONValue, path: String, issues: inout Issues) -> UserIdentifier? {
    if key == "alias" { return alias(value, path: path, issues: &issues) }
    guard let s = nonEmptyString(value, path: path, issues: &issues) else { return nil }
    switch key {
    case "externalId": return .externalId(s)
    case "brazeId": return .brazeId(s)
    case "email": return .email(s)
    default: return .phone(s)
    }
  }

  private static func alias(_ value: JSONValue, path: String, issues: inout Issues) -> UserIdentifier? {
    guard case .object(let members) = value else {
      issues.error(path, "wrong_type", "\(path) must be an object {name, label}, not \(value.typeName)")
      return nil
    }
    for m in members where m.key != "name" && m.key != "label" {
      issues.error(joinPath(path, m.key), "unknown_key", "unknown alias key \"\(m.key)\"; use name and label")
    }
    var parts: [String] = []
    for key in ["name", "label"] {
      let p = joinPath(path, key)
      guard let v = members[key] else {
        issues.error(p, "missing", "\(p) is required")
        continue
      }
      if let s = nonEmptyString(v, path: p, issues: &issues) { parts.append(s) }
    }
    return parts.count == 2 ? .alias(name: parts[0], label: parts[1]) : nil
  }

  private static func nonEmptyString(_ value: JSONValue, path: String, issues: inout Issues) -> String? {
    guard case .string(let s) = value else {
      issues.error(path, "wrong_type", "\(path) must be a string, not \(value.typeName)")
      return nil
    }
    guard !s.isEmpty else {
      issues.error(path, "empty", "\(path) must not be empty")
      return nil
    }
    return s
  }

  /// The wire form: `{"externalId":"u1"}`, `{"alias":{"name":"n","label":"l"}}`.
  package var json: JSONValue {
    switch self {
    case .externalId(let s): .object([JSONMember("externalId", .string(s))])
    case .brazeId(let s): .object([JSONMember("brazeId", .string(s))])
    case .alias(let name, let label):
      .object([JSONMember("alias", .object([JSONMember("name", .string(name)), JSONMember("label", .string(label))]))])
    case .email(let s): .object([JSONMember("email", .string(s))])
    case .phone(let s): .object([JSONMember("phone", .string(s))])
    }
  }

  /// The `/users/track` members: `external_id` | `braze_id` | `user_alias {alias_name, alias_label}` | `email` | `phone`.
  package var trackMembers: [JSONMember] {
    switch self {
    case .externalId(let s): [JSONMember("external_id", .string(s))]
    case .brazeId(let s): [JSONMember("braze_id", .string(s))]
    case .alias(let name, let label):
      [JSONMember("user_alias", .object([JSONMember("alias_name", .string(name)), JSONMember("alias_label", .string(label))]))]
    case .email(let s): [JSONMember("email", .string(s))]
    case .phone(let s): [JSONMember("phone", .string(s))]
    }
  }

  /// A canonical grouping key, distinct for distinct identifiers: a kind letter, then the value;
  /// an alias is `a:<UTF-8 length of name>:<name><label>`, so no choice of name and label collides.
  package var key: String {
    switch self {
    case .externalId(let s): "x:" + s
    case .brazeId(let s): "b:" + s
    case .alias(let name, let label): "a:" + String(name.utf8.count) + ":" + name + label
    case .email(let s): "e:" + s
    case .phone(let s): "p:" + s
    }
  }
}

extension UserIdentifier {
  /// True when setting `field` would repeat this identifier's `/users/track` member
  /// (`email` for an email-identified user, `phone` for a phone-identified one).
  package func conflicts(with field: UserField) -> Bool {
    switch (self, field) {
    case (.email, .email), (.phone, .phone): true
    default: false
    }
  }
}
