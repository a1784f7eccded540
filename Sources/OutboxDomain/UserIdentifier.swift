package import OutboxJSON
import OutboxSupport

/// The Braze user an item belongs to: exactly one of the five `/users/track` identifiers
/// (`post_user_track.md`: "Every object needs one of `external_id`, `user_alias`, `braze_id`,
/// `email`, or `phone`"; alias per `user_alias_object.md`).
///
/// Values are kept exactly as given (no trimming or case folding), because Braze matches them exactly.
/// Identity is by code points: `==`, hashing and `key` compare UTF-8 bytes, so `"\u00c5"` and
/// `"A\u030a"` are two users, as they are to Braze.
package enum UserIdentifier: Sendable {
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
  package static func parse(_ tape: JSONTape, _ n: Int, path: String, issues: inout Issues) -> UserIdentifier? {
    locate(tape, n, path: path, issues: &issues).map { $0.identifier(tape) }
  }

  /// Where the identifier of a `user` param that passed every rule of `parse` sits: its kind (an
  /// index in `wireKeys`) and its string node, or for an alias the name and label nodes.
  package struct Location {
    let kind: Int
    let value: Int
    var label = 0

    /// The identifier, its strings decoded.
    func identifier(_ tape: JSONTape) -> UserIdentifier {
      switch kind {
      case 0: .externalId(tape.string(value))
      case 1: .brazeId(tape.string(value))
      case 2: .alias(name: tape.string(value), label: tape.string(label))
      case 3: .email(tape.string(value))
      default: .phone(tape.string(value))
      }
    }
  }

  /// `parse` without decoding the strings: the same checks and issues, for a caller that needs only
  /// to know the param is valid (the fast save copies its text).
  package static func locate(_ tape: JSONTape, _ n: Int, path: String, issues: inout Issues) -> Location? {
    guard tape.isObject(n) else {
      issues.error(
        path, "wrong_type",
        "\(path) must be an object with one of \(wireKeys.joined(separator: ", ")), not \(tape.typeName(n))")
      return nil
    }
    let before = issues.errors.count
    var found: (kind: Int, value: Int)? = nil
    var foundCount = 0
    for (k, v) in tape.members(n) {
      if let kind = wireKind(tape, k) {
        found = (kind, v)
        foundCount += 1
      } else {
        let key = tape.string(k)
        issues.error(
          joinPath(path, key), "unknown_key",
          "unknown identifier key \"\(key)\"; use one of \(wireKeys.joined(separator: ", "))")
      }
    }
    guard let found, foundCount == 1 else {
      if foundCount == 0 {
        issues.error(path, "missing", "\(path) needs one of \(wireKeys.joined(separator: ", "))")
      } else {
        let names = tape.members(n).compactMap { m in wireKind(tape, m.key).map { wireKeys[$0] } }
        issues.error(
          path, "ambiguous_identifier", "\(path) must hold exactly one identifier, got \(names.joined(separator: ", "))"
        )
      }
      return nil
    }
    let result = location(
      kind: found.kind, tape, found.value, path: { joinPath(path, wireKeys[found.kind]) }, issues: &issues)
    return issues.errors.count == before ? result : nil
  }

  /// The index in `wireKeys` of key node `k`, compared by code points.
  private static func wireKind(_ tape: JSONTape, _ k: Int) -> Int? {
    if tape.stringEquals(k, "externalId") { return 0 }
    if tape.stringEquals(k, "brazeId") { return 1 }
    if tape.stringEquals(k, "alias") { return 2 }
    if tape.stringEquals(k, "email") { return 3 }
    if tape.stringEquals(k, "phone") { return 4 }
    return nil
  }

  /// `parse` for a value held as a tree (stored items).
  package static func parse(_ value: JSONValue, path: String, issues: inout Issues) -> UserIdentifier? {
    let bytes = value.jsonBytes
    return bytes.withUnsafeBufferPointer { buffer in
      guard let tape = try? JSONTape(buffer, maxDepth: 1000) else { return nil }
      return parse(tape, tape.root, path: path, issues: &issues)
    }
  }

  private static func location(
    kind: Int, _ tape: JSONTape, _ n: Int, path: () -> String, issues: inout Issues
  ) -> Location? {
    if kind == 2 { return alias(tape, n, path: path, issues: &issues) }
    return nonEmptyString(tape, n, path: path, issues: &issues).map { Location(kind: kind, value: $0) }
  }

  private static func alias(_ tape: JSONTape, _ n: Int, path: () -> String, issues: inout Issues) -> Location? {
    guard tape.isObject(n) else {
      issues.error(path(), "wrong_type", "\(path()) must be an object {name, label}, not \(tape.typeName(n))")
      return nil
    }
    var nameNode: Int? = nil
    var labelNode: Int? = nil
    for (k, v) in tape.members(n) {
      if tape.stringEquals(k, "name") {
        nameNode = nameNode ?? v
      } else if tape.stringEquals(k, "label") {
        labelNode = labelNode ?? v
      } else {
        let key = tape.string(k)
        issues.error(joinPath(path(), key), "unknown_key", "unknown alias key \"\(key)\"; use name and label")
      }
    }
    let name = part(tape, nameNode, path: { joinPath(path(), "name") }, issues: &issues)
    let label = part(tape, labelNode, path: { joinPath(path(), "label") }, issues: &issues)
    guard let name, let label else { return nil }
    return Location(kind: 2, value: name, label: label)
  }

  private static func part(_ tape: JSONTape, _ n: Int?, path: () -> String, issues: inout Issues) -> Int? {
    guard let n else {
      issues.error(path(), "missing", "\(path()) is required")
      return nil
    }
    return nonEmptyString(tape, n, path: path, issues: &issues)
  }

  /// Node `n` when it is a non-empty string.
  private static func nonEmptyString(_ tape: JSONTape, _ n: Int, path: () -> String, issues: inout Issues) -> Int? {
    guard tape.isString(n) else {
      issues.error(path(), "wrong_type", "\(path()) must be a string, not \(tape.typeName(n))")
      return nil
    }
    guard tape.text(n).count > 2 else {
      issues.error(path(), "empty", "\(path()) must not be empty")
      return nil
    }
    return n
  }

  /// True when the text of a user object that `parse` accepted is exactly what `appendJSON` writes:
  /// compact, no escapes, and for an alias `name` before `label`.
  package static func isWireForm(_ tape: JSONTape, _ n: Int) -> Bool {
    guard tape.isCanonical(n) else { return false }
    let value = n + 2
    return !tape.isObject(value) || tape.stringEquals(value + 1, "name")
  }

  /// Appends `{"externalId":"u1"}` (the wire form) without building a tree.
  package func appendJSON(to out: inout [UInt8]) {
    switch self {
    case .externalId(let s): out.appendASCII("{\"externalId\":"); out.appendJSONString(s)
    case .brazeId(let s): out.appendASCII("{\"brazeId\":"); out.appendJSONString(s)
    case .alias(let name, let label):
      out.appendASCII("{\"alias\":{\"name\":")
      out.appendJSONString(name)
      out.appendASCII(",\"label\":")
      out.appendJSONString(label)
      out.append(UInt8(ascii: "}"))
    case .email(let s): out.appendASCII("{\"email\":"); out.appendJSONString(s)
    case .phone(let s): out.appendASCII("{\"phone\":"); out.appendJSONString(s)
    }
    out.append(UInt8(ascii: "}"))
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
      [
        JSONMember(
          "user_alias", .object([JSONMember("alias_name", .string(name)), JSONMember("alias_label", .string(label))]))
      ]
    case .email(let s): [JSONMember("email", .string(s))]
    case .phone(let s): [JSONMember("phone", .string(s))]
    }
  }

  /// A grouping key, distinct for distinct identifiers and equal only for identical code points:
  /// a kind letter, then the value with every byte outside printable ASCII (and `%`, `:`) written `%XX`.
  /// Being ASCII, it compares the same under `String ==` (canonical equivalence) as by bytes;
  /// an alias is `a:<name>:<label>`, unambiguous because `:` is escaped inside the parts.
  package var key: String {
    switch self {
    case .externalId(let s): "x:" + Self.escaped(s)
    case .brazeId(let s): "b:" + Self.escaped(s)
    case .alias(let name, let label): "a:" + Self.escaped(name) + ":" + Self.escaped(label)
    case .email(let s): "e:" + Self.escaped(s)
    case .phone(let s): "p:" + Self.escaped(s)
    }
  }

  private static func escaped(_ s: String) -> String {
    func plain(_ b: UInt8) -> Bool { b > 0x20 && b < 0x7F && b != UInt8(ascii: "%") && b != UInt8(ascii: ":") }
    if s.utf8.allSatisfy(plain) { return s }
    let hex = Array("0123456789ABCDEF".utf8)
    var out: [UInt8] = []
    for b in s.utf8 {
      if plain(b) {
        out.append(b)
      } else {
        out.append(contentsOf: [UInt8(ascii: "%"), hex[Int(b >> 4)], hex[Int(b & 0xF)]])
      }
    }
    return String(decoding: out, as: UTF8.self)
  }
}

extension UserIdentifier: Hashable {
  package static func == (a: UserIdentifier, b: UserIdentifier) -> Bool {
    switch (a, b) {
    case (.externalId(let x), .externalId(let y)), (.brazeId(let x), .brazeId(let y)), (.email(let x), .email(let y)),
      (.phone(let x), .phone(let y)):
      sameText(x, y)
    case (.alias(let n1, let l1), .alias(let n2, let l2)): sameText(n1, n2) && sameText(l1, l2)
    default: false
    }
  }

  package func hash(into hasher: inout Hasher) {
    switch self {
    case .externalId(let s): hasher.combine(0); hashText(s, into: &hasher)
    case .brazeId(let s): hasher.combine(1); hashText(s, into: &hasher)
    case .alias(let n, let l): hasher.combine(2); hashText(n, into: &hasher); hashText(l, into: &hasher)
    case .email(let s): hasher.combine(3); hashText(s, into: &hasher)
    case .phone(let s): hasher.combine(4); hashText(s, into: &hasher)
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
