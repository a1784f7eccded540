import OutboxJSON
import OutboxStore
import OutboxSupport

/// One item's `/users/track` object, copied from its stored body bytes without building a tree.
///
/// It accepts only bodies whose members it knows, each once, and whose bytes are canonical
/// (`CanonicalJSON`): what the tree would write is then these same bytes, so the object is
/// byte for byte the one `UsersTrack.object` builds from the parsed body. Anything else is
/// `.unknown`, and the caller builds the tree.
enum TrackObject {
  enum Outcome {
    /// The object was appended.
    case rendered
    /// The item names no user and there is no default user: it is left out.
    case noUser
    /// Not a body this renderer knows: build it from the tree (nothing was appended).
    case unknown
  }

  /// The spans (start, end) of the body's members, by name.
  struct Members {
    var user: Range<Int>?
    var name: Range<Int>?
    var time: Range<Int>?
    var properties: Range<Int>?
    var key: Range<Int>?
    var op: Range<Int>?
    var field: Range<Int>?
    var value: Range<Int>?
  }

  /// Reads `,"name":value,…` into spans: nil for an unknown or repeated member or bytes that are not canonical.
  /// `known`: the store already knows these bytes canonical (`PendingItem.canonical`), so only their
  /// structure is followed (`CanonicalJSON.knownValueEnd`), not checked a second time.
  static func members(_ b: UnsafeRawBufferPointer, known: Bool = false) -> Members? {
    var m = Members()
    var i = 0
    while i < b.count {
      guard b[i] == UInt8(ascii: ","), i + 1 < b.count, b[i + 1] == UInt8(ascii: "\""),
        let keyEnd = known ? CanonicalJSON.knownStringEnd(b, i + 1) : CanonicalJSON.stringEnd(b, i + 1),
        keyEnd < b.count, b[keyEnd] == UInt8(ascii: ":"),
        let end = known ? CanonicalJSON.knownValueEnd(b, keyEnd + 1) : CanonicalJSON.valueEnd(b, keyEnd + 1)
      else { return nil }
      let key = UnsafeRawBufferPointer(rebasing: b[(i + 2)..<(keyEnd - 1)])
      let span = (keyEnd + 1)..<end
      guard set(key, span, &m) else { return nil }
      i = end
    }
    return m
  }

  private static func set(_ key: UnsafeRawBufferPointer, _ span: Range<Int>, _ m: inout Members) -> Bool {
    func put(_ slot: inout Range<Int>?) -> Bool {
      guard slot == nil else { return false }
      slot = span
      return true
    }
    switch key.count {
    case 2 where named(key, "op"): return put(&m.op)
    case 3 where named(key, "key"): return put(&m.key)
    case 4 where named(key, "user"): return put(&m.user)
    case 4 where named(key, "name"): return put(&m.name)
    case 4 where named(key, "time"): return put(&m.time)
    case 5 where named(key, "field"): return put(&m.field)
    case 5 where named(key, "value"): return put(&m.value)
    case 10 where named(key, "properties"): return put(&m.properties)
    default: return false
    }
  }

  /// True when `key` holds exactly `word`'s bytes.
  @inline(__always)
  private static func named(_ key: UnsafeRawBufferPointer, _ word: StaticString) -> Bool {
    key.count == word.utf8CodeUnitCount && memcmp(key.baseAddress!, word.utf8Start, key.count) == 0
  }

  /// Appends the object for an item of `kind` with this body. `defaultUser` is the identifier
  /// members (`"external_id":"u"`) for items that name no user.
  static func append(
    kind: ItemKind, hasUser: Bool, body: UnsafeRawBufferPointer, known: Bool = false, defaultUser: [UInt8]?,
    into out: inout [UInt8]
  ) -> Outcome {
    guard let m = members(body, known: known) else { return .unknown }
    let start = out.count
    out.append(UInt8(ascii: "{"))
    if hasUser, let user = m.user {
      guard appendIdentifier(UnsafeRawBufferPointer(rebasing: body[user]), into: &out) else {
        out.removeSubrange(start...)
        return .unknown
      }
    } else if let defaultUser {
      out.append(contentsOf: defaultUser)
    } else {
      out.removeSubrange(start...)
      return .noUser
    }
    let done: Bool
    switch kind {
    case .customEvent:
      out.appendASCII(",\"name\":")
      append(m.name, body, or: "null", into: &out)
      out.appendASCII(",\"time\":")
      append(m.time, body, or: "null", into: &out)
      // No properties (the store holds `{}` for an event saved without them): no key, as the SDKs send it.
      if let properties = m.properties, !isEmptyObject(body[properties]) {
        out.appendASCII(",\"properties\":")
        out.append(contentsOf: UnsafeRawBufferPointer(rebasing: body[properties]))
      }
      done = true
    case .customAttribute: done = appendCustomAttribute(m, body, into: &out)
    case .userAttribute:
      if let field = m.field, body[field.lowerBound] == UInt8(ascii: "\"") {
        out.append(UInt8(ascii: ","))
        out.append(contentsOf: UnsafeRawBufferPointer(rebasing: body[field]))
        out.append(UInt8(ascii: ":"))
        append(m.value, body, or: "null", into: &out)
        done = true
      } else {
        done = false
      }
    }
    guard done else {
      out.removeSubrange(start...)
      return .unknown
    }
    out.append(UInt8(ascii: "}"))
    return .rendered
  }

  /// `"key":value`, `"key":{"inc":value}` (`add`, `remove` alike) or `"key":null` for `unset`.
  private static func appendCustomAttribute(
    _ m: Members, _ body: UnsafeRawBufferPointer, into out: inout [UInt8]
  )
    -> Bool
  {
    guard let key = m.key, body[key.lowerBound] == UInt8(ascii: "\"") else { return false }
    out.append(UInt8(ascii: ","))
    out.append(contentsOf: UnsafeRawBufferPointer(rebasing: body[key]))
    out.append(UInt8(ascii: ":"))
    let op = m.op.map { UnsafeRawBufferPointer(rebasing: body[$0]) }
    if let op, named(op, #""unset""#) {
      out.appendASCII("null")
      return true
    }
    if let op, named(op, #""inc""#) || named(op, #""add""#) || named(op, #""remove""#) {
      out.append(UInt8(ascii: "{"))
      out.append(contentsOf: op)
      out.append(UInt8(ascii: ":"))
      append(m.value, body, or: "null", into: &out)
      out.append(UInt8(ascii: "}"))
      return true
    }
    append(m.value, body, or: "null", into: &out)
    return true
  }

  private static func append(
    _ span: Range<Int>?, _ body: UnsafeRawBufferPointer, or missing: StaticString, into out: inout [UInt8]
  ) {
    guard let span else { return out.appendASCII(missing) }
    out.append(contentsOf: UnsafeRawBufferPointer(rebasing: body[span]))
  }

  /// The `/users/track` identifier members for a stored `user` in its wire form, as
  /// `UserIdentifier.trackMembers` writes them: `{"externalId":"u"}` → `"external_id":"u"`,
  /// `{"alias":{"name":"n","label":"l"}}` → `"user_alias":{"alias_name":"n","alias_label":"l"}`.
  /// False for any other form (the tree decides what it means).
  static func appendIdentifier(_ user: UnsafeRawBufferPointer, into out: inout [UInt8]) -> Bool {
    if let (wire, track) = plainIdentifier(user) {
      let at = wire.utf8CodeUnitCount
      guard let end = nonEmptyStringEnd(user, at), end + 1 == user.count else { return false }
      out.appendASCII(track)
      out.append(contentsOf: UnsafeRawBufferPointer(rebasing: user[at..<end]))
      return true
    }
    let (alias, label): (StaticString, StaticString) = (#"{"alias":{"name":"#, #","label":"#)
    guard hasPrefix(user, alias), let nameEnd = nonEmptyStringEnd(user, alias.utf8CodeUnitCount),
      hasPrefix(UnsafeRawBufferPointer(rebasing: user[nameEnd...]), label),
      let labelEnd = nonEmptyStringEnd(user, nameEnd + label.utf8CodeUnitCount), labelEnd + 2 == user.count
    else { return false }
    out.appendASCII("\"user_alias\":{\"alias_name\":")
    out.append(contentsOf: UnsafeRawBufferPointer(rebasing: user[alias.utf8CodeUnitCount..<nameEnd]))
    out.appendASCII(",\"alias_label\":")
    out.append(contentsOf: UnsafeRawBufferPointer(rebasing: user[(nameEnd + label.utf8CodeUnitCount)..<labelEnd]))
    out.append(UInt8(ascii: "}"))
    return true
  }

  /// The one-string identifier `user` starts as: the stored wire form's start and the `/users/track`
  /// member's. Told apart by their first letters, then checked whole (no table: this runs once an event).
  private static func plainIdentifier(_ user: UnsafeRawBufferPointer) -> (wire: StaticString, track: StaticString)? {
    guard user.count > 3 else { return nil }
    let form: (wire: StaticString, track: StaticString)
    switch (user[2], user[3]) {
    case (UInt8(ascii: "e"), UInt8(ascii: "x")): form = (#"{"externalId":"#, #""external_id":"#)
    case (UInt8(ascii: "e"), _): form = (#"{"email":"#, #""email":"#)
    case (UInt8(ascii: "b"), _): form = (#"{"brazeId":"#, #""braze_id":"#)
    case (UInt8(ascii: "p"), _): form = (#"{"phone":"#, #""phone":"#)
    default: return nil
    }
    return hasPrefix(user, form.wire) ? form : nil
  }

  static func hasPrefix(_ b: UnsafeRawBufferPointer, _ prefix: StaticString) -> Bool {
    b.count >= prefix.utf8CodeUnitCount && memcmp(b.baseAddress!, prefix.utf8Start, prefix.utf8CodeUnitCount) == 0
  }

  /// The end of a canonical, non-empty string at `at` (a quote).
  private static func nonEmptyStringEnd(_ b: UnsafeRawBufferPointer, _ at: Int) -> Int? {
    guard at < b.count, b[at] == UInt8(ascii: "\""), let end = CanonicalJSON.stringEnd(b, at), end > at + 2 else {
      return nil
    }
    return end
  }
}
